package e2b

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"connectrpc.com/connect"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/e2b/envdpb/filesystem/filesystemconnect"
	"rung.dev/rung/e2b/envdpb/process/processconnect"
)

// EnvdVersion is the envd version rung advertises. The SDK enables a
// feature when the sandbox's envd is at least the version that brought it;
// 0.6.4 enables everything through watch's allowNetworkMounts (see
// shared/design/e2b-protocol.md, 3.5).
const EnvdVersion = "0.6.4"

// Config configures a [Server]. Controller is required.
type Config struct {
	Controller *controller.Controller
	Logger     *slog.Logger // nil discards
	// MaxFileBytes bounds one /files upload; default 1 GiB.
	MaxFileBytes int64
	// PreviewDomain is rung's preview domain (rung serve --preview-domain),
	// answered as a sandbox's domain so the SDK's getHost(port) names
	// {port}-{id}.{PreviewDomain}, which rung's API serves; "" leaves the
	// SDK's own domain (E2B_DOMAIN).
	PreviewDomain string
	// Key is the server's secret key; sandboxes' envd access tokens are
	// derived from it (secure.go), so they outlive a restart. Nil: a
	// random key, and tokens that last as long as the Server.
	Key []byte
	// Observe, when set, wraps each endpoint's handler for metrics and
	// traces, named by its route: "e2b " and the control plane's pattern
	// ("e2b POST /sandboxes/{id}/pause") or envd's method and path ("e2b
	// POST /process.Process/Start", "e2b GET /files"), "e2b unmatched"
	// for the rest. rung serve passes the API's (api.Server.Observed), so
	// both surfaces count and trace alike.
	Observe func(route string, h http.Handler) http.Handler
}

// Server serves the E2B control plane ([Server.API]) and envd
// ([Server.Envd]). It is safe for concurrent use. Close ends the
// processes it started.
type Server struct {
	ctrl *controller.Controller
	log  *slog.Logger
	cfg  Config
	api  *http.ServeMux
	envd *http.ServeMux
	// envdH is envd with CORS (cors.go).
	envdH http.Handler
	// tokenKey derives the sandboxes' envd access tokens (secure.go).
	tokenKey []byte
	// signers are the sandboxes a signed /files URL is checked against.
	signers signerTable
	// procs are the commands Start began, by sandbox.
	procs *processTable
	// watches are the WatchDir streams' and polling watchers' bounds, and
	// the polling watchers.
	watches *watchTable
	// stopping ends when Stop is called: every stream that follows (a
	// process's events, WatchDir) ends then.
	stopping context.Context
	stop     context.CancelFunc

	closeOnce sync.Once
}

// New returns a Server over cfg.Controller.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxFileBytes == 0 {
		cfg.MaxFileBytes = 1 << 30
	}
	s := &Server{ctrl: cfg.Controller, log: cfg.Logger, cfg: cfg, api: http.NewServeMux(), envd: http.NewServeMux(), procs: newProcessTable(), watches: newWatchTable(), tokenKey: tokenKeyOf(cfg.Key)}
	s.stopping, s.stop = context.WithCancel(context.Background())
	s.routeAPI()
	// Each known procedure is routed to its service; any other path,
	// including an unknown method of a known service, gets Connect's
	// unimplemented in its JSON shape, so the SDK never waits.
	// A message under compressMinBytes goes uncompressed even to a client
	// that accepts gzip (connect-go's and E2B's Python SDK do; the JS
	// SDK does not).
	small := connect.WithCompressMinBytes(compressMinBytes)
	_, ph := processconnect.NewProcessHandler(&processService{s: s}, small)
	for _, m := range []string{processconnect.ProcessListProcedure, processconnect.ProcessConnectProcedure,
		processconnect.ProcessStartProcedure, processconnect.ProcessUpdateProcedure, processconnect.ProcessStreamInputProcedure,
		processconnect.ProcessSendInputProcedure, processconnect.ProcessSendSignalProcedure, processconnect.ProcessCloseStdinProcedure} {
		s.envd.Handle("POST "+m, s.observe("POST "+m, ph))
	}
	_, fh := filesystemconnect.NewFilesystemHandler(&filesystemService{s: s}, small)
	for _, m := range []string{filesystemconnect.FilesystemStatProcedure, filesystemconnect.FilesystemMakeDirProcedure,
		filesystemconnect.FilesystemMoveProcedure, filesystemconnect.FilesystemListDirProcedure, filesystemconnect.FilesystemRemoveProcedure,
		filesystemconnect.FilesystemWatchDirProcedure, filesystemconnect.FilesystemCreateWatcherProcedure,
		filesystemconnect.FilesystemGetWatcherEventsProcedure, filesystemconnect.FilesystemRemoveWatcherProcedure} {
		s.envd.Handle("POST "+m, s.observe("POST "+m, fh))
	}
	s.envd.Handle("GET /files", s.observe("GET /files", http.HandlerFunc(s.readFile)))
	s.envd.Handle("POST /files", s.observe("POST /files", http.HandlerFunc(s.writeFiles)))
	s.envd.Handle("GET /health", s.observe("GET /health", http.HandlerFunc(s.health)))
	s.envd.Handle("/", s.observe("unmatched", http.HandlerFunc(unimplemented)))
	s.envdH = withCORS(s.envd)
	return s
}

// observe is h wrapped by Config.Observe as route (prefixed "e2b "), or
// h.
func (s *Server) observe(route string, h http.Handler) http.Handler {
	if s.cfg.Observe == nil {
		return h
	}
	return s.cfg.Observe("e2b "+route, h)
}

// API returns the control plane's handler (paths without a prefix:
// mount it with http.StripPrefix).
func (s *Server) API() http.Handler { return s.api }

// Envd returns envd's handler (paths without a prefix), CORS included.
// Mounted at the root's /files too, it serves the SDK's signed
// uploadUrl()/downloadUrl(), which drop E2B_SANDBOX_URL's path.
func (s *Server) Envd() http.Handler { return s.envdH }

// Handler serves both on one port as E2B's own proxy tells them apart: a
// request with an E2b-Sandbox-Id header is envd's, any other the control
// plane's, except that a browser's preflight for envd (which carries the
// names of the headers to come, not the headers) and a signed /files URL
// (which carries none) are envd's too.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("E2b-Sandbox-Id") != "" || isEnvdPreflight(r) || r.URL.Path == "/files" && r.URL.Query().Has("signature") {
			s.envdH.ServeHTTP(w, r)
			return
		}
		s.api.ServeHTTP(w, r)
	})
}

func isEnvdPreflight(r *http.Request) bool {
	if r.Method != http.MethodOptions {
		return false
	}
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		if strings.Contains(strings.ToLower(v), "e2b-sandbox-id") {
			return true
		}
	}
	return false
}

// Stop ends the streams that follow (Start's and Connect's process
// events, WatchDir) at once with Connect's unavailable, as a stopping
// daemon's first step: http.Server.Shutdown would otherwise wait its
// whole grace for them, as they end only with their processes or
// clients. The processes run on until Close. Stop is idempotent.
func (s *Server) Stop() { s.stop() }

// errStopping is what a stream that Stop ended answers.
var errStopping = connect.NewError(connect.CodeUnavailable, errors.New("rung is stopping"))

// Close kills the commands Start began that still run, removes the
// polling watchers, and waits for both. It is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.procs.close()
		s.watches.close()
	})
}

// unimplemented answers a path no service serves as Connect's
// unimplemented (HTTP 404 with Connect's error body, as connect-go does
// for an unknown method).
func unimplemented(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, map[string]string{"code": "unimplemented", "message": clip(r.URL.Path) + " is not implemented"})
}

func clip(s string) string {
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// caller is who made a request: the tenant its key speaks for and, on
// envd, the sandbox the E2b-Sandbox-Id header names.
type caller struct {
	tenant  rung.TenantID
	sandbox string
}

// health answers envd's GET /health: 204, or, as E2B's proxy does for a
// sandbox that is gone, 502 when the E2b-Sandbox-Id header names a
// sandbox the caller's tenant does not have (the SDK's isRunning reads
// 502 as false), or one that is paused. A request without the header is the daemon's own health.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("E2b-Sandbox-Id") != "" {
		if _, err := s.envdCaller(r.Context(), r.Header); err != nil {
			status := http.StatusBadGateway
			if code := rung.Code(err); code != rung.CodeNotFound && code != rung.CodeUnavailable {
				status = statusOf[rung.Code(err)]
			}
			writeJSON(w, status, map[string]any{"code": status, "message": message(err)})
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}
