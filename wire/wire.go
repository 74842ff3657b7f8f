// Package wire holds the JSON bodies of rung's HTTP API, once: the server
// (package api) encodes them and the Go SDK (package client) decodes them,
// and api/openapi.json documents them (api's TestOpenAPISchemasMatchWire
// checks each schema's properties against these fields). It imports rung
// and the standard library only. Durations are milliseconds, times RFC
// 3339.
package wire

import (
	"encoding/json"
	"time"

	"rung.dev/rung"
)

// Sandbox is a sandbox.
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
	// Execs is how many of its execs ran in each tier (ended or lost;
	// not those in flight).
	Execs rung.ExecCounts `json:"execs"`
}

// SandboxList is GET /v1/sandboxes.
type SandboxList struct {
	Sandboxes []Sandbox `json:"sandboxes"`
	Next      string    `json:"next,omitempty"` // pass as ?after= for the next page
}

// CreateSandboxRequest is the body of POST /v1/sandboxes; zero fields take
// the server's defaults.
type CreateSandboxRequest struct {
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

// UpdateSandboxRequest is the body of PATCH /v1/sandboxes/{id}; nil
// fields stay.
type UpdateSandboxRequest struct {
	Labels        *map[string]string  `json:"labels,omitempty"`
	IdleTimeoutMS *int64              `json:"idle_timeout_ms,omitempty"`
	Network       *rung.NetworkPolicy `json:"network,omitempty"`
}

// ExecRequest is the body of POST /v1/sandboxes/{id}/exec (and the first
// message of a WebSocket exec): one command line.
type ExecRequest struct {
	Command   string            `json:"command"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	Stdin     string            `json:"stdin,omitempty"`
	Backend   rung.Backend      `json:"backend,omitempty"`
	User      string            `json:"user,omitempty"` // another user of the image ("root"): runs in the container
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
	// PTY runs the command on a pseudo-terminal of this size (WebSocket
	// only; always in the container tier).
	PTY *rung.TermSize `json:"pty,omitempty"`
	// Login runs the command as a login shell's (bash -l -c): after
	// /etc/profile and ~/.profile.
	Login bool `json:"login,omitempty"`
}

// ExecResult is how an exec ended; in a stream it is the final frame,
// with Type "exit". A non-zero ExitCode is not an error. ExitReason,
// Signal and Limit say how the command ended (see [rung.ExitReason]);
// Reason says why Backend was chosen.
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

// Frame is one line of an exec stream: "stdout" and "stderr" chunks with
// their per-exec sequence numbers, then one "exit" (an [ExecResult]) or
// "error" frame.
type Frame struct {
	Type  string       `json:"type"`
	Seq   int64        `json:"seq,omitempty"`
	Data  string       `json:"data,omitempty"`
	Error *ErrorDetail `json:"error,omitempty"`
}

// WSInput is a client's message on an exec WebSocket after the request.
type WSInput struct {
	Type string `json:"type"` // "stdin", "stdin_close" or (PTY only) "resize"
	Data string `json:"data,omitempty"`
	// Cols and Rows are a "resize" message's new terminal size.
	Cols int `json:"cols,omitempty"`
	Rows int `json:"rows,omitempty"`
}

// ErrorBody is every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is a stable code (rung's error classes) and a message.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// FileInfo describes a file in a sandbox.
type FileInfo struct {
	Path    string    `json:"path"`
	Name    string    `json:"name"`
	Type    string    `json:"type"` // "file", "dir", "symlink", "other"
	Size    int64     `json:"size"`
	Mode    string    `json:"mode"` // permission bits in octal, "0644"
	ModTime time.Time `json:"mod_time"`
	Target  string    `json:"target,omitempty"` // a symlink's target
}

// FileList is GET .../files.
type FileList struct {
	Files []FileInfo `json:"files"`
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

// UntarResult is PUT .../files/tar: how many entries the archive held.
type UntarResult struct {
	Entries int `json:"entries"`
}

// Event is a journal entry or an output event.
type Event struct {
	Seq     int64           `json:"seq"`
	Time    time.Time       `json:"time"`
	Type    string          `json:"type"`
	Journal bool            `json:"journal"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Journal is GET .../events without follow.
type Journal struct {
	Entries []Event `json:"entries"`
}

// EffectRequest is the body of POST .../effects.
type EffectRequest struct {
	Key    rung.EffectKey  `json:"key"`
	Kind   string          `json:"kind,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
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

// EffectResponse is a declared effect; Created is false when the key was
// already declared and Effect is the first declaration.
type EffectResponse struct {
	Effect  Effect `json:"effect"`
	Created bool   `json:"created"`
}

// EffectList is GET .../effects.
type EffectList struct {
	Effects []Effect `json:"effects"`
}

// ProcessRequest is the body of POST .../processes: a command line
// (run under the image's shell) or an argv (run directly).
type ProcessRequest struct {
	Command string            `json:"command,omitempty"`
	Argv    []string          `json:"argv,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	User    string            `json:"user,omitempty"` // default the sandbox's user
	// PTY runs the process on a pseudo-terminal of this size.
	PTY *rung.TermSize `json:"pty,omitempty"`
}

// Process describes a background process. FirstSeq is the oldest output
// frame still retained; LastSeq the newest.
type Process struct {
	ID       string    `json:"id"`
	Pid      int       `json:"pid"`
	Argv     []string  `json:"argv"`
	Started  time.Time `json:"started"`
	Running  bool      `json:"running"`
	Exit     *Exit     `json:"exit,omitempty"`
	FirstSeq int64     `json:"first_seq"`
	LastSeq  int64     `json:"last_seq"`
}

// Exit says how a process ended: Reason is "exit", "signal", "oom",
// "timeout" or "start_failed"; Error says why it could not start.
type Exit struct {
	Code      int    `json:"code"`
	Signal    string `json:"signal,omitempty"`
	Reason    string `json:"reason"`
	Error     string `json:"error,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// OutputFrame is one line of a process's output stream: a chunk with its
// sequence number, or, last, the exit.
type OutputFrame struct {
	Seq    int64  `json:"seq"`
	Stream string `json:"stream,omitempty"` // "stdout" or "stderr"
	Data   []byte `json:"data,omitempty"`
	Exit   *Exit  `json:"exit,omitempty"`
}

// Snapshot is a snapshot of a sandbox's files.
type Snapshot struct {
	ID             rung.SnapshotID   `json:"id"`
	Name           string            `json:"name,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Sandbox        rung.SandboxID    `json:"sandbox,omitempty"` // "" when imported
	Image          string            `json:"image,omitempty"`   // the image digest it restores onto
	SizeBytes      int64             `json:"size_bytes"`
	ExclusiveBytes int64             `json:"exclusive_bytes"`
	Parent         rung.SnapshotID   `json:"parent,omitempty"`
	Consistency    string            `json:"consistency,omitempty"` // "crash" or "frozen"
	CreatedAt      time.Time         `json:"created_at"`
	ExpiresAt      time.Time         `json:"expires_at,omitzero"` // zero when pinned
	Pinned         bool              `json:"pinned"`
	TTLMS          int64             `json:"ttl_ms"`
}

// SnapshotRequest is the body of POST .../snapshots; zero fields take the
// server's defaults (no name, the tenant's retention, crash-consistent).
type SnapshotRequest struct {
	Name   string            `json:"name,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	TTLMS  int64             `json:"ttl_ms,omitempty"`
	Freeze bool              `json:"freeze,omitempty"` // freeze the container's processes around it
}

// SnapshotList is a page of GET /v1/snapshots.
type SnapshotList struct {
	Snapshots []Snapshot `json:"snapshots"`
	Next      string     `json:"next,omitempty"` // pass as ?after= for the next page
}

// PinRequest is the optional body of POST /v1/snapshots/{id}/pin.
type PinRequest struct {
	Pinned *bool `json:"pinned,omitempty"` // default true; false unpins
}

// RestoreRequest is the body of POST /v1/sandboxes/{id}/restore.
type RestoreRequest struct {
	Snapshot string `json:"snapshot"`
}

// ForkRequest is the body of POST /v1/sandboxes/{id}/fork and POST
// /v1/snapshots/{id}/fork.
type ForkRequest struct {
	Count  int               `json:"count,omitempty"`
	Names  []string          `json:"names,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// ForkResult is one fork: the sandbox, or why it could not be made.
type ForkResult struct {
	Sandbox *Sandbox     `json:"sandbox,omitempty"`
	Error   *ErrorDetail `json:"error,omitempty"`
}

// ForkResults is a fork's answer, one result per fork requested.
type ForkResults struct {
	Forks []ForkResult `json:"forks"`
}

// PauseRequest is the optional body of POST /v1/sandboxes/{id}/pause.
type PauseRequest struct {
	Memory bool `json:"memory,omitempty"`
}

// Tenant is a customer of the server.
type Tenant struct {
	ID        rung.TenantID `json:"id"`
	CreatedAt time.Time     `json:"created_at"`
}

// TenantList is GET /v1/tenants.
type TenantList struct {
	Tenants []Tenant `json:"tenants"`
}

// TenantRequest is the body of POST /v1/tenants.
type TenantRequest struct {
	Name rung.TenantID `json:"name"`
}

// TokenRequest is the body of POST /v1/tokens.
type TokenRequest struct {
	Tenant rung.TenantID `json:"tenant"`
	Admin  bool          `json:"admin,omitempty"`
	// Format "e2b" makes an E2B SDK API key ("e2b_" + hex); "" a rung
	// token.
	Format string `json:"format,omitempty"`
}

// TokenResponse carries a new token; it is shown once and never stored.
type TokenResponse struct {
	ID     string        `json:"id"`
	Tenant rung.TenantID `json:"tenant"`
	Token  string        `json:"token"`
	Admin  bool          `json:"admin,omitempty"`
}

// SecretRequest is the body of PUT /v1/secrets/{name}. Value is
// write-only: no answer ever holds it.
type SecretRequest struct {
	Value string   `json:"value"`
	Hosts []string `json:"hosts"`
}

// Secret describes a tenant's secret, never its value.
type Secret struct {
	Name        string    `json:"name"`
	Hosts       []string  `json:"hosts"`
	Placeholder string    `json:"placeholder"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// SecretList is GET /v1/secrets.
type SecretList struct {
	Secrets []Secret `json:"secrets"`
}

// ShareRequest is the body of POST /v1/sandboxes/{id}/shares: which
// port, for how long (default one day, at most 30).
type ShareRequest struct {
	Port  int   `json:"port"`
	TTLMS int64 `json:"ttl_ms,omitempty"`
}

// Share is a signed, expiring, revocable URL to one port of a sandbox.
// URL is set only in the create's answer: it holds the share's token.
type Share struct {
	ID        string         `json:"id"`
	Sandbox   rung.SandboxID `json:"sandbox"`
	Port      int            `json:"port"`
	URL       string         `json:"url,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	ExpiresAt time.Time      `json:"expires_at"`
	RevokedAt *time.Time     `json:"revoked_at,omitempty"`
}

// ShareList is GET /v1/sandboxes/{id}/shares.
type ShareList struct {
	Shares []Share `json:"shares"`
}
