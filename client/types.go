package client

import (
	"encoding/json"
	"time"

	"rung.dev/rung"
)

// Sandbox is a sandbox as the API returns it. Durations are milliseconds.
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

// CreateRequest describes a new sandbox; zero fields take the server's
// defaults.
type CreateRequest struct {
	Name          string             `json:"name,omitempty"`
	Labels        map[string]string  `json:"labels,omitempty"`
	Image         string             `json:"image,omitempty"`
	Size          rung.Size          `json:"size,omitzero"`
	Isolation     rung.Isolation     `json:"isolation,omitempty"`
	Network       rung.NetworkPolicy `json:"network,omitzero"`
	Env           map[string]string  `json:"env,omitempty"`
	User          string             `json:"user,omitempty"` // default the image's ("user" in base, "root" in lite)
	IdleTimeoutMS int64              `json:"idle_timeout_ms,omitempty"`
	TTLMS         int64              `json:"ttl_ms,omitempty"`
	// FromSnapshot restores a snapshot (id or name): the sandbox starts
	// with its files, on its image digest; size, env, network and labels
	// default to its sandbox's.
	FromSnapshot string `json:"from_snapshot,omitempty"`
}

// UpdateRequest changes a sandbox; nil fields stay.
type UpdateRequest struct {
	Labels        *map[string]string `json:"labels,omitempty"`
	IdleTimeoutMS *int64             `json:"idle_timeout_ms,omitempty"`
}

// ExecRequest is one command line to run.
type ExecRequest struct {
	Command   string            `json:"command"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	Stdin     string            `json:"stdin,omitempty"`
	Backend   rung.Backend      `json:"backend,omitempty"`
	User      string            `json:"user,omitempty"` // another user of the image ("root"): runs in the container
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
}

// ExecResult is how an exec ended. A non-zero ExitCode is not an error.
// ExitReason says how the command ended (exit, signal, oom, timeout,
// output_limit, canceled, start_failed; see [rung.ExitReason]); Signal
// names the signal for signal and oom; Limit names the rung limit that
// ended it ("wall_time", "output_bytes", ...). Reason says why Backend
// was chosen.
type ExecResult struct {
	ExecID     rung.ExecID     `json:"exec_id"`
	ExitCode   int             `json:"exit_code"`
	ExitReason rung.ExitReason `json:"exit_reason"`
	Signal     string          `json:"signal,omitempty"`
	Limit      string          `json:"limit,omitempty"`
	Stdout     string          `json:"stdout"`
	Stderr     string          `json:"stderr"`
	Backend    rung.Backend    `json:"backend"`
	Reason     string          `json:"reason"`
	DurationMS float64         `json:"duration_ms"`
	Truncated  bool            `json:"truncated,omitempty"`
}

// FileInfo describes a file in a sandbox.
type FileInfo struct {
	Path    string    `json:"path"`
	Name    string    `json:"name"`
	Type    string    `json:"type"`
	Size    int64     `json:"size"`
	Mode    string    `json:"mode"`
	ModTime time.Time `json:"mod_time"`
	Target  string    `json:"target,omitempty"`
}

// Event is a journal entry or an output event.
type Event struct {
	Seq     int64           `json:"seq"`
	Time    time.Time       `json:"time"`
	Type    string          `json:"type"`
	Journal bool            `json:"journal"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Effect is a declared external effect.
type Effect struct {
	Sandbox   rung.SandboxID  `json:"sandbox"`
	Key       rung.EffectKey  `json:"key"`
	Kind      string          `json:"kind,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Seq       int64           `json:"seq"`
	CreatedAt time.Time       `json:"created_at"`
}

// Tenant is a customer of the server.
type Tenant struct {
	ID        rung.TenantID `json:"id"`
	CreatedAt time.Time     `json:"created_at"`
}

// Token is a new API token; Token is shown only once.
type Token struct {
	ID     string        `json:"id"`
	Tenant rung.TenantID `json:"tenant"`
	Token  string        `json:"token"`
	Admin  bool          `json:"admin,omitempty"`
}
