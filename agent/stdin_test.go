package agent_test

import (
	"context"
	"io"
	"testing"
	"time"

	"rung.dev/rung/agent"
)

// A streamed stdin reaches the command while it runs: each line comes
// back before stdin ends, as an interactive command needs.
func TestExecStreamsStdin(t *testing.T) {
	c := startAgent(t)
	pr, pw := io.Pipe()
	lines := make(chan string, 4)
	done := make(chan agent.Exit, 1)
	go func() {
		exit, err := c.ExecStream(t.Context(), agent.ExecRequest{Command: "while read l; do echo got $l; done", Dir: "/"}, pr, func(f agent.Frame) {
			lines <- string(f.Data)
		})
		if err != nil {
			t.Error(err)
		}
		done <- exit
	}()
	for _, l := range []string{"one", "two"} {
		pw.Write([]byte(l + "\n"))
		select {
		case got := <-lines:
			if got != "got "+l+"\n" {
				t.Fatalf("got %q for %q", got, l)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer to %q while stdin is open", l)
		}
	}
	pw.Close()
	if exit := <-done; exit.Code != 0 {
		t.Errorf("exit %+v after stdin's end", exit)
	}
}

// A command that exits without reading its stdin ends the exec at once,
// though the stream is still open, and the client goes on working.
func TestExecStreamCommandExitsFirst(t *testing.T) {
	c := startAgent(t)
	pr, pw := io.Pipe()
	defer pw.Close()
	res := make(chan error, 1)
	go func() {
		exit, err := c.ExecStream(t.Context(), agent.ExecRequest{Command: "exit 3", Dir: "/"}, pr, nil)
		if err == nil && exit.Code != 3 {
			t.Errorf("exit %+v, want 3", exit)
		}
		res <- err
	}()
	select {
	case err := <-res:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exec waited for a stdin that never ends")
	}
	exit, err := c.Exec(t.Context(), agent.ExecRequest{Command: "echo again", Dir: "/"}, nil)
	if err != nil || exit.Code != 0 {
		t.Errorf("next exec: %+v, %v", exit, err)
	}
}

// Inline stdin and a stream cannot both be given.
func TestExecStdinAndStreamRefused(t *testing.T) {
	c := startAgent(t)
	pr, pw := io.Pipe()
	defer pw.Close()
	_, err := c.ExecStream(t.Context(), agent.ExecRequest{Command: "cat", Stdin: []byte("x"), Dir: "/"}, pr, nil)
	if err == nil {
		t.Error("stdin and stdin_stream together were accepted")
	}
}

// An exec whose context ends while its streamed stdin is open and the
// command has said nothing yet returns at once: the request body, blocked
// reading that stdin, is ended with it. (net/http's transport waits for
// the body's writer before it returns a failed round trip; the E2B
// surface's stdin commands hung a sandbox's delete, and the daemon's stop,
// on it.)
func TestExecStreamCanceledWithStdinOpen(t *testing.T) {
	c := startAgent(t)
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	res := make(chan error, 1)
	go func() {
		_, err := c.ExecStream(ctx, agent.ExecRequest{Command: "sleep 30", Dir: "/", Env: []string{"PATH=/bin"}}, pr, nil)
		res <- err
	}()
	select {
	case err := <-res:
		if err == nil {
			t.Fatal("ExecStream with a cancelled context returned no error")
		}
	case <-time.After(time.Minute):
		t.Fatal("ExecStream did not return when its context ended with stdin open")
	}
	got := run(t, c, agent.ExecRequest{Command: "echo ok"})
	if got.Stdout != "ok\n" {
		t.Errorf("after cancel: stdout %q", got.Stdout)
	}
}
