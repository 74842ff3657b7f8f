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
