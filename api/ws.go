package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/coder/websocket"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// execWS runs one exec over a WebSocket: the client sends an
// [ExecRequest], then optional [WSInput] stdin messages; the server sends
// [Frame] chunks and a final "exit" or "error" frame, then closes.
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
	if body.Stdin != "" {
		go func() { // ends when the data is consumed or the pipe is closed below
			stdinW.Write([]byte(body.Stdin))
		}()
	}
	readerDone := make(chan struct{})
	go func() { // stops when the connection closes or the client ends stdin
		defer close(readerDone)
		for {
			_, m, err := conn.Read(ctx)
			if err != nil {
				stdinW.CloseWithError(io.EOF)
				return
			}
			var in WSInput
			if json.Unmarshal(m, &in) != nil {
				continue
			}
			switch in.Type {
			case "stdin":
				stdinW.Write([]byte(in.Data))
			case "stdin_close":
				stdinW.Close()
			}
		}
	}()
	res, err := s.ctrl.Exec(ctx, c.tenant, r.PathValue("id"), req, controller.ExecOptions{
		Stdin:  stdinR,
		Stream: func(ch controller.Chunk) { send(Frame{Type: ch.Stream, Seq: ch.Seq, Data: string(ch.Data)}) },
	})
	stdinR.Close()
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

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return rung.Errorf(rung.ErrInvalid, "malformed JSON: %s", clip(err.Error()))
	}
	return nil
}
