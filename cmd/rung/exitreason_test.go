package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// journalData returns the data of the sandbox's journal entries of typ,
// oldest first.
func journalData(t *testing.T, c *client.Client, id, typ string) []map[string]any {
	t.Helper()
	entries, err := c.Journal(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range entries {
		var m map[string]any
		if e.Type == typ && json.Unmarshal(e.Data, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// journalEnded returns the exec.ended entry of exec in the journal.
func journalEnded(t *testing.T, c *client.Client, id string, exec rung.ExecID) map[string]any {
	t.Helper()
	for _, m := range journalData(t, c, id, "exec.ended") {
		if m["exec"] == string(exec) {
			return m
		}
	}
	t.Fatalf("no exec.ended for %s", exec)
	return nil
}

// smallSandbox starts the daemon with the container tier and creates a
// sandbox with 128 MiB of memory, for OOM kills that come quickly.
func smallSandbox(t *testing.T) (*client.Client, string) {
	t.Helper()
	c, _ := startContainerDaemon(t)
	sb, err := c.Create(t.Context(), client.CreateRequest{Size: rung.Size{MilliCPU: 500, MemoryBytes: 128 << 20, DiskBytes: 64e6}})
	if err != nil {
		t.Fatal(err)
	}
	return c, string(sb.ID)
}

// TestExitReasons checks how execs end, as the API reports it, in both
// tiers: the result's exit_reason, signal and limit, the same in the
// NDJSON exit frame, and in the journal's exec.ended.
func TestExitReasons(t *testing.T) {
	c, id := smallSandbox(t)
	ctx := t.Context()
	tests := []struct {
		name    string
		req     client.ExecRequest
		code    int
		reason  rung.ExitReason
		signal  string
		limit   rung.Limit
		journal bool // also check the exec.ended entry
	}{
		{name: "isolate exit", req: client.ExecRequest{Command: "exit 3", Backend: rung.BackendIsolate}, code: 3, reason: rung.ExitReasonExit, journal: true},
		{name: "isolate wall time", req: client.ExecRequest{Command: "while true; do :; done", Backend: rung.BackendIsolate, TimeoutMS: 100},
			code: rung.ExitLimit, reason: rung.ExitReasonTimeout, limit: "wall_time"},
		{name: "container exit", req: client.ExecRequest{Command: "exit 4", Backend: rung.BackendContainer}, code: 4, reason: rung.ExitReasonExit},
		{name: "container signal", req: client.ExecRequest{Command: "kill -9 $$", Backend: rung.BackendContainer},
			code: 137, reason: rung.ExitReasonSignal, signal: "SIGKILL", journal: true},
		{name: "container wall time", req: client.ExecRequest{Command: "sleep 30", Backend: rung.BackendContainer, TimeoutMS: 200},
			code: rung.ExitLimit, reason: rung.ExitReasonTimeout, limit: "wall_time", journal: true},
		{name: "container oom", req: client.ExecRequest{Command: "x=a; while true; do x=$x$x; done", Backend: rung.BackendContainer},
			code: 137, reason: rung.ExitReasonOOM, signal: "SIGKILL", journal: true},
		{name: "container output limit", req: client.ExecRequest{Command: "yes flood", Backend: rung.BackendContainer},
			code: rung.ExitLimit, reason: rung.ExitReasonOutputLimit, limit: "output_bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Exec(ctx, id, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tc.code || res.ExitReason != tc.reason || res.Signal != tc.signal || res.Limit != tc.limit {
				t.Errorf("Exec(%q) = code %d, reason %q, signal %q, limit %q; want %d, %q, %q, %q (stderr %q)",
					tc.req.Command, res.ExitCode, res.ExitReason, res.Signal, res.Limit, tc.code, tc.reason, tc.signal, tc.limit, clipped(res.Stderr))
			}
			if !tc.journal {
				return
			}
			m := journalEnded(t, c, id, res.ExecID)
			if m["exit_reason"] != string(tc.reason) || m["exit_code"] != float64(tc.code) || (m["signal"] != nil) != (tc.signal != "") {
				t.Errorf("exec.ended = %v; want exit_reason %q, exit_code %d, signal %q", m, tc.reason, tc.code, tc.signal)
			}
		})
	}

	// The NDJSON stream's exit frame says the same.
	res, err := c.ExecStream(ctx, id, client.ExecRequest{Command: "echo x; kill -TERM $$", Backend: rung.BackendContainer}, io.Discard, io.Discard)
	if err != nil || res.ExitReason != rung.ExitReasonSignal || res.Signal != "SIGTERM" || res.ExitCode != 143 {
		t.Errorf("streamed exec killed by SIGTERM: %+v, %v", res, err)
	}
}

func clipped(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// waitOutput follows a background process's output until it contains
// want.
func waitOutput(t *testing.T, c *client.Client, id, pid, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	errFound := errors.New("found")
	_, err := c.ProcessOutput(ctx, id, pid, 0, true, func(f client.OutputFrame) error {
		if out.Write(f.Data); strings.Contains(out.String(), want) {
			return errFound
		}
		return nil
	})
	if !strings.Contains(out.String(), want) {
		t.Fatalf("process %s never printed %q: %q, %v", pid, want, out.String(), err)
	}
}

// processExits returns the journal's process.exited entries by process.
func processExits(t *testing.T, c *client.Client, id string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, m := range journalData(t, c, id, "process.exited") {
		if p, ok := m["process"].(string); ok {
			out[p] = m
		}
	}
	return out
}

// TestBackgroundProcessExits checks the ends of background processes
// through the API: an OOM kill is "oom" in the process list, its output
// stream and the journal's process.exited; and stopping the container
// sends SIGTERM first, so a process that traps it saves its work, and its
// exit is journaled before the container's stop.
func TestBackgroundProcessExits(t *testing.T) {
	c, id := smallSandbox(t)
	ctx := t.Context()

	bomb, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "x=a; while true; do x=$x$x; done"})
	if err != nil {
		t.Fatal(err)
	}
	exit, err := c.ProcessOutput(ctx, id, bomb.ID, 0, true, func(client.OutputFrame) error { return nil })
	if err != nil || exit == nil || exit.Reason != "oom" || exit.Signal != "SIGKILL" {
		t.Errorf("memory bomb's exit in its output stream: %+v, %v; want reason oom", exit, err)
	}
	list, err := c.Processes(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list {
		if p.ID == bomb.ID && (p.Exit == nil || p.Exit.Reason != "oom") {
			t.Errorf("memory bomb in the process list: %+v, want reason oom", p.Exit)
		}
	}
	waitJournal(t, c, id, "process.exited")
	if m := processExits(t, c, id)[bomb.ID]; m["exit_reason"] != "oom" || m["signal"] != "SIGKILL" || m["exit_code"] != float64(137) {
		t.Errorf("memory bomb's process.exited = %v", m)
	}

	saver, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "trap 'echo saved > /workspace/state; exit 0' TERM; echo ready; while true; do sleep 0.05; done"})
	if err != nil {
		t.Fatal(err)
	}
	waitOutput(t, c, id, saver.ID, "ready\n")
	if err := c.StopContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	r, err := c.ReadFile(ctx, id, "/workspace/state")
	if err != nil {
		t.Fatalf("the SIGTERM handler's file: %v; journal %v", err, journalData(t, c, id, "process.exited"))
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "saved\n" {
		t.Errorf("/workspace/state = %q, want saved", b)
	}
	waitJournal(t, c, id, "container.stopped")
	if m := processExits(t, c, id)[saver.ID]; m["exit_reason"] != "exit" || m["exit_code"] != float64(0) || m["signal"] != nil {
		t.Errorf("saver's process.exited = %v; want a clean exit", m)
	}
	types := journalTypes(t, c, id)
	last := map[string]int{}
	for i, typ := range types {
		last[typ] = i
	}
	if last["process.exited"] > last["container.stopped"] {
		t.Errorf("journal %v: a process.exited after container.stopped", types)
	}
}

// TestIdleKeepsRunningProcesses checks the idle rule: a container with a
// running background process is not stopped for idleness, however often
// the idle timeout passes; once the last one exits, the timeout runs
// from that exit and stops the container.
func TestIdleKeepsRunningProcesses(t *testing.T) {
	c, d := startContainerDaemon(t)
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{IdleTimeoutMS: 200})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	p, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "sleep 1000"})
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the idle alarm to pass three times: each time it finds the
	// process and pushes the alarm back.
	idleAt := func() time.Time {
		row, err := d.store.GetSandbox(ctx, "", sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		return row.IdleAt
	}
	seen := map[time.Time]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < 4 && time.Now().Before(deadline) {
		if at := idleAt(); !at.IsZero() {
			seen[at] = true
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(seen) < 4 {
		t.Fatalf("idle alarm pushed back %d times in 30 s, want 3", len(seen)-1)
	}
	if !d.containers.Running(sb.ID) || slices.Contains(journalTypes(t, c, id), "container.stopped") {
		t.Fatalf("container stopped while a background process runs: %v", journalTypes(t, c, id))
	}
	if err := c.SignalProcess(ctx, id, p.ID, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	data := waitJournal(t, c, id, "container.stopped")
	if !strings.Contains(string(data), "idle timeout") {
		t.Errorf("stop reason %s, want idle timeout", data)
	}
	if m := processExits(t, c, id)[p.ID]; m["exit_reason"] != "signal" || m["signal"] != "SIGTERM" {
		t.Errorf("process.exited = %v, want SIGTERM", m)
	}
}
