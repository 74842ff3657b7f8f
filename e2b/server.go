package e2b

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"

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
	// procs are the commands Start began, by sandbox.
	procs *processTable

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
	s := &Server{ctrl: cfg.Controller, log: cfg.Logger, cfg: cfg, api: http.NewServeMux(), envd: http.NewServeMux(), procs: newProcessTable()}
	s.routeAPI()
	// Each known procedure is routed to its service; any other path,
	// including an unknown method of a known service, gets Connect's
	// unimplemented in its JSON shape, so the SDK never waits.
	_, ph := processconnect.NewProcessHandler(&processService{s: s})
	for _, m := range []string{processconnect.ProcessListProcedure, processconnect.ProcessConnectProcedure,
		processconnect.ProcessStartProcedure, processconnect.ProcessUpdateProcedure, processconnect.ProcessStreamInputProcedure,
		processconnect.ProcessSendInputProcedure, processconnect.ProcessSendSignalProcedure, processconnect.ProcessCloseStdinProcedure} {
		s.envd.Handle("POST "+m, ph)
	}
	_, fh := filesystemconnect.NewFilesystemHandler(&filesystemService{s: s})
	for _, m := range []string{filesystemconnect.FilesystemStatProcedure, filesystemconnect.FilesystemMakeDirProcedure,
		filesystemconnect.FilesystemMoveProcedure, filesystemconnect.FilesystemListDirProcedure, filesystemconnect.FilesystemRemoveProcedure,
		filesystemconnect.FilesystemWatchDirProcedure, filesystemconnect.FilesystemCreateWatcherProcedure,
		filesystemconnect.FilesystemGetWatcherEventsProcedure, filesystemconnect.FilesystemRemoveWatcherProcedure} {
		s.envd.Handle("POST "+m, fh)
	}
	s.envd.HandleFunc("GET /files", s.readFile)
	s.envd.HandleFunc("POST /files", s.writeFiles)
	s.envd.HandleFunc("GET /health", s.health)
	s.envd.HandleFunc("/", unimplemented)
	return s
}

// API returns the control plane's handler (paths without a prefix:
// mount it with http.StripPrefix).
func (s *Server) API() http.Handler { return s.api }

// Envd returns envd's handler (paths without a prefix).
func (s *Server) Envd() http.Handler { return s.envd }

// Handler serves both on one port as E2B's own proxy tells them apart: a
// request with an E2b-Sandbox-Id header is envd's, any other the control
// plane's.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("E2b-Sandbox-Id") != "" {
			s.envd.ServeHTTP(w, r)
			return
		}
		s.api.ServeHTTP(w, r)
	})
}

// Close kills the commands Start began that still run and waits for
// them. It is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(s.procs.close)
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
// sandbox that is gone or paused, 502 when the E2b-Sandbox-Id header
// names a sandbox the caller's tenant does not have or has paused (the
// SDK's isRunning reads 502 as false). A request without the header is
// the daemon's own health.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("E2b-Sandbox-Id") != "" {
		c, err := s.envdCaller(r.Context(), r.Header)
		if err == nil {
			var sb rung.Sandbox
			if sb, err = s.ctrl.Get(r.Context(), c.tenant, c.sandbox); err == nil && paused(sb) {
				err = rung.Errorf(rung.ErrNotFound, "sandbox %s is paused", sb.ID)
			}
		}
		if err != nil {
			status := http.StatusBadGateway
			if rung.Code(err) != rung.CodeNotFound {
				status = statusOf[rung.Code(err)]
			}
			writeJSON(w, status, map[string]any{"code": status, "message": message(err)})
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}
