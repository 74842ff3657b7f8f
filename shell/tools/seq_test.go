package tools

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/shell"
)

// limitWriter accepts n bytes, then fails like a closed pipe.
type limitWriter struct {
	buf bytes.Buffer
	n   int
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.n {
		k := w.n - w.buf.Len()
		w.buf.Write(p[:k])
		return k, errors.New("broken pipe")
	}
	return w.buf.Write(p)
}

func TestYesStops(t *testing.T) {
	t.Parallel()
	w := &limitWriter{n: 100000}
	c := &shell.Call{Args: []string{"yes", "ab"}, Stdout: w, Stderr: &bytes.Buffer{}}
	if st := runYes(t.Context(), c); st != 1 {
		t.Fatalf("yes status = %d, want 1", st)
	}
	if got := w.buf.String(); !strings.HasPrefix(got, "ab\nab\n") || strings.Trim(got, "ab\n") != "" {
		t.Fatalf("yes output = %q...", got[:20])
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	c = &shell.Call{Args: []string{"yes"}, Stdout: discardCounter{}, Stderr: &bytes.Buffer{}}
	if st := runYes(ctx, c); st != txCtxStatus {
		t.Fatalf("yes after ctx end = %d, want %d", st, txCtxStatus)
	}
}

type discardCounter struct{}

func (discardCounter) Write(p []byte) (int, error) { return len(p), nil }

func TestSeq(t *testing.T) {
	t.Parallel()
	s := func(name string, args ...string) toolCase {
		return toolCase{name: name, args: append([]string{"seq"}, args...)}
	}
	runDiff(t, []toolCase{
		s("one", "5"),
		s("two", "3", "7"),
		s("three", "1", "3", "10"),
		s("decreasing", "5", "-2", "-3"),
		s("neg", "-3", "-1"),
		s("neg-first-operand", "-2", "2"),
		s("empty-range", "5", "1"),
		s("zero-step", "1", "0", "3"),
		s("float", "0", "0.1", "0.5"),
		s("float2", "1", "0.25", "2"),
		s("float-last", "0", "0.000001", "0.000003"),
		s("float-dot", "1.0", "3"),
		s("float-e", "1e2", "1e2"),
		s("float-e-step", "1e-1", "2e-1", "1"),
		s("w", "-w", "8", "10"),
		s("w-neg", "-w", "-1", "1"),
		s("w-float", "-w", "0.5", "1", "3"),
		s("w-float2", "-w", "1", "0.5", "10"),
		s("s", "-s,", "5"),
		s("s-empty", "-s", "", "3"),
		s("s-long", "--separator=::", "3"),
		s("f", "-f", "%03g", "3"),
		s("f-e", "-f", "%.2e", "1", "5"),
		s("f-text", "-f", "x%%%gy", "2"),
		s("f-width", "-f", "%-6.1f|", "1", "3"),
		s("f-bad", "-f", "%x", "3"),
		s("f-none", "-f", "abc", "3"),
		s("f-two", "-f", "%g%g", "3"),
		s("f-w", "-w", "-f", "%g", "3"),
		s("big", "99999999999999999999", "100000000000000000001"),
		s("hex", "0x10", "0x12"),
		s("w-hex", "-w", "0x1", "3"),
		s("bad", "x"),
		s("none"),
		s("extra", "1", "2", "3", "4"),
		s("g-default", "0.1", "1e10", "3e10"),
		s("half", "1", ".5", "2.0"),
		s("plus", "+1", "+3"),
		s("neg-zero-step", "1", "-0", "2"),
		s("dec-float", "1", "-0.3", "0"),
		s("big-step", "1", "1000000", "3000000"),
		s("prec-last", "0", "0.1", "1"),
		s("nan", "nan"),
		s("minus-zero-first", "-0", "1", "2"),
		{name: "w-exponent-last", args: []string{"seq", "-w", ".5", "0.25", "1e1"}, known: "-w width with an exponent in LAST differs from GNU's scan_arg"},
	})
}

func TestYesSleepEnv(t *testing.T) {
	t.Parallel()
	runDiff(t, []toolCase{
		{name: "yes-head", args: []string{"env", "yes"}, known: "needs a pipe; covered by TestYesStops"},
		{name: "yes-bad-opt", args: []string{"yes", "-n"}},
		{name: "yes-bad-long", args: []string{"yes", "--nope"}},
		{name: "sleep-0", args: []string{"sleep", "0"}},
		{name: "sleep-frac", args: []string{"sleep", "0.01"}},
		{name: "sleep-suffix", args: []string{"sleep", "0.0001m", "0s"}},
		{name: "sleep-bad", args: []string{"sleep", "x"}},
		{name: "sleep-missing", args: []string{"sleep"}},
		{name: "env-print", args: []string{"env"}},
		{name: "env-i", args: []string{"env", "-i"}},
		{name: "env-i-set", args: []string{"env", "-i", "A=1", "B=2"}},
		{name: "env-u", args: []string{"env", "-u", "HOME"}},
		{name: "env-set-override", args: []string{"env", "HOME=/x"}},
		{name: "env-cmd", args: []string{"env", "printf", `%s\n`, "hi"}},
		{name: "env-cmd-var", args: []string{"env", "-i", "X=1", "printenv", "X"}},
		{name: "env-cmd-missing", args: []string{"env", "printenv", "NOPE"}},
		{name: "env-0", args: []string{"env", "-0", "-i", "A=1"}},
		{name: "env-dash", args: []string{"env", "-", "A=1"}},
		{name: "env-true", args: []string{"env", "true"}},
		{name: "env-false", args: []string{"env", "false"}},
		{name: "env-echo", args: []string{"env", "echo", "-n", "x"}},
		{name: "env-test", args: []string{"env", "test", "1", "-eq", "1"}},
		{name: "env-bad-unset", args: []string{"env", "-u", "A=B"}},
		{name: "printenv-all", args: []string{"printenv"}},
		{name: "printenv-one", args: []string{"printenv", "HOME"}},
		{name: "printenv-two", args: []string{"printenv", "HOME", "TZ"}},
		{name: "printenv-missing", args: []string{"printenv", "NOPE", "HOME"}},
		{name: "printenv-0", args: []string{"printenv", "-0", "TZ"}},
		{name: "timeout-ok", args: []string{"timeout", "5", "echo", "hi"}},
		{name: "timeout-status", args: []string{"timeout", "5s", "false"}},
		{name: "timeout-fires", args: []string{"timeout", "0.05", "sleep", "5"}},
		{name: "timeout-preserve", args: []string{"timeout", "--preserve-status", "0.05", "sleep", "5"}},
		{name: "timeout-signal", args: []string{"timeout", "-s", "KILL", "0.05", "sleep", "5"},
			known: "GNU timeout kills itself with KILL (no exit status); we return 137 as a shell would report"},
		{name: "timeout-signal-hup", args: []string{"timeout", "-s", "HUP", "--preserve-status", "0.05", "sleep", "5"}},
		{name: "timeout-k", args: []string{"timeout", "-k", "1", "5", "true"}},
		{name: "timeout-bad", args: []string{"timeout", "x", "true"}},
		{name: "timeout-missing", args: []string{"timeout", "5"}},
		{name: "timeout-zero", args: []string{"timeout", "0", "echo", "x"}},
	})
}
