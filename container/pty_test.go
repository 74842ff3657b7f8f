package container_test

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
)

// term is a PTY exec in a container, run in the background, whose output
// a test waits on.
type term struct {
	in     chan agent.Input
	exited chan agent.Exit // receives the exit once

	mu      sync.Mutex // guards the fields below
	out     bytes.Buffer
	changed chan struct{} // closed and replaced on every frame
}

func startTerm(t *testing.T, c *container.Container, req agent.ExecRequest) *term {
	t.Helper()
	tm := &term{in: make(chan agent.Input), exited: make(chan agent.Exit, 1), changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // ends with the exec, or at cleanup
		defer close(done)
		exit, err := c.ExecPTY(ctx, req, tm.in, func(f agent.Frame) {
			tm.mu.Lock()
			defer tm.mu.Unlock()
			if f.Stream != "stdout" {
				tm.out.WriteString("<" + f.Stream + ">")
			}
			tm.out.Write(f.Data)
			close(tm.changed)
			tm.changed = make(chan struct{})
		})
		if err != nil {
			t.Errorf("ExecPTY(%q): %v", req.Command, err)
		}
		tm.exited <- exit
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return tm
}

func (tm *term) String() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

// waitFor waits until the terminal shows want; a hang fails after a
// generous bound.
func (tm *term) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		tm.mu.Lock()
		ok, ch := strings.Contains(tm.out.String(), want), tm.changed
		tm.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("no %q on the terminal; it shows %q", want, tm.String())
		}
	}
}

func (tm *term) send(t *testing.T, m agent.Input) {
	t.Helper()
	select {
	case tm.in <- m:
	case <-time.After(60 * time.Second):
		t.Fatalf("input %+v not taken", m)
	}
}

func (tm *term) wait(t *testing.T) agent.Exit {
	t.Helper()
	select {
	case e := <-tm.exited:
		return e
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit; the terminal shows %q", tm.String())
	}
	return agent.Exit{}
}

// A PTY exec in a container (under RUNG_TEST_RUNTIME's runtime) gets a
// terminal of the container's own /dev/pts, of the size asked, owned by
// the user it runs as; input is echoed and read, a resize reaches it, and
// ^C interrupts a sleep.
func TestPTY(t *testing.T) {
	e := newEnv(t)
	c, _ := e.start(t, rung.Size{})
	user := &agent.Credential{UID: 1000, GID: 1000}

	tm := startTerm(t, c, agent.ExecRequest{Command: `tty; stty size; stat -c %u "$(tty)"; read a; echo got:$a; read b; stty size`,
		User: user, PTY: &agent.TermSize{Cols: 90, Rows: 33}})
	tm.waitFor(t, "33 90\r\n1000\r\n")
	if got := tm.String(); !regexp.MustCompile(`^/dev/pts/\d+\r\n33 90\r\n1000\r\n$`).MatchString(got) {
		t.Errorf("tty, size and owner: %q", got)
	}
	tm.send(t, agent.Input{Data: []byte("hello\n")})
	tm.waitFor(t, "hello\r\ngot:hello\r\n")
	tm.send(t, agent.Input{Resize: &agent.TermSize{Cols: 101, Rows: 42}})
	tm.send(t, agent.Input{Data: []byte("\n")})
	tm.waitFor(t, "42 101\r\n")
	if exit := tm.wait(t); exit.Code != 0 {
		t.Errorf("exit %+v; terminal %q", exit, tm.String())
	}

	if e.runtime.Name == "runsc" {
		// Known difference: gVisor's line discipline (runsc 20221219 here)
		// echoes ^C but sends no SIGINT to the foreground process group
		// (google/gvisor#4823); a terminal's user interrupts with kill.
		return
	}
	// The trap runs once the interrupted sleep has ended, whenever ^C
	// comes: a shell that catches SIGINT in the moment between two
	// commands only marks it pending, and runs the trap after the next
	// (a second at most).
	tm = startTerm(t, c, agent.ExecRequest{Command: "trap 'echo interrupted; exit 130' INT; echo ready; while :; do sleep 1; done",
		PTY: &agent.TermSize{Cols: 80, Rows: 24}})
	tm.waitFor(t, "ready\r\n")
	tm.send(t, agent.Input{Data: []byte{0x03}})
	tm.waitFor(t, "interrupted\r\n")
	if exit := tm.wait(t); exit.Code != 130 {
		t.Errorf("after ^C: exit %+v; terminal %q", exit, tm.String())
	}
}
