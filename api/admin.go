package api

import (
	_ "embed"
	"net/http"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
	"rung.dev/rung/wire"
)

func (s *Server) createTenant(w http.ResponseWriter, r *http.Request, c caller) error {
	var req TenantRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	t := store.Tenant{ID: req.Name, CreatedAt: time.Now().UTC()}
	if err := s.st.CreateTenant(r.Context(), t); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, tenantOut(t))
	return nil
}

func (s *Server) listTenants(w http.ResponseWriter, r *http.Request, c caller) error {
	list, err := s.st.ListTenants(r.Context())
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
	if !rung.ValidName(string(req.Tenant)) {
		return rung.Errorf(rung.ErrInvalid, "invalid tenant name %q", clip(string(req.Tenant)))
	}
	tok := NewToken()
	sum := HashToken(tok)
	t := store.Token{ID: "tok_" + idEnc.EncodeToString(sum[:8]), Tenant: req.Tenant, Hash: sum, Admin: req.Admin, CreatedAt: time.Now().UTC()}
	if err := s.st.CreateToken(r.Context(), t); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, TokenResponse{ID: t.ID, Tenant: t.Tenant, Token: tok, Admin: t.Admin})
	return nil
}

//go:embed openapi.json
var openapiJSON []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request, c caller) error {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openapiJSON)
	return nil
}
