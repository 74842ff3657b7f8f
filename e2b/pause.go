package e2b

import (
	"context"
	"maps"
	"net/http"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// pausedLabel marks a sandbox E2B's pause paused. rung's own states do
// not say it: a sandbox whose container stopped (pause, or going idle) is
// "ready" and starts its container again on the next command that needs
// one, where an E2B sandbox that was paused stays so until connect
// resumes it. So pause sets the label (and stops the container), envd
// refuses the sandbox while it is set, and connect or resume clears it.
const pausedLabel = "e2b.paused"

func paused(sb rung.Sandbox) bool { return sb.Labels[pausedLabel] != "" }

// setPaused sets or clears sb's pausedLabel.
func (s *Server) setPaused(ctx context.Context, tenant rung.TenantID, sb rung.Sandbox, on bool) (rung.Sandbox, error) {
	labels := maps.Clone(sb.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if on {
		labels[pausedLabel] = "true"
	} else {
		delete(labels, pausedLabel)
	}
	return s.ctrl.Update(ctx, tenant, string(sb.ID), controller.UpdateRequest{Labels: &labels})
}

// pause is POST /sandboxes/{id}/pause: the container stops and the
// sandbox's files stay; memory and processes do not (rung cannot
// checkpoint them: see docs/API.md), so a body that asks for memory
// explicitly ({"memory": true}, the SDK's keepMemory) is 503 with the
// reason. A sandbox already paused is 409, as E2B answers (the SDK's
// pause returns false).
func (s *Server) pause(w http.ResponseWriter, r *http.Request, c caller) error {
	var in struct {
		Memory *bool `json:"memory"`
	}
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	sb, err := s.ctrl.Get(r.Context(), c.tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	if in.Memory != nil && *in.Memory {
		return s.ctrl.Pause(r.Context(), c.tenant, string(sb.ID), true)
	}
	if paused(sb) {
		return rung.Errorf(rung.ErrConflict, "sandbox %s is already paused", sb.ID)
	}
	if sb, err = s.setPaused(r.Context(), c.tenant, sb, true); err != nil {
		return err
	}
	// Its commands end with the container; the E2B process table forgets
	// them, as envd's own does when its VM pauses without memory.
	s.procs.dropSandbox(string(sb.ID))
	s.watches.dropSandbox(string(sb.ID))
	if err := s.ctrl.Pause(r.Context(), c.tenant, string(sb.ID), false); err != nil {
		s.setPaused(context.WithoutCancel(r.Context()), c.tenant, sb, false)
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// rearm gives a paused sandbox that its timeout auto-paused (which
// cleared the timeout: lifecycle.go) a new one before it resumes, timeout
// seconds or E2B's default, as E2B's resume does. Others are returned as
// they are.
func (s *Server) rearm(ctx context.Context, tenant rung.TenantID, sb rung.Sandbox, timeout *int64) (rung.Sandbox, error) {
	if sb.TTL != 0 {
		return sb, nil
	}
	d := defaultTimeout
	if timeout != nil && *timeout > 0 {
		d = time.Duration(*timeout) * time.Second
	}
	return s.ctrl.Update(ctx, tenant, string(sb.ID), controller.UpdateRequest{ExpiresIn: &d})
}

// resumeSandbox starts a paused sandbox's container again and clears
// its mark; its processes start afresh.
func (s *Server) resumeSandbox(ctx context.Context, tenant rung.TenantID, sb rung.Sandbox) (rung.Sandbox, error) {
	if _, err := s.ctrl.Resume(ctx, tenant, string(sb.ID)); err != nil && rung.Code(err) != rung.CodeUnavailable {
		return rung.Sandbox{}, err
	}
	return s.setPaused(ctx, tenant, sb, false)
}

// resume is POST /sandboxes/{id}/resume (older SDKs): 201 with the
// sandbox; one that is not paused is 409, as E2B answers.
func (s *Server) resume(w http.ResponseWriter, r *http.Request, c caller) error {
	var in struct {
		Timeout *int64 `json:"timeout"` // seconds
	}
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	sb, err := s.ctrl.Get(r.Context(), c.tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	if !paused(sb) {
		return rung.Errorf(rung.ErrConflict, "sandbox %s is not paused", sb.ID)
	}
	if sb, err = s.rearm(r.Context(), c.tenant, sb, in.Timeout); err != nil {
		return err
	}
	if sb, err = s.resumeSandbox(r.Context(), c.tenant, sb); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.sandboxOutOf(sb))
	return nil
}
