package api

import (
	"cmp"
	"encoding/json"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// Sandbox is a sandbox on the wire. Durations are milliseconds.
type Sandbox struct {
	ID            rung.SandboxID     `json:"id"`
	Name          string             `json:"name,omitempty"`
	Tenant        rung.TenantID      `json:"tenant"`
	Labels        map[string]string  `json:"labels,omitempty"`
	Image         string             `json:"image,omitempty"`
	Size          rung.Size          `json:"size"`
	Isolation     rung.Isolation     `json:"isolation"`
	Network       rung.NetworkPolicy `json:"network"`
	User          string             `json:"user"` // who commands run as by default
	State         rung.State         `json:"state"`
	IdleTimeoutMS int64              `json:"idle_timeout_ms"`
	TTLMS         int64              `json:"ttl_ms"`
	CreatedAt     time.Time          `json:"created_at"`
	UpdatedAt     time.Time          `json:"updated_at"`
}

func sandboxOut(sb rung.Sandbox) Sandbox {
	return Sandbox{
		ID: sb.ID, Name: sb.Name, Tenant: sb.Tenant, Labels: sb.Labels, Image: sb.Image, Size: sb.Size,
		Isolation: sb.Isolation, Network: sb.Network, User: cmp.Or(sb.User, "root"), State: sb.State,
		IdleTimeoutMS: sb.IdleTimeout.Milliseconds(), TTLMS: sb.TTL.Milliseconds(), CreatedAt: sb.CreatedAt, UpdatedAt: sb.UpdatedAt,
	}
}

// CreateSandboxRequest is the body of POST /v1/sandboxes.
type CreateSandboxRequest struct {
	Name          string             `json:"name,omitempty"`
	Labels        map[string]string  `json:"labels,omitempty"`
	Image         string             `json:"image,omitempty"`
	Size          rung.Size          `json:"size,omitzero"`
	Isolation     rung.Isolation     `json:"isolation,omitempty"`
	Network       rung.NetworkPolicy `json:"network,omitzero"`
	Env           map[string]string  `json:"env,omitempty"`
	User          string             `json:"user,omitempty"`
	IdleTimeoutMS int64              `json:"idle_timeout_ms,omitempty"`
	TTLMS         int64              `json:"ttl_ms,omitempty"`
	// FromSnapshot restores a snapshot (id or name) onto the new sandbox.
	FromSnapshot string `json:"from_snapshot,omitempty"`
}

// UpdateSandboxRequest is the body of PATCH /v1/sandboxes/{id}.
type UpdateSandboxRequest struct {
	Labels        *map[string]string `json:"labels,omitempty"`
	IdleTimeoutMS *int64             `json:"idle_timeout_ms,omitempty"`
}

// ExecRequest is the body of POST /v1/sandboxes/{id}/exec.
type ExecRequest struct {
	Command   string            `json:"command"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	Stdin     string            `json:"stdin,omitempty"`
	Backend   rung.Backend      `json:"backend,omitempty"`
	User      string            `json:"user,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
}

// ExecResult is an exec's result on the wire; in a stream it is the final
// frame, with Type "exit".
// ExitReason, Signal and Limit say how the command ended (see
// [rung.ExitReason]); Reason says why Backend was chosen.
type ExecResult struct {
	Type       string          `json:"type,omitempty"`
	ExecID     rung.ExecID     `json:"exec_id"`
	ExitCode   int             `json:"exit_code"`
	ExitReason rung.ExitReason `json:"exit_reason"`
	Signal     string          `json:"signal,omitempty"`
	Limit      rung.Limit      `json:"limit,omitempty"`
	Stdout     string          `json:"stdout"`
	Stderr     string          `json:"stderr"`
	Backend    rung.Backend    `json:"backend"`
	Reason     string          `json:"reason"`
	DurationMS float64         `json:"duration_ms"`
	Truncated  bool            `json:"truncated,omitempty"`
}

func resultOut(r rung.ExecResult) ExecResult {
	return ExecResult{ExecID: r.ExecID, ExitCode: r.ExitCode, ExitReason: r.ExitReason, Signal: r.Signal, Limit: r.Limit,
		Stdout: string(r.Stdout), Stderr: string(r.Stderr), Backend: r.Backend, Reason: r.Reason,
		DurationMS: float64(r.Duration.Microseconds()) / 1000, Truncated: r.Truncated}
}

// Frame is one line of an exec stream: "stdout" and "stderr" chunks with
// their per-exec sequence numbers, then one "exit" (an [ExecResult]) or
// "error" frame.
type Frame struct {
	Type  string       `json:"type"`
	Seq   int64        `json:"seq,omitempty"`
	Data  string       `json:"data,omitempty"`
	Error *ErrorDetail `json:"error,omitempty"`
}

// Event is one event on the wire.
type Event struct {
	Seq     int64           `json:"seq"`
	Time    time.Time       `json:"time"`
	Type    string          `json:"type"`
	Journal bool            `json:"journal"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func eventOut(e store.Event) Event {
	return Event{Seq: e.Seq, Time: e.Time, Type: e.Type, Journal: e.Journal, Data: e.Data}
}

// MkdirRequest is the body of POST .../files/mkdir.
type MkdirRequest struct {
	Path    string `json:"path"`
	Parents bool   `json:"parents,omitempty"`
}

// MoveRequest is the body of POST .../files/move.
type MoveRequest struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// TenantRequest is the body of POST /v1/tenants.
type TenantRequest struct {
	Name rung.TenantID `json:"name"`
}

// TokenRequest is the body of POST /v1/tokens.
type TokenRequest struct {
	Tenant rung.TenantID `json:"tenant"`
	Admin  bool          `json:"admin,omitempty"`
}

// TokenResponse carries a new token; it is shown once and never stored.
type TokenResponse struct {
	ID     string        `json:"id"`
	Tenant rung.TenantID `json:"tenant"`
	Token  string        `json:"token"`
	Admin  bool          `json:"admin,omitempty"`
}

// EffectResponse is a declared effect; Created is false when the key was
// already declared and Effect is the first declaration.
type EffectResponse struct {
	Effect  store.Effect `json:"effect"`
	Created bool         `json:"created"`
}
