package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"rung.dev/rung/api"
)

func TestExecJSON(t *testing.T) {
	e := newEnv(t)
	id := string(e.sandbox(t, e.acme, `{}`).ID)
	var res api.ExecResult
	e.decode(t, e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/"+id+"/exec", `{"command":"read x; echo got $x; echo err >&2; exit 4","stdin":"in\n","backend":"isolate"}`), 200), &res)
	if res.Stdout != "got in\n" || res.Stderr != "err\n" || res.ExitCode != 4 || res.Backend != "isolate" || !res.ExecID.Valid() {
		t.Errorf("exec = %+v", res)
	}
}

func TestExecNDJSON(t *testing.T) {
	e := newEnv(t)
	id := string(e.sandbox(t, e.acme, `{}`).ID)
	r := e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/"+id+"/exec?stream=ndjson", `{"command":"echo a; echo b >&2; exit 2","backend":"isolate"}`), 200)
	if ct := r.header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("content type %q", ct)
	}
	var frames []api.ExecResult
	var chunks []api.Frame
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		var f api.Frame
		json.Unmarshal(sc.Bytes(), &f)
		if f.Type == "exit" {
			var x api.ExecResult
			json.Unmarshal(sc.Bytes(), &x)
			frames = append(frames, x)
		} else {
			chunks = append(chunks, f)
		}
	}
	if len(chunks) != 2 || chunks[0] != (api.Frame{Type: "stdout", Seq: 1, Data: "a\n"}) || chunks[1] != (api.Frame{Type: "stderr", Seq: 2, Data: "b\n"}) {
		t.Errorf("chunks = %+v", chunks)
	}
	if len(frames) != 1 || frames[0].ExitCode != 2 || frames[0].Stdout != "" {
		t.Errorf("exit frames = %+v", frames)
	}
}

func TestExecWebSocket(t *testing.T) {
	e := newEnv(t)
	id := string(e.sandbox(t, e.acme, `{}`).ID)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.url, "http")+"/v1/sandboxes/"+id+"/exec/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + e.acme}}})
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
	send(api.ExecRequest{Command: "while read l; do echo got $l; done", Backend: "isolate"})
	send(api.WSInput{Type: "stdin", Data: "one\n"})
	_, m, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var f api.Frame
	json.Unmarshal(m, &f)
	if f.Type != "stdout" || f.Data != "got one\n" || f.Seq != 1 {
		t.Errorf("first frame = %s", m)
	}
	send(api.WSInput{Type: "stdin", Data: "two\n"})
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
	if exit.ExitCode != 0 || !exit.ExecID.Valid() {
		t.Errorf("exit frame = %+v", exit)
	}
}

func TestEventsFollow(t *testing.T) {
	e := newEnv(t)
	id := string(e.sandbox(t, e.acme, `{}`).ID)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/v1/sandboxes/"+id+"/events?follow=true&after=1", nil)
	req.Header.Set("Authorization", "Bearer "+e.acme)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Produce events after the stream is open: the follower must see
	// every one of them, in order, with no gaps.
	e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/"+id+"/exec", `{"command":"echo hi","backend":"isolate"}`), 200)
	e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/"+id+"/effects", `{"key":"k"}`), 201)
	sc := bufio.NewScanner(resp.Body)
	var types []string
	want := int64(2)
	for len(types) < 4 && sc.Scan() {
		var ev api.Event
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Seq != want {
			t.Fatalf("event seq %d, want %d", ev.Seq, want)
		}
		want++
		types = append(types, ev.Type)
	}
	if got := strings.Join(types, " "); got != "exec.started exec.output exec.ended effect.declared" {
		t.Errorf("followed events = %s", got)
	}
}
