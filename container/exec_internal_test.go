package container

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"rung.dev/rung/agent"
)

// ProcessExit keeps at most maxKilledVerdicts verdicts, dropping the
// oldest: a dropped process's SIGKILL is reported as it is.
func TestProcessExitVerdictsBounded(t *testing.T) {
	c := &Container{cgroup: t.TempDir()}
	setOOMKills := func(n int) {
		t.Helper()
		b := []byte("oom_kill_disable 0\nunder_oom 0\noom_kill " + strconv.Itoa(n) + "\n")
		if err := os.WriteFile(filepath.Join(c.cgroup, "memory.oom_control"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	setOOMKills(0)
	ids := make([]string, maxKilledVerdicts+1)
	c.procs.byID = map[string]*processMem{}
	for i := range ids {
		ids[i] = "prc_" + strconv.Itoa(i)
		c.procs.byID[ids[i]] = &processMem{before: c.oomKills()} // as StartProcess notes it
	}
	setOOMKills(1)
	killed := agent.Exit{Code: 137, Signal: "SIGKILL", Reason: "signal"}
	for _, id := range ids {
		if got := c.ProcessExit(id, killed); got.Reason != "oom" {
			t.Fatalf("%s: reason %q, want oom", id, got.Reason)
		}
	}
	if n := len(c.procs.byID); n != maxKilledVerdicts {
		t.Errorf("%d verdicts kept, want %d", n, maxKilledVerdicts)
	}
	if got := c.ProcessExit(ids[0], killed); got.Reason != "signal" {
		t.Errorf("oldest, dropped: reason %q, want signal", got.Reason)
	}
	if got := c.ProcessExit(ids[len(ids)-1], killed); got.Reason != "oom" {
		t.Errorf("newest: reason %q, want its verdict, oom", got.Reason)
	}
}
