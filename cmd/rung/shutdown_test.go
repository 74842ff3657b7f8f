package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/controller"
)

// errSeen ends a followed stream's callback once it saw what it waited for.
var errSeen = errors.New("seen")

// TestShutdownEndsFollowedStreams: a graceful stop ends the streams that
// only follow (a sandbox's events, the E2B SDK's process events) at once,
// and still lets an exec in flight finish. The exec here waits for a file
// the test writes only after both streams have ended, so a stop that
// waited for the streams would hold them, and the exec, until its grace
// ran out (and the exec would be cut rather than answered).
func TestShutdownEndsFollowedStreams(t *testing.T) {
	d, addr := startDaemonWith(t, DaemonConfig{Data: t.TempDir(), NoContainers: true})
	c := client.New(addr, client.WithToken(d.Token))
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{Name: "stopping"})
	if err != nil {
		t.Fatal(err)
	}

	// The E2B SDK's view: a command whose Start stream stays open.
	e := e2bTenant(t, c, addr, "acme")
	status, b := e.api("POST", "/v2/sandboxes", map[string]any{"templateID": "lite", "allow_internet_access": false, "timeout": 300})
	if status != http.StatusCreated {
		t.Fatalf("E2B create: %d %s", status, b)
	}
	var esb struct{ SandboxID string }
	json.Unmarshal(b, &esb)
	e2bEnd := make(chan string, 1) // the Start stream's end message
	go func() {
		req := e.envdReq("POST", "/process.Process/Start", esb.SandboxID,
			bytes.NewReader(envelope(`{"process":{"cmd":"sleep","args":["600"],"envs":{}},"stdin":false}`)))
		req.Header.Set("Content-Type", "application/connect+json")
		req.Header.Set("Connect-Protocol-Version", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			e2bEnd <- "request: " + err.Error()
			return
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for len(raw) >= 5 {
			flags, n := raw[0], binary.BigEndian.Uint32(raw[1:5])
			if int(n) > len(raw)-5 {
				break
			}
			if flags&2 != 0 {
				e2bEnd <- string(raw[5 : 5+n])
				return
			}
			raw = raw[5+n:]
		}
		e2bEnd <- "no end message"
	}()
	// Its exec.started says the command runs (and its stream is open).
	acme, err := c.CreateToken(ctx, "acme", false)
	if err != nil {
		t.Fatal(err)
	}
	ectx, cancel := context.WithTimeout(ctx, time.Minute)
	err = client.New(addr, client.WithToken(acme.Token)).Events(ectx, esb.SandboxID, client.EventsOptions{Follow: true, JournalOnly: true}, func(ev client.Event) error {
		if ev.Type == string(rung.EntryExecStarted) {
			return errSeen
		}
		return nil
	})
	cancel()
	if !errors.Is(err, errSeen) {
		t.Fatalf("the E2B command never started: %v", err)
	}

	// A followed events stream, and an exec that runs until told.
	started := make(chan struct{})
	eventsEnd := make(chan error, 1)
	go func() {
		var once bool
		eventsEnd <- c.Events(ctx, string(sb.ID), client.EventsOptions{Follow: true, JournalOnly: true}, func(ev client.Event) error {
			if ev.Type == string(rung.EntryExecStarted) && !once {
				once = true
				close(started)
			}
			return nil
		})
	}()
	type result struct {
		res client.ExecResult
		err error
	}
	execDone := make(chan result, 1)
	go func() {
		res, err := c.Exec(ctx, string(sb.ID), client.ExecRequest{Command: "until [ -e /workspace/go ]; do sleep 0.01; done; echo finished", Backend: rung.BackendIsolate})
		execDone <- result{res, err}
	}()
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the exec never started")
	}

	stopped := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		stopped <- d.Shutdown(sctx)
	}()
	// Generous bounds: they only catch a stop that waits for the streams
	// (it would wait the 2 minutes above).
	select {
	case err := <-eventsEnd:
		if err != nil {
			t.Errorf("the followed events stream ended with %v, want a clean end", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("the followed events stream did not end when the daemon began to stop")
	}
	select {
	case end := <-e2bEnd:
		if !strings.Contains(end, `"unavailable"`) || !strings.Contains(end, "rung is stopping") {
			t.Errorf("the E2B Start stream ended with %s, want unavailable: rung is stopping", end)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("the E2B Start stream did not end when the daemon began to stop")
	}
	select {
	case r := <-execDone:
		t.Fatalf("the exec ended before it was told to: %+v %v", r.res, r.err)
	default:
	}
	// The exec in flight still gets its answer.
	if _, err := d.ctrl.WriteFile(ctx, sb.Tenant, string(sb.ID), controller.WriteRequest{Path: "/workspace/go"}, strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
	r := <-execDone
	if r.err != nil || r.res.Stdout != "finished\n" || r.res.ExitCode != 0 {
		t.Errorf("the exec in flight at the stop: %+v %v, want finished and exit 0", r.res, r.err)
	}
	if err := <-stopped; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}
