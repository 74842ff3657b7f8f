package api

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"log/slog"
	"net/http"

	"rung.dev/rung"
)

// statusOf is the one table mapping error classes (by wire code) to HTTP
// status codes. A test pins it.
var statusOf = map[string]int{
	rung.CodeInvalid:         http.StatusBadRequest,
	rung.CodeUnauthenticated: http.StatusUnauthorized,
	rung.CodePermission:      http.StatusForbidden,
	rung.CodeNotFound:        http.StatusNotFound,
	rung.CodeExists:          http.StatusConflict,
	rung.CodeConflict:        http.StatusConflict,
	rung.CodeTooLarge:        http.StatusRequestEntityTooLarge,
	rung.CodeLimit:           http.StatusTooManyRequests,
	rung.CodeUnavailable:     http.StatusServiceUnavailable,
	rung.CodeTimeout:         http.StatusGatewayTimeout,
	rung.CodeInternal:        http.StatusInternalServerError,
}

// Status returns the HTTP status for err's class.
func Status(err error) int { return statusOf[rung.Code(err)] }

// errorDetail returns what the caller may see of err: internal errors
// become "internal error (request req_…)" and are logged in full.
func (s *Server) errorDetail(ctx context.Context, err error) ErrorDetail {
	code := rung.Code(err)
	if errors.Is(err, context.DeadlineExceeded) {
		code = rung.CodeTimeout
	}
	if code == rung.CodeInternal {
		id := requestID(ctx)
		s.log.ErrorContext(ctx, "internal error", "err", err)
		return ErrorDetail{Code: code, Message: "internal error (request " + id + ")"}
	}
	return ErrorDetail{Code: code, Message: err.Error()}
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	d := s.errorDetail(r.Context(), err)
	status := statusOf[d.Code]
	if d.Code != rung.CodeInternal {
		s.log.DebugContext(r.Context(), "request error", "code", d.Code, "err", err)
	}
	writeJSON(w, status, ErrorBody{Error: d})
}

type requestIDKey struct{}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

var idEnc = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func newRequestID() string {
	var b [10]byte
	rand.Read(b[:])
	return "req_" + idEnc.EncodeToString(b[:])
}

// requestIDHandler adds request_id to log records of a request's context.
type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := requestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(a)}
}

func (h requestIDHandler) WithGroup(n string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(n)}
}
