package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"rung.dev/rung"
	"rung.dev/rung/api"
	"rung.dev/rung/client"
	"rung.dev/rung/controller"
)

// An interactive exec over the WebSocket runs in the container with its
// stdin streamed: each line is answered while stdin is still open, as a
// REPL needs (the container tier once read all of stdin first).
func TestContainerExecWebSocketStdin(t *testing.T) {
	c, d, addr := startContainerDaemonWith(t, DaemonConfig{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sb, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := websocket.Dial(ctx, "ws://"+addr+"/v1/sandboxes/"+string(sb.ID)+"/exec/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.Token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	send := func(v any) {
		b, _ := json.Marshal(v)
		if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	read := func() api.Frame {
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		defer rcancel()
		_, m, err := conn.Read(rctx)
		if err != nil {
			t.Fatalf("no frame while stdin is open: %v", err)
		}
		var f api.Frame
		json.Unmarshal(m, &f)
		return f
	}
	send(api.ExecRequest{Command: "while read l; do echo got $l; done", Backend: "container"})
	for _, l := range []string{"one", "two"} {
		send(api.WSInput{Type: "stdin", Data: l + "\n"})
		if f := read(); f.Type != "stdout" || f.Data != "got "+l+"\n" {
			t.Fatalf("after %q: frame %+v", l, f)
		}
	}
	send(api.WSInput{Type: "stdin_close"})
	var exit api.ExecResult
	for {
		_, m, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (no exit frame)", err)
		}
		json.Unmarshal(m, &exit)
		if exit.Type == "exit" {
			break
		}
	}
	if exit.ExitCode != 0 || exit.Backend != "container" {
		t.Errorf("exit frame %+v", exit)
	}
}

// An auto exec whose stdin is live (typed while a client reads, as the
// E2B SDK's stdin commands are) runs in the container: cat answers what
// is typed while stdin is still open, as bash's cat does (the isolate
// tier's cat answers at the end of its input). Stdin given whole still
// runs in-process.
func TestAutoExecLiveStdin(t *testing.T) {
	c, d, _ := startContainerDaemonWith(t, DaemonConfig{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sb, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	out := make(chan string, 16)
	type result struct {
		res rung.ExecResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := d.ctrl.Exec(ctx, sb.Tenant, string(sb.ID), rung.ExecRequest{Command: "cat"},
			controller.ExecOptions{Stdin: pr, LiveStdin: true, Stream: func(ch controller.Chunk) { out <- string(ch.Data) }})
		done <- result{res, err}
	}()
	pw.Write([]byte("Hello, World!")) // no newline: cat passes on what it reads
	select {
	case got := <-out:
		if got != "Hello, World!" {
			t.Fatalf("first output %q, want Hello, World!", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no output while stdin is open")
	}
	pw.Close()
	r := <-done
	if r.err != nil || r.res.ExitCode != 0 || r.res.Backend != rung.BackendContainer || !strings.Contains(r.res.Reason, "live stdin") {
		t.Errorf("live stdin exec: %+v %v, want exit 0 in the container for its live stdin", r.res, r.err)
	}
	res, err := d.ctrl.Exec(ctx, sb.Tenant, string(sb.ID), rung.ExecRequest{Command: "cat"}, controller.ExecOptions{Stdin: strings.NewReader("whole")})
	if err != nil || string(res.Stdout) != "whole" || res.Backend != rung.BackendIsolate {
		t.Errorf("stdin given whole: %+v %v, want it in-process", res, err)
	}
}
