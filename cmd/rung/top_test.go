package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/client"
)

func TestIEC(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int64
		want string
	}{{-1, "-"}, {0, "0B"}, {1023, "1023B"}, {1536, "1.5KiB"}, {3 << 20, "3.0MiB"}, {5 << 30, "5.0GiB"}, {2 << 40, "2.0TiB"}}
	for _, tc := range tests {
		if got := iec(tc.n); got != tc.want {
			t.Errorf("iec(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestWriteTop: rows sorted busiest first by the chosen column, cut at
// rows.
func TestWriteTop(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	u := client.UsageList{IntervalMS: 5000, Sandboxes: []client.SandboxUsage{
		{Sandbox: "sbx_a", Name: "idle", Usage: client.UsageSample{Time: now, CPUPercent: 0.5, MemoryBytes: 900 << 20, DiskBytes: 1 << 30}},
		{Sandbox: "sbx_b", Usage: client.UsageSample{Time: now, CPUPercent: 150, CPUSeconds: 12.3456, MemoryBytes: 10 << 20, DiskBytes: -1}},
		{Sandbox: "sbx_c", Name: "mid", Usage: client.UsageSample{Time: now, CPUPercent: 20, MemoryBytes: 100 << 20, DiskBytes: 2 << 30}},
	}}
	tests := []struct {
		sort  string
		rows  int
		order []string
	}{
		{"cpu", 0, []string{"sbx_b", "sbx_c", "sbx_a"}},
		{"memory", 0, []string{"sbx_a", "sbx_c", "sbx_b"}},
		{"disk", 2, []string{"sbx_c", "sbx_a"}},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		writeTop(&buf, u, tc.sort, tc.rows, now)
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if !strings.Contains(lines[0], "3 sandboxes") || !strings.Contains(lines[0], "every 5s") || !strings.HasPrefix(lines[2], "SANDBOX") {
			t.Fatalf("top --sort %s: header\n%s", tc.sort, buf.String())
		}
		var got []string
		for _, l := range lines[3:] {
			got = append(got, strings.Fields(l)[0])
		}
		if strings.Join(got, " ") != strings.Join(tc.order, " ") {
			t.Errorf("top --sort %s -n %d: rows %v, want %v\n%s", tc.sort, tc.rows, got, tc.order, buf.String())
		}
	}
	var buf bytes.Buffer
	writeTop(&buf, u, "cpu", 1, now)
	if row := strings.Fields(strings.Split(buf.String(), "\n")[3]); strings.Join(row[:7], " ") != "sbx_b - 150.0 12.35s 10.0MiB 0B -" {
		t.Errorf("row = %q", row)
	}
}
