package controller_test

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/store"
)

func TestExec(t *testing.T) {
	requireShell(t)
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	id := e.sandbox(t)
	if _, err := e.c.WriteFile(ctx, "acme", id, controller.WriteRequest{Path: "f"}, strings.NewReader("data\n")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, cmd   string
		stdin       string
		wantOut     string
		wantCode    int
		wantBackend rung.Backend
	}{
		{"echo", "echo hi", "", "hi\n", 0, rung.BackendIsolate},
		{"read file", "read l < f; echo $l", "", "data\n", 0, rung.BackendIsolate},
		{"stdin", "read l; echo $l", "in\n", "in\n", 0, rung.BackendIsolate},
		{"exit code", "exit 3", "", "", 3, rung.BackendIsolate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.c.Exec(ctx, "acme", id, rung.ExecRequest{Command: tc.cmd, Stdin: []byte(tc.stdin), Backend: rung.BackendIsolate}, controller.ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Stdout) != tc.wantOut || res.ExitCode != tc.wantCode || res.Backend != tc.wantBackend || !res.ExecID.Valid() {
				t.Errorf("Exec(%q) = %q, %d, %s; want %q, %d, %s", tc.cmd, res.Stdout, res.ExitCode, res.Backend, tc.wantOut, tc.wantCode, tc.wantBackend)
			}
		})
	}
	var chunks []controller.Chunk
	res, err := e.c.Exec(ctx, "acme", id, rung.ExecRequest{Command: "echo a; echo b >&2", Backend: rung.BackendIsolate}, controller.ExecOptions{Stream: func(c controller.Chunk) { chunks = append(chunks, c) }})
	if err != nil || res.ExitCode != 0 {
		t.Fatal(res, err)
	}
	if len(chunks) != 2 || chunks[0].Seq != 1 || string(chunks[0].Data) != "a\n" || chunks[1].Stream != "stderr" {
		t.Errorf("streamed chunks = %+v", chunks)
	}
	evs, _, err := e.c.Events(ctx, "acme", id, controller.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	var ended struct {
		Exec     rung.ExecID `json:"exec"`
		ExitCode int         `json:"exit_code"`
		Backend  string      `json:"backend"`
		Stdout   int64       `json:"stdout_bytes"`
	}
	if err := json.Unmarshal(last.Data, &ended); err != nil || last.Type != "exec.ended" || ended.Exec != res.ExecID || ended.Backend != "isolate" || ended.Stdout != 2 {
		t.Errorf("last event = %s %s", last.Type, last.Data)
	}
	if _, err := e.c.Exec(ctx, "beta", id, rung.ExecRequest{Command: "echo hi"}, controller.ExecOptions{}); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("exec as beta: err = %v", err)
	}
}

func TestExecContainerUnavailable(t *testing.T) {
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.c.Exec(ctx, "acme", string(sb.ID), rung.ExecRequest{Command: "echo hi", Backend: rung.BackendContainer}, controller.ExecOptions{})
	if !errors.Is(err, rung.ErrUnavailable) || !strings.Contains(err.Error(), "container tier not available") {
		t.Errorf("container exec: err = %v, want unavailable", err)
	}
}

func TestExecLimits(t *testing.T) {
	requireShell(t)
	e := newEnv(t, controller.Config{Limits: controller.Limits{ExecsPerSandbox: 1}})
	ctx := t.Context()
	sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The first exec echoes one line, then blocks reading stdin until we
	// close it, holding the sandbox's only exec slot. (Builtins only: the
	// controller's tests run without shell/tools.)
	stdin, w := io.Pipe()
	var wg sync.WaitGroup
	started := make(chan struct{})
	wg.Go(func() {
		e.c.Exec(ctx, "acme", string(sb.ID), rung.ExecRequest{Command: "read a; echo $a; read b", Backend: rung.BackendIsolate, Timeout: time.Minute}, controller.ExecOptions{Stdin: stdin, Stream: func(controller.Chunk) {
			select {
			case <-started:
			default:
				close(started)
			}
		}})
	})
	w.Write([]byte("x\n"))
	<-started
	_, err = e.c.Exec(ctx, "acme", string(sb.ID), rung.ExecRequest{Command: "echo hi", Backend: rung.BackendIsolate}, controller.ExecOptions{})
	w.Close()
	wg.Wait()
	if !errors.Is(err, rung.ErrLimit) {
		t.Errorf("second concurrent exec: err = %v, want ErrLimit", err)
	}
}

func TestRestartMarksExecsLost(t *testing.T) {
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// An exec the previous daemon recorded as started and never ended, as
	// a SIGKILL leaves it (the end-to-end crash test kills a real daemon).
	lost := store.Exec{ID: rung.NewExecID(), Sandbox: sb.ID, Command: "sleep 100"}
	if _, err := e.st.QueueStartExec(ctx, lost, store.Event{Type: "exec.started", Journal: true}).Wait(); err != nil {
		t.Fatal(err)
	}
	half := store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Tenant: "acme", State: store.StateCreating}}
	if err := e.st.CreateSandbox(ctx, half, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.pool.Create(ctx, "sbx_strayonlyinthepool"); err != nil {
		t.Fatal(err)
	}
	e.close()
	rep := e.open(t, controller.Config{})
	if len(rep.LostExecs) != 1 || rep.LostExecs[0] != lost.ID {
		t.Errorf("report lost = %v, want [%s]", rep.LostExecs, lost.ID)
	}
	if len(rep.Unfinished) != 1 || rep.Unfinished[0] != half.ID {
		t.Errorf("report unfinished = %v, want [%s]", rep.Unfinished, half.ID)
	}
	if len(rep.Pool.Removed) != 1 || rep.Pool.Removed[0] != "sbx_strayonlyinthepool" {
		t.Errorf("report pool = %+v", rep.Pool)
	}
	evs, _, err := e.c.Events(ctx, "acme", string(sb.ID), controller.EventQuery{JournalOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if l := evs[len(evs)-1]; l.Type != "exec.lost" || !strings.Contains(string(l.Data), string(lost.ID)) {
		t.Errorf("last journal entry = %s %s, want exec.lost naming %s", l.Type, l.Data, lost.ID)
	}
	if got, _ := e.st.GetExec(ctx, sb.ID, lost.ID); got.State != store.ExecLost {
		t.Errorf("exec state = %s, want lost", got.State)
	}
}

func TestExecAutoRoutes(t *testing.T) {
	requireShell(t)
	requireCheck(t)
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.c.Exec(ctx, "acme", string(sb.ID), rung.ExecRequest{Command: "echo hi"}, controller.ExecOptions{})
	if err != nil || res.Backend != rung.BackendIsolate || string(res.Stdout) != "hi\n" || res.Reason == "" {
		t.Errorf("auto exec = %+v, %v", res, err)
	}
	_, err = e.c.Exec(ctx, "acme", string(sb.ID), rung.ExecRequest{Command: "python3 -c 'print(1)'"}, controller.ExecOptions{})
	if !errors.Is(err, rung.ErrUnavailable) || !strings.Contains(err.Error(), "python3") {
		t.Errorf("auto exec of python3 without containers: err = %v, want unavailable naming python3", err)
	}
}
