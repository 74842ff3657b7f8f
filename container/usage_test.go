package container

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/internal/testenv"
)

func TestParseCounter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0\n", 0, true},
		{"123456789\n", 123456789, true},
		{"42", 42, true},
		{"", 0, false},
		{"\n", 0, false},
		{"-1\n", 0, false},
		{"12 34\n", 0, false},
		{"1234567890123456789\n", 0, false}, // 19 digits: refused rather than risk overflow
	}
	for _, tc := range tests {
		if got, ok := parseCounter([]byte(tc.in)); got != tc.want || ok != tc.ok {
			t.Errorf("parseCounter(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestUsageReader reads the cgroups of a process that ran a busy loop in
// them: CPU time and peak memory are counted, and a sandbox without
// cgroups is an error.
func TestUsageReader(t *testing.T) {
	testenv.Require(t, "root", "sh")
	if _, err := os.Stat(filepath.Join(cgroupFS, "cpuacct")); err != nil {
		t.Skip("no cgroup v1 cpuacct hierarchy")
	}
	parent := fmt.Sprintf("rung-usage-test-%d", os.Getpid())
	id := rung.NewSandboxID()
	var dirs []string
	for _, h := range []string{"cpuacct", "memory"} {
		dir := filepath.Join(cgroupFS, h, parent, string(id))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir, filepath.Dir(dir))
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			os.Remove(d)
		}
	})
	r := NewUsageReader(parent)
	before, err := r.Read(id)
	if err != nil {
		t.Fatal(err)
	}
	if before.CPU != 0 || before.MemoryPeakBytes != 0 {
		t.Errorf("empty cgroup's usage = %+v, want zero", before)
	}
	// The child waits on stdin until it is in the cgroups, then spins.
	cmd := exec.Command("sh", "-c", "read x; i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dirs[0], dirs[2]} {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal(err)
		}
	}
	stdin.Write([]byte("go\n"))
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	got, err := r.Read(id)
	if err != nil {
		t.Fatal(err)
	}
	if got.CPU <= 0 || got.MemoryPeakBytes <= 0 || got.MemoryBytes > got.MemoryPeakBytes {
		t.Errorf("usage after a busy loop = %+v, want CPU and a peak, current <= peak", got)
	}
	if _, err := r.Read(rung.NewSandboxID()); err == nil {
		t.Error("Read of a sandbox without cgroups succeeded")
	}
}
