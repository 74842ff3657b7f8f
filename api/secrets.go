package api

import (
	"net/http"

	"rung.dev/rung"
	"rung.dev/rung/wire"
)

// Secrets: a tenant's credentials for the egress proxy. Values go in and
// never come out.

func secretOut(s rung.Secret) wire.Secret {
	hosts := s.Hosts
	if hosts == nil {
		hosts = []string{}
	}
	return wire.Secret{Name: s.Name, Hosts: hosts, Placeholder: s.Placeholder, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

func (s *Server) putSecret(w http.ResponseWriter, r *http.Request, c caller) error {
	var req wire.SecretRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	sec, created, err := s.ctrl.PutSecret(r.Context(), c.tenant, r.PathValue("name"), []byte(req.Value), req.Hosts)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, secretOut(sec))
	return nil
}

func (s *Server) getSecret(w http.ResponseWriter, r *http.Request, c caller) error {
	sec, err := s.ctrl.GetSecret(r.Context(), c.tenant, r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, secretOut(sec))
	return nil
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request, c caller) error {
	secs, err := s.ctrl.ListSecrets(r.Context(), c.tenant)
	if err != nil {
		return err
	}
	out := wire.SecretList{Secrets: make([]wire.Secret, len(secs))}
	for i, sec := range secs {
		out.Secrets[i] = secretOut(sec)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request, c caller) error {
	if err := s.ctrl.DeleteSecret(r.Context(), c.tenant, r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
