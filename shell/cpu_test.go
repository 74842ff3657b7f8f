package shell_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/shell"
)

// TestCPUTime runs CPU bombs, which must end with cpu_time, and a script
// that waits far longer than its CPU budget for its input, which must not.
func TestCPUTime(t *testing.T) {
	lim := shell.Limits{CPUTime: 100 * time.Millisecond, LoopIterations: 1 << 40, Commands: 1 << 40}
	for _, script := range []string{
		"while :; do :; done",
		"while :; do :; done | while :; do :; done",
		"{ while :; do :; done; } & { while :; do :; done; } & wait",
		"x=$(while :; do :; done)",
		// One expansion, quadratic in its value (bash takes minutes too):
		// the matching loops are check points.
		"x=$(printf %s%s {1..30000}); y=${x//1?/X}",
	} {
		t.Run(script, func(t *testing.T) {
			t.Parallel()
			sh := newShell(t, shell.Config{Limits: lim, Sched: shell.NewScheduler(shell.SchedulerConfig{})})
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // catches a hang only
			defer cancel()
			res, _, stderr := run(t, sh, ctx, script)
			if res.Limit != "cpu_time" || res.ExitCode != 126 || !strings.Contains(stderr, "limit exceeded: cpu_time (max 100ms)") {
				t.Errorf("Run(%q) = %+v, stderr %q; want cpu_time, 126", script, res, stderr)
			}
		})
	}
	t.Run("literal replace", func(t *testing.T) {
		t.Parallel()
		// A pattern without wildcards is replaced at each occurrence, not
		// tried at every start and end: bash takes 15 s on this. The
		// budget is 2 s, not the bombs' 100 ms: the linear work takes
		// more than 100 ms under -race beside five CPU bombs on 2 cores
		// (it failed so in a clean-clone make test), and a quadratic
		// replace would still take far longer than 2 s.
		sh := newShell(t, shell.Config{Limits: shell.Limits{CPUTime: 2 * time.Second, LoopIterations: lim.LoopIterations, Commands: lim.Commands}})
		res, out, stderr := run(t, sh, t.Context(), "x=$(printf '%0100000d' 0); y=${x//0/ab}; z=${x/00/c}; echo ${#y} ${#z} ${y:0:4}")
		if res.ExitCode != 0 || out != "200000 99999 abab\n" {
			t.Errorf("Run = %+v, %q, stderr %q", res, out, stderr)
		}
	})
	t.Run("waiting", func(t *testing.T) {
		t.Parallel()
		sh := newShell(t, shell.Config{Limits: shell.Limits{CPUTime: 50 * time.Millisecond}, Sched: shell.NewScheduler(shell.SchedulerConfig{})})
		// The input comes after six CPU budgets; waiting for it is free.
		stdin := &lateReader{r: strings.NewReader("late\n"), ready: make(chan struct{})}
		timer := time.AfterFunc(300*time.Millisecond, func() { close(stdin.ready) })
		defer timer.Stop()
		var out strings.Builder
		res := sh.Run(t.Context(), shell.Request{Script: "read x; echo $x | { read y; echo $y; }", Stdin: stdin, Stdout: &out})
		if res.Limit != "" || out.String() != "late\n" {
			t.Errorf("Run = %+v, stdout %q; want success with %q", res, out.String(), "late\n")
		}
	})
}

// lateReader reads r once ready is closed.
type lateReader struct {
	r     io.Reader
	ready chan struct{}
}

func (l *lateReader) Read(p []byte) (int, error) {
	<-l.ready
	return l.r.Read(p)
}
