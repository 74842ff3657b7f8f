package controller_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// TestIsolateExitReasons checks the exit reason, signal and limit of
// isolate-tier execs, in the result and in the journal's exec.ended.
func TestIsolateExitReasons(t *testing.T) {
	requireShell(t)
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	id := e.sandbox(t)
	tests := []struct {
		name       string
		cmd        string
		timeout    time.Duration
		wantCode   int
		wantReason rung.ExitReason
		wantLimit  rung.Limit
	}{
		{name: "success", cmd: "true", wantReason: rung.ExitReasonExit},
		{name: "exit status", cmd: "exit 3", wantCode: 3, wantReason: rung.ExitReasonExit},
		{name: "wall time", cmd: "while true; do :; done", timeout: 50 * time.Millisecond,
			wantCode: rung.ExitLimit, wantReason: rung.ExitReasonTimeout, wantLimit: "wall_time"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.c.Exec(ctx, "acme", id, rung.ExecRequest{Command: tc.cmd, Backend: rung.BackendIsolate, Timeout: tc.timeout}, controller.ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tc.wantCode || res.ExitReason != tc.wantReason || res.Limit != tc.wantLimit || res.Signal != "" {
				t.Errorf("Exec(%q) = code %d, reason %q, limit %q, signal %q; want %d, %q, %q, no signal",
					tc.cmd, res.ExitCode, res.ExitReason, res.Limit, res.Signal, tc.wantCode, tc.wantReason, tc.wantLimit)
			}
			got := lastEnded(t, e, id)
			if got.Exec != res.ExecID || got.ExitCode != tc.wantCode || got.ExitReason != tc.wantReason || got.Limit != tc.wantLimit {
				t.Errorf("exec.ended = %+v; want code %d, reason %q, limit %q", got, tc.wantCode, tc.wantReason, tc.wantLimit)
			}
		})
	}

	// A caller that goes away cancels the exec: "canceled", not a limit.
	cctx, cancel := context.WithCancel(ctx)
	res, err := e.c.Exec(cctx, "acme", id, rung.ExecRequest{Command: "echo waiting; while true; do :; done", Backend: rung.BackendIsolate, Timeout: time.Minute},
		controller.ExecOptions{Stream: func(controller.Chunk) { cancel() }})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != rung.ExitReasonCanceled || res.Limit != "" {
		t.Errorf("canceled exec: reason %q, limit %q; want canceled and no limit", res.ExitReason, res.Limit)
	}
	if got := lastEnded(t, e, id); got.ExitReason != rung.ExitReasonCanceled || got.Limit != "" {
		t.Errorf("canceled exec's exec.ended = %+v", got)
	}
}

type endedEntry struct {
	Exec       rung.ExecID     `json:"exec"`
	ExitCode   int             `json:"exit_code"`
	ExitReason rung.ExitReason `json:"exit_reason"`
	Limit      rung.Limit      `json:"limit"`
	Signal     string          `json:"signal"`
}

// lastEnded returns the data of the sandbox's last exec.ended entry.
func lastEnded(t *testing.T, e *env, id string) endedEntry {
	t.Helper()
	evs, _, err := e.c.Events(t.Context(), "acme", id, controller.EventQuery{JournalOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == "exec.ended" {
			var d endedEntry
			if err := json.Unmarshal(evs[i].Data, &d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatal("no exec.ended in the journal")
	return endedEntry{}
}
