// Package api is rung's HTTP API under /v1: routing, authentication
// (bearer token to tenant), JSON encoding and the error-code table. It
// holds no business logic: every request becomes one controller call,
// scoped to the caller's tenant.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httputil"
	"runtime/debug"
	"strings"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// Config configures a [Server]. Controller is required.
type Config struct {
	Controller *controller.Controller
	Logger     *slog.Logger // nil discards
	// MaxJSONBytes bounds a JSON request body; default 8 MiB.
	MaxJSONBytes int64
	// MaxFileBytes bounds one file or tar upload; default 1 GiB.
	MaxFileBytes int64
	// MaxImportBytes bounds one snapshot archive upload; default 1 TiB
	// (the tenant's snapshot byte cap bounds what it may take on disk).
	MaxImportBytes int64
	// PreviewDomain, when set, serves {port}-{id}.{PreviewDomain} as a
	// sandbox's port (host-based preview URLs; a wildcard DNS name and,
	// for HTTPS, a wildcard certificate in front of the daemon).
	PreviewDomain string
	// PublicURL is the API's address as clients reach it, for the URLs
	// of shares; "" takes each request's scheme and Host.
	PublicURL string
	// TrafficToken, when set, checks an E2B traffic access token (the
	// E2b-Traffic-Access-Token header of a request for a sandbox's
	// port) and names the tenant it opens sandbox's ports for (package
	// e2b's Server.TrafficTenant); nil refuses the header.
	TrafficToken func(token string, sandbox rung.SandboxID) (rung.TenantID, bool)
	// MCP, when set, is served at /mcp, outside /v1 and the route table
	// (it authenticates its own requests: package mcp's Handler); a
	// preview host's /mcp is still the sandbox's.
	MCP http.Handler
	// Metrics, when set, serves GET /metrics (Prometheus's text format)
	// to admin tokens; nil answers not_found.
	Metrics http.Handler
	// Dashboard, when set, is served at "/" and its assets under "/ui/"
	// (GET and HEAD; package dashboard's Handler): the web dashboard, a
	// page that calls /v1 like any client. A preview host's "/" is still
	// the sandbox's.
	Dashboard http.Handler
	// Observe, when set, is told of every request once it is answered:
	// its route pattern ("GET /v1/sandboxes/{id}"; "/mcp" for the MCP
	// endpoint, "preview" for a preview host, "dashboard" for the
	// dashboard's files, "unmatched" when no route matched, never the
	// path), status code and time. It must be quick and safe for
	// concurrent use.
	Observe func(route string, code int, took time.Duration)
	// Tracer, when set, makes every request a span named after its
	// route, continuing the trace of a W3C traceparent header, and hands
	// it to the controller (whose Config.Tracer should be the same), so
	// an exec's span is its request's child. Nil traces nothing.
	Tracer Tracer
}

// Server serves the API. It is safe for concurrent use.
type Server struct {
	ctrl  *controller.Controller
	log   *slog.Logger
	cfg   Config
	mux   *http.ServeMux
	ports *httputil.ReverseProxy // the ports API's proxy (ports.go)
	// stopping ends when Stop is called: the streams that only follow
	// (events, a process's output) end then.
	stopping context.Context
	stop     context.CancelFunc
}

// route is one endpoint. Routes is the table the OpenAPI test checks.
type route struct {
	pattern string
	admin   bool
	public  bool
	ws      bool // a WebSocket: the token may come as a subprotocol (authenticateWS)
	h       func(s *Server, w http.ResponseWriter, r *http.Request, c caller) error
}

var routes = []route{
	{pattern: "GET /v1/openapi.json", public: true, h: (*Server).openAPI},
	{pattern: "POST /v1/sandboxes", h: (*Server).createSandbox},
	{pattern: "GET /v1/sandboxes", h: (*Server).listSandboxes},
	{pattern: "GET /v1/sandboxes/{id}", h: (*Server).getSandbox},
	{pattern: "PATCH /v1/sandboxes/{id}", h: (*Server).updateSandbox},
	{pattern: "DELETE /v1/sandboxes/{id}", h: (*Server).deleteSandbox},
	{pattern: "POST /v1/sandboxes/{id}/exec", h: (*Server).exec},
	{pattern: "GET /v1/sandboxes/{id}/exec/ws", ws: true, h: (*Server).execWS},
	{pattern: "GET /v1/sandboxes/{id}/files", h: (*Server).readFile},
	{pattern: "PUT /v1/sandboxes/{id}/files", h: (*Server).writeFile},
	{pattern: "DELETE /v1/sandboxes/{id}/files", h: (*Server).removeFile},
	{pattern: "GET /v1/sandboxes/{id}/files/stat", h: (*Server).statFile},
	{pattern: "GET /v1/sandboxes/{id}/files/list", h: (*Server).listFiles},
	{pattern: "POST /v1/sandboxes/{id}/files/mkdir", h: (*Server).mkdir},
	{pattern: "POST /v1/sandboxes/{id}/files/move", h: (*Server).move},
	{pattern: "GET /v1/sandboxes/{id}/files/tar", h: (*Server).downloadTar},
	{pattern: "PUT /v1/sandboxes/{id}/files/tar", h: (*Server).uploadTar},
	{pattern: "GET /v1/sandboxes/{id}/journal", h: (*Server).journal},
	{pattern: "GET /v1/sandboxes/{id}/events", h: (*Server).events},
	{pattern: "POST /v1/sandboxes/{id}/effects", h: (*Server).declareEffect},
	{pattern: "GET /v1/sandboxes/{id}/effects", h: (*Server).listEffects},
	{pattern: "GET /v1/sandboxes/{id}/metrics", h: (*Server).sandboxMetrics},
	{pattern: "GET /v1/usage", h: (*Server).currentUsage},
	{pattern: "POST /v1/sandboxes/{id}/start", h: (*Server).startContainer},
	{pattern: "POST /v1/sandboxes/{id}/stop", h: (*Server).stopContainer},
	{pattern: "GET /v1/sandboxes/{id}/ready", h: (*Server).waitReady},
	{pattern: "POST /v1/sandboxes/{id}/processes", h: (*Server).startProcess},
	{pattern: "GET /v1/sandboxes/{id}/processes", h: (*Server).listProcesses},
	{pattern: "GET /v1/sandboxes/{id}/processes/{pid}/output", h: (*Server).processOutput},
	{pattern: "POST /v1/sandboxes/{id}/processes/{pid}/signal", h: (*Server).signalProcess},
	{pattern: "POST /v1/sandboxes/{id}/processes/{pid}/stdin", h: (*Server).processStdin},
	{pattern: "POST /v1/sandboxes/{id}/processes/{pid}/resize", h: (*Server).resizeProcess},
	{pattern: "POST /v1/sandboxes/{id}/snapshots", h: (*Server).takeSnapshot},
	{pattern: "POST /v1/sandboxes/{id}/restore", h: (*Server).rollback},
	{pattern: "POST /v1/sandboxes/{id}/fork", h: (*Server).forkSandbox},
	{pattern: "POST /v1/sandboxes/{id}/pause", h: (*Server).pause},
	{pattern: "POST /v1/sandboxes/{id}/resume", h: (*Server).resume},
	{pattern: "GET /v1/snapshots", h: (*Server).listSnapshots},
	{pattern: "POST /v1/snapshots/import", h: (*Server).importSnapshot},
	{pattern: "GET /v1/snapshots/{id}", h: (*Server).getSnapshot},
	{pattern: "DELETE /v1/snapshots/{id}", h: (*Server).deleteSnapshot},
	{pattern: "POST /v1/snapshots/{id}/pin", h: (*Server).pinSnapshot},
	{pattern: "POST /v1/snapshots/{id}/fork", h: (*Server).forkSnapshot},
	{pattern: "GET /v1/snapshots/{id}/export", h: (*Server).exportSnapshot},
	{pattern: "PUT /v1/secrets/{name}", h: (*Server).putSecret},
	{pattern: "GET /v1/secrets", h: (*Server).listSecrets},
	{pattern: "GET /v1/secrets/{name}", h: (*Server).getSecret},
	{pattern: "DELETE /v1/secrets/{name}", h: (*Server).deleteSecret},
	{pattern: "POST /v1/sandboxes/{id}/shares", h: (*Server).sharePort},
	{pattern: "GET /v1/sandboxes/{id}/shares", h: (*Server).listShares},
	{pattern: "DELETE /v1/shares/{id}", h: (*Server).revokeShare},
	{pattern: "POST /v1/tenants", admin: true, h: (*Server).createTenant},
	{pattern: "GET /v1/tenants", admin: true, h: (*Server).listTenants},
	{pattern: "POST /v1/tokens", admin: true, h: (*Server).createToken},
	{pattern: "GET /metrics", admin: true, h: (*Server).metrics},
}

func init() {
	// The path-based ports route, one per method it proxies; it
	// authenticates itself (a bearer token or a share token).
	for _, m := range portMethods {
		routes = append(routes, route{pattern: m + " /v1/sandboxes/{id}/ports/{port}/{path...}", public: true, h: (*Server).proxyPort})
	}
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.MaxJSONBytes <= 0 {
		cfg.MaxJSONBytes = 8 << 20
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = 1 << 30
	}
	if cfg.MaxImportBytes <= 0 {
		cfg.MaxImportBytes = 1 << 40
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{ctrl: cfg.Controller, log: slog.New(requestIDHandler{log.Handler()}), cfg: cfg, mux: http.NewServeMux()}
	s.stopping, s.stop = context.WithCancel(context.Background())
	s.ports = s.newPortProxy()
	for _, rt := range routes {
		s.mux.HandleFunc(rt.pattern, s.wrap(rt))
	}
	if cfg.MCP != nil {
		s.mux.HandleFunc("/mcp", s.observed("/mcp", cfg.MCP.ServeHTTP))
	}
	if cfg.Dashboard != nil {
		for _, p := range []string{"GET /{$}", "GET /index.html", "GET /ui/"} {
			s.mux.HandleFunc(p, s.observed("dashboard", cfg.Dashboard.ServeHTTP))
		}
	}
	s.mux.HandleFunc("/", s.observed("unmatched", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, rung.Errorf(rung.ErrNotFound, "no such endpoint %s %s", r.Method, clip(r.URL.Path)))
	}))
	return s
}

// Stop ends the streams that only follow (GET …/events?follow=true, a
// process's output with follow=true) at once, as a stopping daemon's
// first step: http.Server.Shutdown would otherwise wait its whole grace
// for them, since they end only when their clients go. Requests that do
// work (an exec in flight) are left to finish. Stop is idempotent.
func (s *Server) Stop() { s.stop() }

// following returns ctx that also ends when Stop is called, and its
// release.
func (s *Server) following(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(s.stopping, cancel)
	return ctx, func() { unhook(); cancel() }
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id, port, ok := s.previewTarget(r.Host); ok {
		s.observed("preview", func(w http.ResponseWriter, r *http.Request) { s.servePreview(w, r, id, port) })(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// wrap adds the request ID, panic recovery, authentication and error
// writing around a route's handler.
func (s *Server) wrap(rt route) http.HandlerFunc {
	return s.observed(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
		id := newRequestID()
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		w.Header().Set("X-Request-Id", id)
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.ErrorContext(r.Context(), "handler panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				s.writeError(w, r, fmt.Errorf("panic: %v", p))
			}
		}()
		var c caller
		if !rt.public {
			auth := s.authenticate
			if rt.ws {
				auth = s.authenticateWS
			}
			var err error
			if c, err = auth(r); err != nil {
				s.writeError(w, r, err)
				return
			}
			if s.cfg.Tracer != nil {
				traceTenant(r, c.tenant)
			}
			if rt.admin && !c.admin {
				s.writeError(w, r, rung.Errorf(rung.ErrPermission, "this endpoint needs an admin token"))
				return
			}
		}
		if err := rt.h(s, w, r, c); err != nil {
			s.writeError(w, r, err)
		}
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// decode reads a JSON body into v: it must be application/json, at most
// MaxJSONBytes, one object, without unknown fields.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return rung.Errorf(rung.ErrInvalid, "content type %q: want application/json", clip(ct))
		}
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxJSONBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonErr(err, s.cfg.MaxJSONBytes)
	}
	if dec.More() {
		return rung.Errorf(rung.ErrInvalid, "request body holds more than one JSON value")
	}
	if _, err := io.Copy(io.Discard, body); err != nil {
		return jsonErr(err, s.cfg.MaxJSONBytes)
	}
	return nil
}

func jsonErr(err error, max int64) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &rung.LimitError{Limit: "request_bytes", Max: max, TooLarge: true}
	}
	if errors.Is(err, io.EOF) {
		return rung.Errorf(rung.ErrInvalid, "request body is empty: want a JSON object")
	}
	return rung.Errorf(rung.ErrInvalid, "malformed JSON body: %s", clip(err.Error()))
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
