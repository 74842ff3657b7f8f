package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"rung.dev/rung"
	"rung.dev/rung/api"
	"rung.dev/rung/client"
)

// screen is what a terminal has shown; a test waits for text in it.
type screen struct {
	mu      sync.Mutex // guards the fields below
	buf     strings.Builder
	changed chan struct{} // closed and replaced on every write
}

func newScreen() *screen { return &screen{changed: make(chan struct{})} }

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func (s *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	s.waitForFunc(t, func(got string) bool { return strings.Contains(got, want) })
}

// waitForFunc waits until ok holds for what the terminal shows; a hang
// fails after a generous bound.
func (s *screen) waitForFunc(t *testing.T, ok func(string) bool) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		s.mu.Lock()
		done, ch := ok(s.buf.String()), s.changed
		s.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("the terminal shows %q, not what the test waits for", s.String())
		}
	}
}

// A PTY exec through the Go SDK (the exec WebSocket): a command auto
// routing would run in-process goes to the container, saying why; it has
// a terminal of the size asked, input is echoed and read, a resize
// reaches it, and the journal records it as any exec.
func TestPTYExec(t *testing.T) {
	c, _, _ := startContainerDaemonWith(t, DaemonConfig{})
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := newScreen()
	term, err := c.ExecPTY(ctx, string(sb.ID), client.ExecRequest{Command: "tty; stty size; read a; echo got:$a; read b; stty size"},
		rung.TermSize{Cols: 91, Rows: 29}, out)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	out.waitFor(t, "29 91\r\n")
	if got := out.String(); !regexp.MustCompile(`^/dev/pts/\d+\r\n29 91\r\n$`).MatchString(got) {
		t.Errorf("tty and size: %q", got)
	}
	term.Write([]byte("hello\n"))
	out.waitFor(t, "hello\r\ngot:hello\r\n")
	if err := term.Resize(rung.TermSize{Cols: 140, Rows: 45}); err != nil {
		t.Fatal(err)
	}
	term.Write([]byte("\n"))
	out.waitFor(t, "45 140\r\n")
	res, err := term.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Backend != rung.BackendContainer || !strings.Contains(res.Reason, "no terminal") {
		t.Errorf("result %+v: want exit 0 in the container, the reason naming the terminal", res)
	}
	started := journalData(t, c, string(sb.ID), "exec.started")
	last := started[len(started)-1]
	if pty, _ := last["pty"].(map[string]any); pty["cols"] != 91.0 || pty["rows"] != 29.0 || last["backend"] != "container" {
		t.Errorf("exec.started %v: want the pty's size and backend container", last)
	}
	if ended := journalEnded(t, c, string(sb.ID), res.ExecID); ended["exit_code"] != 0.0 {
		t.Errorf("exec.ended %v", ended)
	}
}

// Bad PTY requests and messages get named invalid_argument errors, and
// the daemon keeps serving.
func TestPTYExecBadInput(t *testing.T) {
	c, d, addr := startContainerDaemonWith(t, DaemonConfig{})
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The plain HTTP exec has no way to type or resize: refused.
	_, err = c.Exec(ctx, string(sb.ID), client.ExecRequest{Command: "tty", PTY: &rung.TermSize{Cols: 80, Rows: 24}})
	if !errors.Is(err, rung.ErrInvalid) || !strings.Contains(err.Error(), "WebSocket") {
		t.Errorf("HTTP exec with pty: %v, want invalid_argument pointing to the WebSocket", err)
	}
	tests := []struct {
		name string
		req  api.ExecRequest
		msgs []string // sent after the request once the command runs
		want string   // in the error message
	}{
		{"zero cols", api.ExecRequest{Command: "cat", PTY: &rung.TermSize{Cols: 0, Rows: 24}}, nil, "cols 0"},
		{"too many rows", api.ExecRequest{Command: "cat", PTY: &rung.TermSize{Cols: 80, Rows: 1001}}, nil, "rows 1001"},
		{"isolate", api.ExecRequest{Command: "echo hi", Backend: rung.BackendIsolate, PTY: &rung.TermSize{Cols: 80, Rows: 24}}, nil, "no terminal"},
		{"bad resize", api.ExecRequest{Command: "echo up; cat", PTY: &rung.TermSize{Cols: 80, Rows: 24}}, []string{`{"type":"resize","cols":5000,"rows":10}`}, "resize: terminal cols 5000"},
		{"unknown type", api.ExecRequest{Command: "echo up; cat", PTY: &rung.TermSize{Cols: 80, Rows: 24}}, []string{`{"type":"paste"}`}, `unknown message type "paste"`},
		{"malformed", api.ExecRequest{Command: "echo up; cat", PTY: &rung.TermSize{Cols: 80, Rows: 24}}, []string{`{"type":`}, "malformed JSON"},
		{"stdin_close", api.ExecRequest{Command: "echo up; cat", PTY: &rung.TermSize{Cols: 80, Rows: 24}}, []string{`{"type":"stdin_close"}`}, "no end of input"},
		{"resize without pty", api.ExecRequest{Command: "echo up; cat", Backend: rung.BackendContainer}, []string{`{"type":"resize","cols":80,"rows":24}`}, "no pty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			conn, _, err := websocket.Dial(ctx, "ws://"+addr+"/v1/sandboxes/"+string(sb.ID)+"/exec/ws",
				&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.Token}}})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseNow()
			b, _ := json.Marshal(tc.req)
			conn.Write(ctx, websocket.MessageText, b)
			sent := false
			for {
				_, m, err := conn.Read(ctx)
				if err != nil {
					t.Fatalf("read: %v (no error frame)", err)
				}
				var f api.Frame
				json.Unmarshal(m, &f)
				switch {
				case f.Type == "stdout" && !sent:
					// The command runs: now the bad messages.
					for _, msg := range tc.msgs {
						conn.Write(ctx, websocket.MessageText, []byte(msg))
					}
					sent = true
				case f.Type == "error":
					if f.Error.Code != "invalid_argument" || !strings.Contains(f.Error.Message, tc.want) {
						t.Errorf("error %+v, want invalid_argument with %q", f.Error, tc.want)
					}
					return
				case f.Type == "exit":
					t.Fatalf("exit frame %s, want an error", m)
				}
			}
		})
	}
	if res, err := c.Exec(ctx, string(sb.ID), client.ExecRequest{Command: "echo still", Backend: rung.BackendContainer}); err != nil || string(res.Stdout) != "still\n" {
		t.Errorf("after the bad input: %+v, %v", res, err)
	}
}

// A background process on a PTY through the API: its output is the
// terminal's, typed input and a resize reach it in the order sent, its
// stdin has no end, and a resize is refused for a process without a
// terminal and for a bad size.
func TestPTYProcess(t *testing.T) {
	c, _, _ := startContainerDaemonWith(t, DaemonConfig{})
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	p, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "read a; stty size; echo got:$a; tty", PTY: &rung.TermSize{Cols: 64, Rows: 16}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ResizeProcess(ctx, id, p.ID, rung.TermSize{Cols: 0, Rows: 5}); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("resize to 0x5: %v, want invalid_argument", err)
	}
	if err := c.WriteProcessStdin(ctx, id, p.ID, nil, true); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("closing a terminal's stdin: %v, want invalid_argument", err)
	}
	if err := c.ResizeProcess(ctx, id, p.ID, rung.TermSize{Cols: 150, Rows: 50}); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteProcessStdin(ctx, id, p.ID, []byte("in\n"), false); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	exit, err := c.ProcessOutput(ctx, id, p.ID, 0, true, func(f client.OutputFrame) error {
		if f.Stream != "stdout" {
			t.Errorf("frame on %s", f.Stream)
		}
		out.Write(f.Data)
		return nil
	})
	if err != nil || exit == nil || exit.Code != 0 {
		t.Fatalf("exit %+v, %v; output %q", exit, err, out.String())
	}
	if got := out.String(); !regexp.MustCompile(`^in\r\n50 150\r\ngot:in\r\n/dev/pts/\d+\r\n$`).MatchString(got) {
		t.Errorf("output %q", got)
	}
	plain, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "sleep 1000"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.SignalProcess(ctx, id, plain.ID, "SIGKILL")
	if err := c.ResizeProcess(ctx, id, plain.ID, rung.TermSize{Cols: 80, Rows: 24}); !errors.Is(err, rung.ErrInvalid) || !strings.Contains(err.Error(), "no terminal") {
		t.Errorf("resize without a terminal: %v, want invalid_argument", err)
	}
	if _, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "true", PTY: &rung.TermSize{Cols: 1001, Rows: 5}}); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("process with cols 1001: %v, want invalid_argument", err)
	}
}
