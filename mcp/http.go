package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/internal/inproc"
)

// HandlerConfig configures a [Handler]. API and Authenticate are
// required.
type HandlerConfig struct {
	// API is rung's HTTP API handler: every tool call becomes requests to
	// it, in-process, with the caller's bearer token, so they pass the
	// same checks as any client's.
	API http.Handler
	// Authenticate says whose a bearer token is (rung's tenant), or fails
	// with rung.ErrUnauthenticated; the API's own check
	// (controller.Authenticate). A session is bound to the token that
	// opened it.
	Authenticate func(ctx context.Context, token string) (rung.TenantID, error)
	Logger       *slog.Logger // nil discards
	// SessionTimeout closes a session after this long without a request;
	// default 30 minutes.
	SessionTimeout time.Duration
}

// Handler serves MCP's Streamable HTTP transport (one endpoint: POST
// messages, GET a stream of the server's, DELETE to end a session). Every
// request needs the bearer token of a rung tenant (401 without one); a
// session answers only requests with the token that opened it (403
// otherwise). It is safe for concurrent use; Close ends it.
type Handler struct {
	srv  *sdk.Server
	h    http.Handler
	life context.Context // canceled by Close: ends requests in flight
	stop context.CancelFunc
	once sync.Once
}

// maxMessage bounds one message a client sends (a file_write's content
// with it): the SDK's bound for a line of its stdio transport, so both
// transports take the same messages.
const maxMessage = sdk.DefaultMaxLineLength

// tokenExtra is the key in a verified token's TokenInfo.Extra under
// which the handler keeps what a tool call needs to call the API.
const tokenExtra = "rung"

// caller is what a verified request carries to the tools.
type caller struct {
	token string
	base  string // the URL the request came to, without /mcp
}

// NewHandler returns a Handler for cfg.
func NewHandler(cfg HandlerConfig) *Handler {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 30 * time.Minute
	}
	hc := &http.Client{Transport: inproc.Transport{Handler: cfg.API}}
	clientFor := func(extra *sdk.RequestExtra) (*client.Client, error) {
		var c caller
		if extra != nil && extra.TokenInfo != nil {
			c, _ = extra.TokenInfo.Extra[tokenExtra].(caller)
		}
		if c.token == "" {
			return nil, rung.Errorf(rung.ErrUnauthenticated, "no bearer token")
		}
		return client.New(c.base, client.WithToken(c.token), client.WithHTTPClient(hc)), nil
	}
	h := &Handler{srv: newServer(log, clientFor)}
	h.life, h.stop = context.WithCancel(context.Background())
	verify := func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		tenant, err := cfg.Authenticate(ctx, token)
		switch {
		case errors.Is(err, rung.ErrUnauthenticated):
			return nil, fmt.Errorf("%w: unauthenticated: unknown bearer token", auth.ErrInvalidToken)
		case err != nil:
			log.ErrorContext(ctx, "mcp: authenticate", "err", err)
			return nil, errors.New("internal error")
		}
		sum := sha256.Sum256([]byte(token))
		scheme := "http"
		if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
			scheme = "https"
		}
		return &auth.TokenInfo{
			// The SDK refuses a session's requests from another UserID:
			// this one names the token, not just the tenant.
			UserID: string(tenant) + "/" + hex.EncodeToString(sum[:8]),
			Extra:  map[string]any{tokenExtra: caller{token: token, base: scheme + "://" + r.Host}},
		}, nil
	}
	sh := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return h.srv },
		&sdk.StreamableHTTPOptions{Logger: log, SessionTimeout: cfg.SessionTimeout, MaxRequestBodyBytes: maxMessage})
	h.h = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(sh)
	return h
}

// ServeHTTP serves one request of the Streamable HTTP transport.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A session's GET stream lasts as long as the session: Close ends
	// it, so that a daemon's shutdown does not wait for clients.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.life, cancel)
	defer stop()
	h.h.ServeHTTP(w, r.WithContext(ctx))
}

// Close ends every session and every request in flight; later requests
// find no session. It is idempotent.
func (h *Handler) Close() {
	h.once.Do(func() {
		h.stop()
		for ss := range h.srv.Sessions() {
			ss.Close()
		}
	})
}
