package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"

	"rung.dev/rung"
)

// statusOf maps rung's error codes to the control plane's HTTP statuses
// (the same as rung's own API), which E2B's body repeats as a number.
var statusOf = map[string]int{
	rung.CodeInvalid:         http.StatusBadRequest,
	rung.CodeUnauthenticated: http.StatusUnauthorized,
	rung.CodePermission:      http.StatusForbidden,
	rung.CodeNotFound:        http.StatusNotFound,
	rung.CodeExists:          http.StatusConflict,
	rung.CodeConflict:        http.StatusConflict,
	rung.CodeLimit:           http.StatusTooManyRequests,
	rung.CodeTooLarge:        http.StatusRequestEntityTooLarge,
	rung.CodeUnavailable:     http.StatusServiceUnavailable,
	rung.CodeTimeout:         http.StatusGatewayTimeout,
	rung.CodeInternal:        http.StatusInternalServerError,
}

// apiError is the control plane's error body: the SDK branches on the
// body's numeric code (404 makes kill return false), not on the status.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// message returns what the caller may read of err: rung's classified
// messages are written for callers; an internal error says only that.
func message(err error) string {
	if rung.Code(err) == rung.CodeInternal {
		return "internal error"
	}
	return err.Error()
}

// writeAPIError writes err in E2B's shape and logs an internal one.
func (s *Server) writeAPIError(w http.ResponseWriter, r *http.Request, err error) {
	code := rung.Code(err)
	status := statusOf[code]
	if code == rung.CodeInternal {
		s.log.ErrorContext(r.Context(), "e2b request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, status, apiError{Code: status, Message: message(err)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// connectCode maps rung's error codes to Connect's, which the SDK turns
// into its own error classes (not_found: FileNotFoundError, and so on).
var connectCode = map[string]connect.Code{
	rung.CodeInvalid:         connect.CodeInvalidArgument,
	rung.CodeUnauthenticated: connect.CodeUnauthenticated,
	rung.CodePermission:      connect.CodePermissionDenied,
	rung.CodeNotFound:        connect.CodeNotFound,
	rung.CodeExists:          connect.CodeAlreadyExists,
	rung.CodeConflict:        connect.CodeFailedPrecondition,
	rung.CodeLimit:           connect.CodeResourceExhausted,
	rung.CodeTooLarge:        connect.CodeResourceExhausted,
	rung.CodeUnavailable:     connect.CodeUnavailable,
	rung.CodeTimeout:         connect.CodeDeadlineExceeded,
	rung.CodeInternal:        connect.CodeInternal,
}

// rpcError turns a controller error into a Connect error, logging an
// internal one. A context error of the call itself stays what it is.
func (s *Server) rpcError(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return connect.NewError(connect.CodeDeadlineExceeded, errors.New("deadline exceeded"))
	}
	if errors.Is(err, context.Canceled) {
		return connect.NewError(connect.CodeCanceled, errors.New("canceled"))
	}
	code := rung.Code(err)
	if code == rung.CodeInternal {
		s.log.LogAttrs(ctx, slog.LevelError, "e2b rpc failed", slog.Any("err", err))
	}
	return connect.NewError(connectCode[code], errors.New(message(err)))
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
