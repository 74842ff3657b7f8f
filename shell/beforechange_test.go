package shell_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"rung.dev/rung/shell"
)

// TestBeforeChange checks Request.BeforeChange: called once, before the
// first change to a file and never for an exec that changes none; its
// error fails that change and every later one, so nothing is written.
func TestBeforeChange(t *testing.T) {
	sh := newShell(t, shell.Config{})
	tests := []struct {
		name, script string
		calls        int
	}{
		{"read only", "echo hi; read x < /workspace/a 2>/dev/null; echo /workspace/*; true", 0},
		{"one write", "echo x > /workspace/a", 1},
		{"several changes", "echo x > /workspace/b; echo y >> /workspace/b; : > /workspace/c", 1},
		{"write after reads", "read x < /workspace/a; echo y >> /workspace/a", 1},
		{"change refused outside", "echo x > /etc/nope 2>/dev/null; true", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls int
			var out, errb bytes.Buffer
			res := sh.Run(t.Context(), shell.Request{Script: tc.script, Stdout: &out, Stderr: &errb,
				BeforeChange: func() error { calls++; return nil }})
			if res.ExitCode != 0 && tc.name != "change refused outside" {
				t.Fatalf("exit %d: %s", res.ExitCode, errb.String())
			}
			if calls != tc.calls {
				t.Errorf("BeforeChange called %d times, want %d", calls, tc.calls)
			}
		})
	}

	var errb bytes.Buffer
	calls := 0
	res := sh.Run(t.Context(), shell.Request{Script: "echo x > /workspace/failed; echo y > /workspace/faildir; echo done",
		Stderr: &errb, BeforeChange: func() error { calls++; return errors.New("store down") }})
	if calls != 1 {
		t.Errorf("failing BeforeChange called %d times, want 1", calls)
	}
	if !strings.Contains(errb.String(), "Input/output error") || res.ExitCode != 0 {
		t.Errorf("exit %d, stderr %q; want EIO errors and echo's 0", res.ExitCode, errb.String())
	}
	var ls bytes.Buffer
	sh.Run(t.Context(), shell.Request{Script: "echo /workspace/*", Stdout: &ls})
	if strings.Contains(ls.String(), "failed") || strings.Contains(ls.String(), "faildir") {
		t.Errorf("changes made although BeforeChange failed: %q", ls.String())
	}
}
