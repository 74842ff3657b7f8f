package main

import "testing"

func TestParseMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"off", 0, true}, {"0", 0, true}, {"8G", 8 << 30, true}, {"8GiB", 8 << 30, true}, {"512M", 512 << 20, true},
		{"512MiB", 512 << 20, true}, {"1073741824", 1 << 30, true}, {"2t", 2 << 40, true},
		{"", 0, false}, {"x", 0, false}, {"-1G", 0, false}, {"1M", 0, false}, {"9999999999T", 0, false}, {"1.5G", 0, false},
	} {
		got, err := parseMemoryLimit(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseMemoryLimit(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// The default is a share of what this machine (or cgroup) has: positive
// and below the host's memory here.
func TestDefaultMemoryLimit(t *testing.T) {
	host := hostMemory()
	if host == 0 {
		t.Skip("no /proc/meminfo")
	}
	if got := defaultMemoryLimit(); got <= 0 || got > host {
		t.Errorf("defaultMemoryLimit() = %d, want in (0, %d]", got, host)
	}
}
