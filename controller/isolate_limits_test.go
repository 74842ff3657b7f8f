package controller_test

import (
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// TestIsolateBudgets checks that the controller passes its per-exec CPU
// and memory budgets to the isolate tier, and reports their limits as it
// does the interpreter's others: exit 126, exit_reason exit, limit named.
func TestIsolateBudgets(t *testing.T) {
	requireShell(t)
	for _, tc := range []struct {
		script string
		limit  rung.Limit
		limits controller.Limits
	}{
		// Few commands, much CPU each: the CPU budget comes long before
		// the million commands, even under the race detector.
		{"x=$(printf '%01000000d' 0); while :; do y=${x//0/1}; done", "cpu_time",
			controller.Limits{ExecCPUTime: 300 * time.Millisecond, ExecMemoryBytes: 64 << 20}},
		// A few doublings pass 4 MiB. The CPU budget is far away: under
		// the race detector on a loaded machine the doublings alone took
		// more than 300 ms of slot time, and that limit came first.
		{"x=a; while :; do x=$x$x; done", "memory_bytes",
			controller.Limits{ExecCPUTime: time.Minute, ExecMemoryBytes: 4 << 20}},
	} {
		e := newEnv(t, controller.Config{Limits: tc.limits})
		sb := e.sandbox(t)
		res, err := e.c.Exec(t.Context(), "acme", sb, rung.ExecRequest{Command: tc.script, Backend: rung.BackendIsolate}, controller.ExecOptions{})
		if err != nil || res.Limit != tc.limit || res.ExitCode != rung.ExitLimit || res.ExitReason != rung.ExitReasonExit {
			t.Errorf("Exec(%q) = %+v, %v; want limit %s, exit 126, exit_reason exit", tc.script, res, err, tc.limit)
		}
	}
}

// TestIsolateMemoryAdmission fills the daemon's isolate memory pool with
// one exec and checks that the next is refused with ErrLimit (429) naming
// daemon_memory_bytes, before it is journaled, and that the pool is free
// again once the first ends.
func TestIsolateMemoryAdmission(t *testing.T) {
	requireShell(t)
	e := newEnv(t, controller.Config{Limits: controller.Limits{IsolateMemoryBytes: 1 << 20}})
	ctx := t.Context()
	sb := e.sandbox(t)
	// The first exec takes the pool's only grain and holds it, blocked
	// reading stdin, until we close it.
	stdin, w := io.Pipe()
	started := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	wg.Go(func() {
		e.c.Exec(ctx, "acme", sb, rung.ExecRequest{Command: "echo x; read a", Backend: rung.BackendIsolate, Timeout: time.Minute},
			controller.ExecOptions{Stdin: stdin, Stream: func(controller.Chunk) { once.Do(func() { close(started) }) }})
	})
	<-started
	_, err := e.c.Exec(ctx, "acme", sb, rung.ExecRequest{Command: "echo hi", Backend: rung.BackendIsolate}, controller.ExecOptions{})
	var le *rung.LimitError
	if !errors.Is(err, rung.ErrLimit) || !errors.As(err, &le) || le.Limit != "daemon_memory_bytes" {
		t.Errorf("exec on a full pool: err = %v, want a daemon_memory_bytes LimitError", err)
	}
	w.Close()
	wg.Wait()
	res, err := e.c.Exec(ctx, "acme", sb, rung.ExecRequest{Command: "echo hi", Backend: rung.BackendIsolate}, controller.ExecOptions{})
	if err != nil || string(res.Stdout) != "hi\n" {
		t.Errorf("exec after the pool is free = %+v, %v", res, err)
	}
}
