package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/wire"
)

const maxDurationMS = int64(100 * 365 * 24 * time.Hour / time.Millisecond)

func msDuration(ms int64, what string) (time.Duration, error) {
	if ms < 0 || ms > maxDurationMS {
		return 0, rung.Errorf(rung.ErrInvalid, "%s must be between 0 and %d", what, maxDurationMS)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func (s *Server) createSandbox(w http.ResponseWriter, r *http.Request, c caller) error {
	var req CreateSandboxRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	idle, err := msDuration(req.IdleTimeoutMS, "idle_timeout_ms")
	if err != nil {
		return err
	}
	ttl, err := msDuration(req.TTLMS, "ttl_ms")
	if err != nil {
		return err
	}
	sb, err := s.ctrl.Create(r.Context(), c.tenant, controller.CreateRequest{
		Name: req.Name, Labels: req.Labels, Image: req.Image, Size: req.Size, Isolation: req.Isolation,
		Network: req.Network, Env: req.Env, User: req.User, IdleTimeout: idle, TTL: ttl,
		FromSnapshot: req.FromSnapshot,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, sandboxOut(sb))
	return nil
}

// parseLabels reads label=k=v query parameters (repeatable).
func parseLabels(q []string) (map[string]string, error) {
	if len(q) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range q {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, rung.Errorf(rung.ErrInvalid, "label filter %q: want key=value", clip(kv))
		}
		m[k] = v
	}
	return m, nil
}

func (s *Server) listSandboxes(w http.ResponseWriter, r *http.Request, c caller) error {
	q := r.URL.Query()
	labels, err := parseLabels(q["label"])
	if err != nil {
		return err
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 0 {
			return rung.Errorf(rung.ErrInvalid, "limit %q: want a non-negative integer", clip(v))
		}
	}
	page, err := s.ctrl.ListPage(r.Context(), c.tenant, controller.ListFilter{State: rung.State(q.Get("state")), Labels: labels, Limit: limit, After: q.Get("after")})
	if err != nil {
		return err
	}
	out := make([]Sandbox, len(page.Sandboxes))
	for i, sb := range page.Sandboxes {
		out[i] = sandboxOut(sb)
	}
	writeJSON(w, http.StatusOK, wire.SandboxList{Sandboxes: out, Next: page.Next})
	return nil
}

func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request, c caller) error {
	sb, err := s.ctrl.Get(r.Context(), c.tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sandboxOut(sb))
	return nil
}

func (s *Server) updateSandbox(w http.ResponseWriter, r *http.Request, c caller) error {
	var req UpdateSandboxRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	var u controller.UpdateRequest
	u.Labels, u.Network = req.Labels, req.Network
	if req.IdleTimeoutMS != nil {
		d, err := msDuration(*req.IdleTimeoutMS, "idle_timeout_ms")
		if err != nil {
			return err
		}
		u.IdleTimeout = &d
	}
	sb, err := s.ctrl.Update(r.Context(), c.tenant, r.PathValue("id"), u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sandboxOut(sb))
	return nil
}

func (s *Server) deleteSandbox(w http.ResponseWriter, r *http.Request, c caller) error {
	if err := s.ctrl.Delete(r.Context(), c.tenant, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
