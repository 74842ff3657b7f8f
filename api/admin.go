package api

import (
	_ "embed"
	"net/http"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/wire"
)

func (s *Server) createTenant(w http.ResponseWriter, r *http.Request, c caller) error {
	var req TenantRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	t, err := s.ctrl.CreateTenant(r.Context(), req.Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, tenantOut(t))
	return nil
}

func (s *Server) listTenants(w http.ResponseWriter, r *http.Request, c caller) error {
	list, err := s.ctrl.ListTenants(r.Context())
	if err != nil {
		return err
	}
	out := wire.TenantList{Tenants: make([]wire.Tenant, len(list))}
	for i, t := range list {
		out.Tenants[i] = tenantOut(t)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, c caller) error {
	var req TokenRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if req.Format != "" && req.Format != "e2b" {
		return rung.Errorf(rung.ErrInvalid, "unknown token format %q (want \"e2b\" or none)", clip(req.Format))
	}
	t, err := s.ctrl.CreateToken(r.Context(), controller.TokenRequest{Tenant: req.Tenant, Admin: req.Admin, E2B: req.Format == "e2b"})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, TokenResponse{ID: t.ID, Tenant: t.Tenant, Token: t.Bearer, Admin: t.Admin})
	return nil
}

//go:embed openapi.json
var openapiJSON []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request, c caller) error {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openapiJSON)
	return nil
}
