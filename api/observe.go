package api

import (
	"net/http"
	"time"
)

// observed wraps h to tell Config.Observe, once h returns, route (a
// pattern, never the request's path), the status code h wrote and how
// long it took. Without Observe it is h.
func (s *Server) observed(route string, h http.HandlerFunc) http.HandlerFunc {
	if s.cfg.Observe == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			// A panic the handler's recovery re-raised (ErrAbortHandler)
			// still counts, as the client's aborted request.
			s.cfg.Observe(route, sw.code(), time.Since(start))
		}()
		h(sw, r)
	}
}

// statusWriter remembers the status code a handler writes. Unwrap lets
// http.ResponseController, and the WebSocket upgrade, reach the
// underlying writer's Flush and Hijack.
type statusWriter struct {
	http.ResponseWriter
	status int // 0 until WriteHeader or Write
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 || w.status < 200 && code >= 200 { // 1xx informational headers come before the real one
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap returns the underlying writer (see http.ResponseController).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code is the status the client got: 200 when the handler wrote nothing.
func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
