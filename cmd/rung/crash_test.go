package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// TestCrashRecovery SIGKILLs the daemon while execs are in flight and
// file writes are streaming, restarts it on the same data directory, and
// checks that the in-flight execs are reported lost (never re-run), that
// every acknowledged write is intact, and that the sandboxes still work.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping crash test in -short mode")
	}
	bin := rungBinary(t)
	data := t.TempDir()
	p := startServe(t, bin, data)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := client.New(p.addr, client.WithToken(p.token))
	const nsb, perSandbox = 3, 2
	var ids []string
	for i := range nsb {
		sb, err := c.Create(ctx, client.CreateRequest{Name: fmt.Sprintf("crash%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, string(sb.ID))
	}

	// In-flight execs: each blocks reading a stdin that never comes.
	var conns []*websocket.Conn
	for _, id := range ids {
		for range perSandbox {
			conn, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/v1/sandboxes/"+id+"/exec/ws",
				&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + p.token}}})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseNow()
			b, _ := json.Marshal(map[string]string{"command": "read x; echo never", "backend": "isolate"})
			if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, conn)
		}
	}
	started := map[string][]string{} // sandbox -> exec ids journaled as started
	for _, id := range ids {
		for len(started[id]) < perSandbox {
			started[id] = nil
			j, err := c.Journal(ctx, id, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range j {
				if e.Type == "exec.started" {
					var d struct{ Exec string }
					json.Unmarshal(e.Data, &d)
					started[id] = append(started[id], d.Exec)
				}
			}
			if ctx.Err() != nil {
				t.Fatal("execs never journaled as started")
			}
		}
	}

	// Concurrent writers, each to its own files; remember what was
	// acknowledged.
	var mu sync.Mutex
	acked := map[string]string{} // "sandbox path" -> content
	wctx, stopWriters := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; wctx.Err() == nil; i++ {
				id := ids[(w+i)%len(ids)]
				path := fmt.Sprintf("w%d/f%d", w, i)
				content := strings.Repeat(fmt.Sprintf("%d-%d;", w, i), 200)
				if _, err := c.WriteFile(wctx, id, path, strings.NewReader(content), 0); err != nil {
					return // the daemon died under us
				}
				mu.Lock()
				acked[id+" "+path] = content
				n := len(acked)
				mu.Unlock()
				if n == 40 {
					// Enough traffic: kill while writes are still in flight.
					p.cmd.Process.Kill()
				}
			}
		})
	}
	<-p.done
	stopWriters()
	wg.Wait()
	for _, conn := range conns {
		conn.CloseNow()
	}
	t.Logf("killed with %d acknowledged writes", len(acked))

	p = startServe(t, bin, data)
	defer p.stop(t)
	c = client.New(p.addr, client.WithToken(p.token))
	for _, id := range ids {
		j, err := c.Journal(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		lost := map[string]bool{}
		ended := map[string]bool{}
		for _, e := range j {
			switch e.Type {
			case "exec.lost":
				var d struct{ Execs []string }
				json.Unmarshal(e.Data, &d)
				for _, x := range d.Execs {
					lost[x] = true
				}
			case "exec.ended":
				var d struct{ Exec string }
				json.Unmarshal(e.Data, &d)
				ended[d.Exec] = true
			}
		}
		for _, x := range started[id] {
			if !lost[x] || ended[x] {
				t.Errorf("sandbox %s: in-flight exec %s lost=%v ended=%v; want reported lost and never ended", id, x, lost[x], ended[x])
			}
		}
	}
	for key, want := range acked {
		id, path, _ := strings.Cut(key, " ")
		r, err := c.ReadFile(ctx, id, path)
		if err != nil {
			t.Errorf("acknowledged write %s: %v", key, err)
			continue
		}
		got, _ := io.ReadAll(r)
		r.Close()
		if string(got) != want {
			t.Errorf("acknowledged write %s: %d bytes, want %d", key, len(got), len(want))
		}
	}
	for _, id := range ids {
		res, err := c.Exec(ctx, id, client.ExecRequest{Command: "echo alive", Backend: rung.BackendIsolate})
		if err != nil || res.Stdout != "alive\n" {
			t.Errorf("exec after restart in %s: %+v, %v", id, res, err)
		}
		// The lost execs count as isolate execs, and so does the new one:
		// the counts are in the store, not in the daemon that was killed.
		sb, err := c.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if want := (rung.ExecCounts{Isolate: perSandbox + 1}); sb.Execs != want {
			t.Errorf("sandbox %s after the restart: execs %+v, want %+v", id, sb.Execs, want)
		}
	}
	if !strings.Contains(p.logs.String(), "start-up reconciliation fixed things") {
		t.Errorf("restarted daemon did not report its reconciliation; logs:\n%s", p.logs)
	}
}
