package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// Tracer is a [controller.Tracer] that can also continue a client's
// trace: package tracing implements it, and [Config].Tracer takes it.
type Tracer interface {
	controller.Tracer
	// Continue returns ctx carrying, as the remote parent of the spans
	// started under it, the span that h's W3C trace context headers
	// (traceparent, tracestate) name; ctx itself when they name none or
	// are malformed.
	Continue(ctx context.Context, h http.Header) context.Context
}

// Attribute keys of a request's span, OpenTelemetry's HTTP semantic
// conventions' names (the tenant and sandbox keys are the controller's).
const (
	attrMethod = "http.request.method"
	attrRoute  = "http.route"
	attrStatus = "http.response.status_code"
)

// observed wraps h to tell Config.Observe, once h returns, route (a
// pattern, never the request's path), the status code h wrote and how
// long it took, and, with Config.Tracer, to make the request a span
// (see requestSpan). Without either it is h.
func (s *Server) observed(route string, h http.HandlerFunc) http.HandlerFunc {
	if s.cfg.Observe == nil && s.cfg.Tracer == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		var sp controller.Span
		if s.cfg.Tracer != nil {
			r, sp = s.requestSpan(r, route)
		}
		defer func() {
			// A panic the handler's recovery re-raised (ErrAbortHandler)
			// still counts, as the client's aborted request.
			code := sw.code()
			if s.cfg.Observe != nil {
				s.cfg.Observe(route, code, time.Since(start))
			}
			if sp != nil {
				sp.Set(slog.Int(attrStatus, code))
				var err error
				if code >= 500 { // a 4xx is the client's, not a failed span (the conventions' rule for servers)
					err = errors.New(http.StatusText(code))
				}
				sp.End(err)
			}
		}()
		h(sw, r)
	}
}

// Observed is h with this server's metrics and traces (Config.Observe,
// Config.Tracer) as route: for handlers served beside the API, such as
// the E2B surface's (e2b.Config.Observe). Without either it is h.
func (s *Server) Observed(route string, h http.Handler) http.Handler {
	return s.observed(route, h.ServeHTTP)
}

// spanKey is the context key of a request's span, for traceTenant.
type spanKey struct{}

// requestSpan starts r's span, named after its route (a pattern, never
// the path), a child of the span r's traceparent header names if any,
// and returns r carrying it. The sandbox id or name in the path is an
// attribute when it is a valid one.
func (s *Server) requestSpan(r *http.Request, route string) (*http.Request, controller.Span) {
	name := route
	if !strings.Contains(route, " ") { // "/mcp", "preview", "unmatched": no method in the pattern
		name = "HTTP " + route
	}
	ctx := s.cfg.Tracer.Continue(r.Context(), r.Header)
	ctx, sp := s.cfg.Tracer.Start(ctx, name, time.Time{},
		slog.String(attrMethod, spanMethod(r.Method)), slog.String(attrRoute, route))
	if strings.Contains(route, " /v1/sandboxes/{id}") {
		switch ref := r.PathValue("id"); {
		case rung.SandboxID(ref).Valid():
			sp.Set(slog.String(controller.AttrSandbox, ref))
		case rung.ValidName(ref):
			sp.Set(slog.String(controller.AttrSandboxName, ref))
		}
	}
	return r.WithContext(context.WithValue(ctx, spanKey{}, sp)), sp
}

// traceTenant adds the caller's tenant to r's span, if it has one.
func traceTenant(r *http.Request, tenant rung.TenantID) {
	if sp, ok := r.Context().Value(spanKey{}).(controller.Span); ok {
		sp.Set(slog.String(controller.AttrTenant, string(tenant)))
	}
}

// spanMethod is method as a span's attribute: one of HTTP's methods, or
// "_OTHER" (the conventions' word), never a client's arbitrary token.
func spanMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "_OTHER"
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

// Flush sends what is buffered (and the headers, 200 if none were
// written), for handlers that assert http.Flusher, as connect-go's
// streams do (the E2B surface).
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	http.NewResponseController(w.ResponseWriter).Flush()
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
