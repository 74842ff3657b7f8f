package e2b

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"

	"rung.dev/rung"
)

// envdCaller authenticates an envd request: X-Access-Token is the
// envdAccessToken create returned (secure.go: it opens that sandbox
// only) or the tenant's API key, E2b-Sandbox-Id the sandbox, which must be the tenant's: another tenant's sandbox is
// not_found, as a missing one; a paused one (see pause.go) unavailable.
func (s *Server) envdCaller(ctx context.Context, h http.Header) (caller, error) {
	tok := h.Get("X-Access-Token")
	if tok == "" {
		return caller{}, rung.Errorf(rung.ErrUnauthenticated, "missing X-Access-Token")
	}
	id := h.Get("E2b-Sandbox-Id")
	if id == "" {
		return caller{}, rung.Errorf(rung.ErrInvalid, "missing E2b-Sandbox-Id")
	}
	var tenant rung.TenantID
	if strings.HasPrefix(tok, accessPrefix) {
		t, ok := s.sandboxToken(tok, id)
		if !ok {
			return caller{}, rung.Errorf(rung.ErrUnauthenticated, "invalid access token")
		}
		tenant = t
	} else {
		t, _, err := s.ctrl.Authenticate(ctx, tok)
		if err != nil {
			return caller{}, rung.Errorf(rung.ErrUnauthenticated, "invalid access token")
		}
		tenant = t
	}
	sb, err := s.ctrl.Get(ctx, tenant, id)
	if err == nil && s.ctrl.Deleting(ctx, tenant, sb.ID) {
		// Being killed: gone for envd, as a VM being torn down.
		err = rung.Errorf(rung.ErrNotFound, "sandbox %s not found", sb.ID)
	}
	if err != nil {
		return caller{}, err
	}
	if paused(sb) {
		return caller{}, rung.Errorf(rung.ErrUnavailable, "sandbox %s is paused: connect to it to resume it", sb.ID)
	}
	s.signers.add(tenant, sb.ID)
	return caller{tenant: tenant, sandbox: id}, nil
}

// filesCaller authenticates a /files request: by its headers, as every
// envd call, or, without X-Access-Token, by its URL's signature for
// operation op ("read", "write").
func (s *Server) filesCaller(r *http.Request, op string) (caller, error) {
	if r.Header.Get("X-Access-Token") == "" && r.URL.Query().Has("signature") {
		return s.signedCaller(r.Context(), r.URL.Query(), op)
	}
	return s.envdCaller(r.Context(), r.Header)
}

// envdUser is the user an envd request names in its Basic Authorization
// header (the SDK's `user` option: "root:" base64-encoded), or "".
func envdUser(h http.Header) string {
	v, ok := strings.CutPrefix(h.Get("Authorization"), "Basic ")
	if !ok {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil {
		return ""
	}
	user, _, _ := strings.Cut(string(b), ":")
	return user
}
