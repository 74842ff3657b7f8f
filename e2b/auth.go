package e2b

import (
	"context"
	"net/http"

	"rung.dev/rung"
)

// envdCaller authenticates an envd request: X-Access-Token is the
// envdAccessToken create returned (the tenant's key), E2b-Sandbox-Id the
// sandbox, which must be the tenant's: another tenant's sandbox is
// not_found, as a missing one; a paused one (see pause.go) unavailable.
func (s *Server) envdCaller(ctx context.Context, h http.Header) (caller, error) {
	tok := h.Get("X-Access-Token")
	if tok == "" {
		return caller{}, rung.Errorf(rung.ErrUnauthenticated, "missing X-Access-Token")
	}
	tenant, _, err := s.ctrl.Authenticate(ctx, tok)
	if err != nil {
		return caller{}, rung.Errorf(rung.ErrUnauthenticated, "invalid access token")
	}
	id := h.Get("E2b-Sandbox-Id")
	if id == "" {
		return caller{}, rung.Errorf(rung.ErrInvalid, "missing E2b-Sandbox-Id")
	}
	sb, err := s.ctrl.Get(ctx, tenant, id)
	if err != nil {
		return caller{}, err
	}
	if paused(sb) {
		return caller{}, rung.Errorf(rung.ErrUnavailable, "sandbox %s is paused: connect to it to resume it", sb.ID)
	}
	return caller{tenant: tenant, sandbox: id}, nil
}
