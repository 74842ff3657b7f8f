package api

import (
	"net/http"
	"strings"

	"rung.dev/rung"
)

// caller is who made a request.
type caller struct {
	tenant rung.TenantID
	admin  bool
}

// authenticate reads the request's bearer token and asks the controller
// whose it is ([controller.Controller.Authenticate], which caches verified
// tokens).
func (s *Server) authenticate(r *http.Request) (caller, error) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || tok == "" || len(tok) > 256 {
		return caller{}, rung.Errorf(rung.ErrUnauthenticated, "missing or malformed bearer token (Authorization: Bearer <token>)")
	}
	tenant, admin, err := s.ctrl.Authenticate(r.Context(), tok)
	if err != nil {
		return caller{}, err
	}
	return caller{tenant: tenant, admin: admin}, nil
}

// wsBearerPrefix marks the WebSocket subprotocol that carries a bearer
// token: a browser's WebSocket cannot set Authorization, so the dashboard
// offers ["rung", "rung.bearer.<token>"] and the server selects "rung"
// (the token is never echoed back).
const wsBearerPrefix = "rung.bearer."

// wsSubprotocol is the subprotocol the exec WebSocket selects when the
// client offers it.
const wsSubprotocol = "rung"

// authenticateWS authenticates a WebSocket route: by the Authorization
// header when there is one, else, on an upgrade request only, by a
// token offered as a "rung.bearer.<token>" subprotocol. Only routes
// marked ws use it, so the ports proxy, which passes subprotocols on to
// the sandbox, never takes a token that way.
func (s *Server) authenticateWS(r *http.Request) (caller, error) {
	if r.Header.Get("Authorization") != "" || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return s.authenticate(r)
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			tok, ok := strings.CutPrefix(strings.TrimSpace(p), wsBearerPrefix)
			if !ok {
				continue
			}
			if tok == "" || len(tok) > 256 {
				break
			}
			tenant, admin, err := s.ctrl.Authenticate(r.Context(), tok)
			if err != nil {
				return caller{}, err
			}
			return caller{tenant: tenant, admin: admin}, nil
		}
	}
	return caller{}, rung.Errorf(rung.ErrUnauthenticated, "missing or malformed bearer token (Authorization: Bearer <token>, or a %s<token> WebSocket subprotocol)", wsBearerPrefix)
}
