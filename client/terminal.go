package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"rung.dev/rung"
	"rung.dev/rung/wire"
)

// Terminal is a command running on a pseudo-terminal in a sandbox, over
// the exec WebSocket (see [Client.ExecPTY]). Write, Resize, Wait and
// Close are safe for concurrent use.
type Terminal struct {
	ws   *wsConn
	done chan struct{} // closed once res or err is set
	res  ExecResult
	err  error
}

// ExecPTY starts req on a pseudo-terminal of size in sandbox id, in the
// container tier (the isolate tier has no terminal), and copies the
// terminal's output (one stream: stderr is merged, as a terminal shows
// it) to out as it arrives, from one goroutine. Write types at the
// terminal and Resize changes its size; Wait returns the result. A
// request the server refuses (a size outside 1..1000, backend isolate)
// is Wait's error, with the API's code. ctx bounds the WebSocket's
// opening only; Close ends the exec. The caller must call Wait or Close.
func (c *Client) ExecPTY(ctx context.Context, id string, req ExecRequest, size rung.TermSize, out io.Writer) (*Terminal, error) {
	req.PTY = &size
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	ws, err := c.dialWS(ctx, sbPath(id, "/exec/ws"))
	if err != nil {
		return nil, err
	}
	if err := ws.writeText(b); err != nil {
		ws.Close()
		return nil, fmt.Errorf("exec pty: %w", err)
	}
	t := &Terminal{ws: ws, done: make(chan struct{})}
	go t.read(out) // ends at the exit or error frame, or when the connection closes
	return t, nil
}

func (t *Terminal) read(out io.Writer) {
	defer close(t.done)
	for {
		m, err := t.ws.readMessage()
		if err != nil {
			t.err = fmt.Errorf("exec pty: connection ended without an exit frame: %w", err)
			return
		}
		var f wire.Frame
		if err := json.Unmarshal(m, &f); err != nil {
			t.err = fmt.Errorf("exec pty: bad frame: %w", err)
			return
		}
		switch f.Type {
		case "stdout", "stderr":
			io.WriteString(out, f.Data)
		case "exit":
			t.err = json.Unmarshal(m, &t.res)
			return
		case "error":
			if f.Error == nil {
				t.err = errors.New("exec pty: error frame without error")
				return
			}
			t.err = &Error{Status: 200, Code: f.Error.Code, Message: f.Error.Message}
			return
		}
	}
}

// Write types p at the terminal (0x03 is ^C, 0x04 ^D). p goes as a JSON
// string: bytes that are not UTF-8 arrive as U+FFFD.
func (t *Terminal) Write(p []byte) (int, error) {
	b, _ := json.Marshal(wire.WSInput{Type: "stdin", Data: string(p)})
	if err := t.ws.writeText(b); err != nil {
		return 0, fmt.Errorf("exec pty: %w", err)
	}
	return len(p), nil
}

// Resize sets the terminal's size; the command gets SIGWINCH. A size
// outside 1..1000 ends the exec with an invalid_argument error (Wait's).
func (t *Terminal) Resize(size rung.TermSize) error {
	b, _ := json.Marshal(wire.WSInput{Type: "resize", Cols: size.Cols, Rows: size.Rows})
	if err := t.ws.writeText(b); err != nil {
		return fmt.Errorf("exec pty: %w", err)
	}
	return nil
}

// Wait waits for the command to end and returns its result (Stdout holds
// nothing: the output went to ExecPTY's out), or the error that ended the
// exec without one. It closes the connection.
func (t *Terminal) Wait() (ExecResult, error) {
	<-t.done
	t.ws.Close()
	return t.res, t.err
}

// Close hangs up: the server ends the command (its result is journaled
// as canceled) and Wait returns.
func (t *Terminal) Close() error {
	err := t.ws.Close()
	<-t.done
	return err
}
