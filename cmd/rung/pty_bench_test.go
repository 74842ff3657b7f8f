package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"rung.dev/rung"
	"rung.dev/rung/api"
	"rung.dev/rung/client"
)

// BenchmarkPTYFirstByte is the time from opening the exec WebSocket to
// the first byte of output of `echo hi` in a running container, on a
// pseudo-terminal beside the same exec without one (both over the same
// WebSocket, backend container), so one run gives what the terminal
// costs. It reports p50 and p99 in µs.
func BenchmarkPTYFirstByte(b *testing.B) {
	c, d, addr := startContainerDaemonWith(b, DaemonConfig{})
	sb, err := c.Create(b.Context(), client.CreateRequest{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Exec(b.Context(), string(sb.ID), client.ExecRequest{Command: "true", Backend: rung.BackendContainer}); err != nil {
		b.Fatal(err) // the container runs before anything is timed
	}
	url := "ws://" + addr + "/v1/sandboxes/" + string(sb.ID) + "/exec/ws"
	opts := &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.Token}}}
	for _, tc := range []struct {
		name string
		pty  *rung.TermSize
	}{
		{"container", nil},
		{"container-pty", &rung.TermSize{Cols: 80, Rows: 24}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			req, _ := json.Marshal(api.ExecRequest{Command: "echo hi", Backend: rung.BackendContainer, PTY: tc.pty})
			var lat []time.Duration
			for b.Loop() {
				lat = append(lat, firstByte(b, url, opts, req))
			}
			reportLatency(b, lat)
		})
	}
}

// firstByte runs one exec over a new WebSocket and returns the time from
// the dial to its first output frame; it reads on to the exit frame.
func firstByte(b *testing.B, url string, opts *websocket.DialOptions, req []byte) time.Duration {
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	t0 := time.Now()
	conn, _, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, req); err != nil {
		b.Fatal(err)
	}
	var first time.Duration
	for {
		_, m, err := conn.Read(ctx)
		if err != nil {
			b.Fatalf("read: %v", err)
		}
		var f api.Frame
		json.Unmarshal(m, &f)
		switch f.Type {
		case "stdout", "stderr":
			if first == 0 {
				first = time.Since(t0)
			}
		case "exit":
			if first == 0 {
				b.Fatalf("exit without output: %s", m)
			}
			return first
		case "error":
			b.Fatalf("error frame: %s", m)
		}
	}
}
