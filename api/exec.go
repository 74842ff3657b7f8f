package api

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

func (s *Server) execRequest(req ExecRequest) (rung.ExecRequest, error) {
	timeout, err := msDuration(req.TimeoutMS, "timeout_ms")
	if err != nil {
		return rung.ExecRequest{}, err
	}
	return rung.ExecRequest{Command: req.Command, Env: req.Env, Dir: req.Cwd, Stdin: []byte(req.Stdin), Backend: req.Backend, User: req.User, Timeout: timeout, PTY: req.PTY, Login: req.Login}, nil
}

// exec runs a command to completion and returns its result, or, with
// ?stream=ndjson, streams [Frame] lines as output arrives.
func (s *Server) exec(w http.ResponseWriter, r *http.Request, c caller) error {
	var body ExecRequest
	if err := s.decode(w, r, &body); err != nil {
		return err
	}
	if body.PTY != nil {
		return rung.Errorf(rung.ErrInvalid, "pty: a terminal exec takes input and resizes while it runs; use the WebSocket endpoint (GET /v1/sandboxes/{id}/exec/ws)")
	}
	req, err := s.execRequest(body)
	if err != nil {
		return err
	}
	switch mode := r.URL.Query().Get("stream"); mode {
	case "":
	case "ndjson":
		return s.execNDJSON(w, r, c, req)
	default:
		return rung.Errorf(rung.ErrInvalid, "stream=%q: want ndjson (or use the WebSocket endpoint)", clip(mode))
	}
	res, err := s.ctrl.Exec(r.Context(), c.tenant, r.PathValue("id"), req, controller.ExecOptions{})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resultOut(res))
	return nil
}

// ndjsonWriter writes one JSON value per line and flushes it.
type ndjsonWriter struct {
	mu  sync.Mutex // guards w: the exec's pump and the handler both write
	w   http.ResponseWriter
	enc *json.Encoder
	rc  *http.ResponseController
}

func newNDJSON(w http.ResponseWriter) *ndjsonWriter {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &ndjsonWriter{w: w, enc: enc, rc: http.NewResponseController(w)}
}

func (n *ndjsonWriter) send(v any) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.enc.Encode(v); err != nil {
		return err
	}
	return n.rc.Flush()
}

func (s *Server) execNDJSON(w http.ResponseWriter, r *http.Request, c caller, req rung.ExecRequest) error {
	// Errors before the exec starts get a normal error response; the
	// stream starts with the first chunk or the result.
	var nd *ndjsonWriter
	started := func() *ndjsonWriter {
		if nd == nil {
			nd = newNDJSON(w)
			w.WriteHeader(http.StatusOK)
		}
		return nd
	}
	var once sync.Mutex // serializes started() between the pump and this goroutine
	res, err := s.ctrl.Exec(r.Context(), c.tenant, r.PathValue("id"), req, controller.ExecOptions{
		Stream: func(ch controller.Chunk) {
			once.Lock()
			out := started()
			once.Unlock()
			out.send(Frame{Type: ch.Stream, Seq: ch.Seq, Data: string(ch.Data)})
		},
	})
	once.Lock()
	defer once.Unlock()
	if err != nil {
		if nd == nil {
			return err
		}
		d := s.errorDetail(r.Context(), err)
		nd.send(Frame{Type: "error", Error: &d})
		return nil
	}
	out := resultOut(res)
	out.Type = "exit"
	started().send(out)
	return nil
}

// execWSTimeout bounds how long the WebSocket waits for the request.
const execWSTimeout = 30 * time.Second
