package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/coder/websocket"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// execWS runs one exec over a WebSocket: the client sends an
// [ExecRequest], then optional [WSInput] messages (stdin, and for a PTY
// exec resizes); the server sends [Frame] chunks and a final "exit" or
// "error" frame, then closes. A bad input message ends the exec with an
// invalid_argument error frame; the connection's end hangs up a PTY exec.
func (s *Server) execWS(w http.ResponseWriter, r *http.Request, c caller) error {
	// A browser that offered subprotocols fails the handshake unless one
	// is selected: "rung" when offered (the dashboard offers it beside
	// its token), none for other clients.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{wsSubprotocol}})
	if err != nil {
		return nil // Accept has written the response
	}
	defer conn.CloseNow()
	conn.SetReadLimit(s.cfg.MaxJSONBytes)
	ctx := r.Context()
	send := func(v any) {
		b, _ := json.Marshal(v)
		conn.Write(ctx, websocket.MessageText, b)
	}
	fail := func(err error) error {
		d := s.errorDetail(ctx, err)
		send(Frame{Type: "error", Error: &d})
		conn.Close(websocket.StatusNormalClosure, "")
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, execWSTimeout)
	_, msg, err := conn.Read(rctx)
	cancel()
	if err != nil {
		return fail(rung.Errorf(rung.ErrInvalid, "no exec request received"))
	}
	var body ExecRequest
	if err := strictJSON(msg, &body); err != nil {
		return fail(err)
	}
	req, err := s.execRequest(body)
	if err != nil {
		return fail(err)
	}
	stdinR, stdinW := io.Pipe()
	if body.Stdin != "" && req.PTY == nil {
		go func() { // ends when the data is consumed or the pipe is closed below
			stdinW.Write([]byte(body.Stdin))
		}()
	}
	opt := controller.ExecOptions{
		Stream: func(ch controller.Chunk) { send(Frame{Type: ch.Stream, Seq: ch.Seq, Data: string(ch.Data)}) },
	}
	var input chan controller.TermInput
	if req.PTY != nil {
		// The request's stdin is typed first (req.Stdin), then the
		// messages, in order with the resizes between them.
		input = make(chan controller.TermInput)
		opt.Input = input
	} else {
		opt.Stdin = stdinR
	}
	// A bad input message ends the exec; its error is what the client
	// gets instead of the exit frame.
	ectx, cancelExec := context.WithCancelCause(ctx)
	defer cancelExec(nil)
	execDone := make(chan struct{})
	readerDone := make(chan struct{})
	go func() { // stops when the connection closes, the client ends stdin, or a message is bad
		defer close(readerDone)
		defer stdinW.CloseWithError(io.EOF)
		for {
			_, m, err := conn.Read(ctx)
			if err != nil {
				if input != nil {
					// The terminal's user is gone: as a hangup, the exec ends.
					cancelExec(nil)
				}
				return
			}
			if err := wsInput(m, input, stdinW, execDone); err != nil {
				cancelExec(err)
				return
			}
		}
	}()
	res, err := s.ctrl.Exec(ectx, c.tenant, r.PathValue("id"), req, opt)
	close(execDone)
	stdinR.Close()
	if cause := context.Cause(ectx); errors.Is(cause, rung.ErrInvalid) {
		err = cause
	}
	if err != nil {
		fail(err)
	} else {
		out := resultOut(res)
		out.Type = "exit"
		send(out)
		conn.Close(websocket.StatusNormalClosure, "")
	}
	conn.CloseNow()
	<-readerDone
	return nil
}

// wsInput acts on one input message: stdin to stdinW, or to input for a
// PTY exec (input not nil), with its resizes. It returns an ErrInvalid
// error naming what is wrong with a bad message. A send to input gives up
// once execDone is closed.
func wsInput(m []byte, input chan<- controller.TermInput, stdinW *io.PipeWriter, execDone <-chan struct{}) error {
	var in WSInput
	if err := strictJSON(m, &in); err != nil {
		return err
	}
	toTerminal := func(ti controller.TermInput) {
		select {
		case input <- ti:
		case <-execDone:
		}
	}
	switch in.Type {
	case "stdin":
		if input != nil {
			toTerminal(controller.TermInput{Data: []byte(in.Data)})
		} else {
			stdinW.Write([]byte(in.Data))
		}
	case "stdin_close":
		if input != nil {
			return rung.Errorf(rung.ErrInvalid, "stdin_close: a terminal has no end of input; send ^D (\\u0004) as stdin")
		}
		stdinW.Close()
	case "resize":
		if input == nil {
			return rung.Errorf(rung.ErrInvalid, "resize: the exec has no pty")
		}
		size := rung.TermSize{Cols: in.Cols, Rows: in.Rows}
		if err := size.Check(); err != nil {
			return fmt.Errorf("resize: %w", err)
		}
		toTerminal(controller.TermInput{Resize: &size})
	default:
		return rung.Errorf(rung.ErrInvalid, "unknown message type %q (want stdin, stdin_close or resize)", clip(in.Type))
	}
	return nil
}

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return rung.Errorf(rung.ErrInvalid, "malformed JSON: %s", clip(err.Error()))
	}
	return nil
}
