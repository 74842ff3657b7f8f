package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"rung.dev/rung/api"
	"rung.dev/rung/client"
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

// An auto exec whose stdin is live runs in the container: cat answers
// what is typed while stdin is still open, as bash's cat does (the
// isolate tier's cat would answer only at the end of its input).
func TestAutoExecLiveStdin(t *testing.T) {
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
	send(api.ExecRequest{Command: "cat"})
	send(api.WSInput{Type: "stdin", Data: "Hello, World!"}) // no newline: cat passes on what it reads
	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	_, m, err := conn.Read(rctx)
	rcancel()
	if err != nil {
		t.Fatalf("no output while stdin is open: %v", err)
	}
	var f api.Frame
	json.Unmarshal(m, &f)
	if f.Type != "stdout" || f.Data != "Hello, World!" {
		t.Fatalf("first frame %+v, want stdout Hello, World!", f)
	}
	send(api.WSInput{Type: "stdin_close"})
	var exit api.ExecResult
	for exit.Type != "exit" {
		_, m, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v (no exit frame)", err)
		}
		json.Unmarshal(m, &exit)
	}
	if exit.ExitCode != 0 || exit.Backend != "container" || !strings.Contains(exit.Reason, "live stdin") {
		t.Errorf("exit frame %+v, want exit 0 in the container for its live stdin", exit)
	}
}
