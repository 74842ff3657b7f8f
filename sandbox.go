package rung

import "time"

// State is a sandbox's lifecycle state.
type State string

// Sandbox states. A sandbox with no container is still fully usable by the
// isolate tier; "running" only says a container is up.
const (
	StateReady   State = "ready"   // workspace usable, no container running
	StateRunning State = "running" // a container is up
	StatePaused  State = "paused"  // container frozen
	StateDeleted State = "deleted" // gone; kept only as a tombstone in the journal
)

// Isolation names the kind of container a sandbox's heavy commands run in.
type Isolation string

// Isolation levels.
const (
	IsolationContainer Isolation = "container" // runc (or crun)
	IsolationGVisor    Isolation = "gvisor"    // runsc
)

// Backend names where an exec ran or should run.
type Backend string

// Backends.
const (
	BackendAuto      Backend = "auto"      // let the router choose (requests only)
	BackendIsolate   Backend = "isolate"   // in-process shell over the workspace
	BackendContainer Backend = "container" // the sandbox's container (runc, crun or runsc)
)

// Sandbox is a durable identity with a workspace. The zero value is not a
// valid sandbox; the controller fills every field on create.
type Sandbox struct {
	ID        SandboxID         `json:"id"`
	Name      string            `json:"name"`
	Tenant    TenantID          `json:"tenant"`
	Labels    map[string]string `json:"labels,omitempty"`
	Image     string            `json:"image,omitempty"` // name@sha256:digest once pinned
	Size      Size              `json:"size"`
	Isolation Isolation         `json:"isolation"`
	Network   NetworkPolicy     `json:"network"`
	Env       map[string]string `json:"env,omitempty"`
	// User is who the sandbox's commands run as unless an exec or a
	// process names another: a user of its image's /etc/passwd, set at
	// create from the request or the image's default ("user" in base,
	// "root" in lite). "" (sandboxes made before users) means root.
	User  string `json:"user,omitempty"`
	State State  `json:"state"`
	// IdleTimeout stops the container (never the sandbox) after this long
	// without an exec. Zero means the server default.
	IdleTimeout time.Duration `json:"idle_timeout"`
	// TTL deletes the sandbox this long after creation (or does what
	// OnExpiry says). Zero means never.
	TTL time.Duration `json:"ttl"`
	// OnExpiry is what the TTL does when it runs out; the zero value
	// deletes the sandbox.
	OnExpiry  Expiry    `json:"on_expiry,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Origin is the snapshot the sandbox's files last came from (a
	// restore, a fork or a rollback), "" for none: the parent of its
	// next snapshots.
	Origin SnapshotID `json:"origin,omitempty"`
	// ForkedFrom is the sandbox this one is a fork of, "" for none.
	ForkedFrom SandboxID `json:"forked_from,omitempty"`
	// Execs is how many of the sandbox's execs ran in each tier. The
	// store counts them as execs end, beside the sandbox's settings and
	// not among them: they are not part of its encoding, and updating a
	// sandbox leaves them as they are.
	Execs ExecCounts `json:"-"`
}

// ExecCounts is how many of a sandbox's execs ran in each tier: those
// that ended or were lost, by the tier they ended in (an exec the isolate
// tier refused at run time, run again in the container, counts once, as
// a container exec). Execs in flight are not counted yet.
type ExecCounts struct {
	Isolate   int64 `json:"isolate"`
	Container int64 `json:"container"`
}

// Expiry is what a sandbox's TTL does when it runs out. The zero value
// deletes the sandbox.
type Expiry struct {
	// Stop keeps the sandbox and stops its container instead, as an
	// idle timeout does: files stay (workspace, /tmp, root filesystem
	// changes), processes do not. The TTL is then cleared (a new end can
	// be set), and the journal says sandbox.expiry_stopped.
	Stop bool `json:"stop,omitempty"`
	// Labels are merged into the sandbox's labels when Stop does: the
	// creator's own mark of what happened (E2B's auto-pause marks the
	// sandbox paused). Nil adds none.
	Labels map[string]string `json:"labels,omitempty"`
}

// NetworkPolicy says what a sandbox's container may reach. See
// docs/API.md, "Network", for the rules' semantics.
type NetworkPolicy struct {
	// Mode is none (loopback only, the default), egress (everything
	// through rung's policy) or open (direct, where the tenant's policy in
	// the server's configuration allows it).
	Mode NetworkMode `json:"mode"`
	// Rules allow and deny destinations. Once any allow rule exists,
	// anything no rule allows is denied; a matching deny rule always wins.
	Rules []NetworkRule `json:"rules,omitempty"`
	// Headers are set on HTTP requests to matching hosts; a value may name
	// a tenant's secret as {{secret:NAME}}, filled in on the way out.
	Headers []HeaderRule `json:"headers,omitempty"`
	// Limits bound the sandbox's outbound traffic; zero fields take the
	// server's defaults.
	Limits NetworkLimits `json:"limits,omitzero"`
}

// NetworkMode is how a sandbox's container reaches the network.
type NetworkMode string

// Network modes.
const (
	NetworkNone   NetworkMode = "none"
	NetworkEgress NetworkMode = "egress"
	NetworkOpen   NetworkMode = "open"
)

// RuleAction is what a NetworkRule does with what it matches.
type RuleAction string

// Rule actions.
const (
	RuleAllow RuleAction = "allow"
	RuleDeny  RuleAction = "deny"
)

// NetworkRule matches outbound connections and requests. Every field set
// must match; at least one of Domain and CIDR is set.
type NetworkRule struct {
	Action RuleAction `json:"action"`
	// Domain is an exact host name ("api.github.com") or a wildcard
	// ("*.github.com", any name below github.com but not github.com).
	// It is matched on TLS's server name and on HTTP's Host, and on the
	// name the sandbox looked up for other TCP connections.
	Domain string `json:"domain,omitempty"`
	// CIDR is an address range ("10.0.0.0/8", "1.2.3.4/32").
	CIDR string `json:"cidr,omitempty"`
	// Ports is a list of ports and ranges ("443", "80,443", "8000-8100");
	// empty matches every port.
	Ports string `json:"ports,omitempty"`
	// Methods and PathPrefix match HTTP requests only (and intercepted
	// HTTPS); a rule with either never matches other traffic.
	Methods    []string `json:"methods,omitempty"`
	PathPrefix string   `json:"path_prefix,omitempty"`
}

// HeaderRule sets Header to Value on HTTP requests to Domain (exact or
// "*." wildcard). HTTPS to a matching host is intercepted with the
// sandbox's own certificate authority so the header can be set.
type HeaderRule struct {
	Domain string `json:"domain"`
	Header string `json:"header"`
	Value  string `json:"value"`
}

// NetworkLimits bound one sandbox's outbound traffic.
type NetworkLimits struct {
	// MaxConnections is how many outbound connections may be open at once.
	MaxConnections int `json:"max_connections,omitempty"`
	// RequestsPerSecond bounds new connections plus HTTP requests.
	RequestsPerSecond int `json:"requests_per_second,omitempty"`
	// BytesPerSecond bounds the traffic in both directions together.
	BytesPerSecond int64 `json:"bytes_per_second,omitempty"`
}

// Secret is a tenant's named secret. Its value is write-only: the API
// never returns it, and it never enters a sandbox. Placeholder is what a
// sandbox's env gets for {{secret:NAME}}; the egress proxy replaces it
// with the value in requests to Hosts only.
type Secret struct {
	Name        string    `json:"name"`
	Tenant      TenantID  `json:"tenant"`
	Hosts       []string  `json:"hosts"`
	Placeholder string    `json:"placeholder"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Snapshot is an immutable handle on everything a sandbox had written at
// one instant: workspace, tmp and its container's root filesystem changes.
// Only its retention (ExpiresAt, Pinned) changes once it is taken.
type Snapshot struct {
	ID      SnapshotID        `json:"id"`
	Name    string            `json:"name,omitempty"` // unique in its tenant
	Tenant  TenantID          `json:"tenant"`
	Labels  map[string]string `json:"labels,omitempty"`
	Sandbox SandboxID         `json:"sandbox,omitempty"` // the sandbox it was taken from; "" when imported
	Parent  SnapshotID        `json:"parent,omitempty"`  // the snapshot that sandbox's files came from
	// Image is the sandbox's image, pinned (name@sha256:…): a snapshot
	// restores only onto that digest.
	Image string `json:"image,omitempty"`
	// SizeBytes is what the sandbox had written itself when the
	// snapshot was taken, as the pool's quota charged it; ExclusiveBytes
	// the part of that written since the sandbox's previous snapshot (or
	// its start): what this snapshot adds to its tenant's disk use. See
	// docs/decisions/snapshots.md.
	SizeBytes      int64 `json:"size_bytes"`
	ExclusiveBytes int64 `json:"exclusive_bytes"`
	// Consistency is how it was taken: "crash" (the sandbox's files as a
	// crash at that instant would leave them) or "frozen" (its container's
	// processes were frozen around it).
	Consistency string    `json:"consistency,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	// ExpiresAt is when it is deleted unless restored or forked before
	// (each renews it by TTL); zero when Pinned.
	ExpiresAt time.Time     `json:"expires_at,omitzero"`
	Pinned    bool          `json:"pinned,omitempty"`
	TTL       time.Duration `json:"ttl"` // the retention each renewal grants
}
