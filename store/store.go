// Package store is rung's metadata store: tenants, API tokens, sandboxes,
// snapshots, execs, the per-sandbox journal and event stream, and declared
// external effects. [Store] is the contract; store/sqlite implements it for
// one machine (PostgreSQL later), and store/storetest is the conformance
// suite every implementation runs.
package store

import (
	"context"
	"time"

	"rung.dev/rung"
)

// StateCreating is the state of a sandbox row whose subvolume may not exist
// yet. It is never shown to API callers: start-up reconciliation either
// finishes or removes such rows.
const StateCreating rung.State = "creating"

// Store is the metadata store. Every method is one transaction: it commits
// all of its writes or none. Methods return errors wrapping the rung
// classes: [rung.ErrNotFound] for a missing row, [rung.ErrExists] for a
// duplicate key, [rung.ErrInvalid] for malformed arguments; anything else is
// a store failure. Implementations are safe for concurrent use.
type Store interface {
	// CreateTenant adds a tenant. A duplicate name is ErrExists.
	CreateTenant(ctx context.Context, t Tenant) error
	// GetTenant returns one tenant, or ErrNotFound.
	GetTenant(ctx context.Context, id rung.TenantID) (Tenant, error)
	// ListTenants returns every tenant ordered by name.
	ListTenants(ctx context.Context) ([]Tenant, error)

	// CreateToken stores a token's hash. The token itself is never stored.
	// A missing tenant is ErrNotFound; a duplicate hash or ID is ErrExists.
	CreateToken(ctx context.Context, t Token) error
	// TokenByHash returns the token with this SHA-256 hash, or ErrNotFound.
	TokenByHash(ctx context.Context, hash [32]byte) (Token, error)

	// CreateSandbox adds a sandbox. A name already used by another
	// sandbox of the same tenant is ErrExists. When MaxPerTenant > 0 and
	// the tenant already has that many sandboxes, it returns an error
	// wrapping rung.ErrLimit and adds nothing. evs, when given, are the
	// sandbox's first events, appended in the same transaction.
	CreateSandbox(ctx context.Context, s Sandbox, maxPerTenant int, evs ...Event) error
	// GetSandbox returns the sandbox with id in tenant (any tenant when
	// tenant is ""), or ErrNotFound, also when it belongs to another tenant.
	GetSandbox(ctx context.Context, tenant rung.TenantID, id rung.SandboxID) (Sandbox, error)
	// SandboxByName returns tenant's sandbox called name, or ErrNotFound.
	SandboxByName(ctx context.Context, tenant rung.TenantID, name string) (Sandbox, error)
	// ListSandboxes returns the sandboxes matching f, ordered by creation
	// time then ID.
	ListSandboxes(ctx context.Context, f Filter) ([]Sandbox, error)
	// SandboxStates returns how many sandboxes are in each state, every
	// tenant's (StateCreating and rung.StateDeleted rows too); a state no
	// sandbox is in is absent.
	SandboxStates(ctx context.Context) (map[rung.State]int, error)
	// UpdateSandbox replaces the mutable fields (name, labels, state,
	// idle timeout, TTL, alarms, updated time, origin, network policy) of
	// an existing sandbox, or returns ErrNotFound. A name clash is
	// ErrExists.
	UpdateSandbox(ctx context.Context, s Sandbox) error
	// DeleteSandbox removes a sandbox and everything that belongs to it
	// (execs, events, effects). Its snapshots stay. Missing is ErrNotFound.
	DeleteSandbox(ctx context.Context, id rung.SandboxID) error

	// CreateSnapshot adds a snapshot. A duplicate ID, or a name another
	// of the tenant's snapshots has, is ErrExists. When maxPerTenant > 0
	// and the tenant already has that many snapshots, it returns an error
	// wrapping rung.ErrLimit and adds nothing.
	CreateSnapshot(ctx context.Context, s Snapshot, maxPerTenant int) error
	// GetSnapshot returns the snapshot with id in tenant (any tenant when
	// tenant is ""), or ErrNotFound, also when it is another tenant's.
	GetSnapshot(ctx context.Context, tenant rung.TenantID, id rung.SnapshotID) (Snapshot, error)
	// SnapshotByName returns tenant's snapshot called name, or ErrNotFound.
	SnapshotByName(ctx context.Context, tenant rung.TenantID, name string) (Snapshot, error)
	// ListSnapshots returns the snapshots matching f, ordered by creation
	// time then ID.
	ListSnapshots(ctx context.Context, f SnapshotFilter) ([]Snapshot, error)
	// UpdateSnapshot replaces the mutable fields (state, sizes, labels,
	// expiry, pin, TTL) of an existing snapshot, or returns ErrNotFound.
	UpdateSnapshot(ctx context.Context, s Snapshot) error
	// DeleteSnapshot removes a snapshot, or returns ErrNotFound.
	DeleteSnapshot(ctx context.Context, id rung.SnapshotID) error
	// SnapshotUsage returns how many snapshots tenant has and the sum of
	// their ExclusiveBytes.
	SnapshotUsage(ctx context.Context, tenant rung.TenantID) (count int, bytes int64, err error)
	// NextSnapshotExpiry returns the earliest expiry of any snapshot, and
	// false when none expires.
	NextSnapshotExpiry(ctx context.Context) (time.Time, bool, error)
	// ExpiredSnapshots returns up to limit snapshots that expire at or
	// before now, earliest first.
	ExpiredSnapshots(ctx context.Context, now time.Time, limit int) ([]Snapshot, error)

	// QueueStartExec records an exec as started and appends ev (its
	// journal entry) to the sandbox's events, without waiting: the write
	// is queued and commits when the exec waits for it (QueuedStart.Wait,
	// before the exec's first effect), or with the exec's end if that
	// comes first (see [QueuedStart]); other writes do not take it with
	// them, so it is ordered only before the exec's own later writes.
	// The write does not end with ctx.
	QueueStartExec(ctx context.Context, e Exec, ev Event) QueuedStart
	// EndExec records how a started exec ended (State ExecEnded) and
	// appends evs (its output chunks, then its journal entry) in order. It
	// returns the last sequence number. An exec that is not started is
	// ErrNotFound.
	EndExec(ctx context.Context, e Exec, evs []Event) (int64, error)
	// GetExec returns one exec, or ErrNotFound.
	GetExec(ctx context.Context, sandbox rung.SandboxID, id rung.ExecID) (Exec, error)
	// LoseExecs marks every started exec as lost (they were in flight when
	// the daemon stopped) and, per sandbox, appends the journal entry
	// journal returns for that sandbox's lost execs. It returns the lost
	// execs.
	LoseExecs(ctx context.Context, journal func(rung.SandboxID, []rung.ExecID) Event) ([]Exec, error)

	// AppendEvents appends evs to a sandbox's events in order, assigning
	// each the next sequence number (1, 2, ...), and returns the last one.
	// A missing sandbox is ErrNotFound.
	AppendEvents(ctx context.Context, sandbox rung.SandboxID, evs []Event) (int64, error)
	// ListEvents returns up to limit events with Seq > after in order; only
	// journal entries when journalOnly. limit <= 0 means 1000.
	ListEvents(ctx context.Context, sandbox rung.SandboxID, q EventQuery) ([]Event, error)
	// LastSeq returns the sandbox's highest sequence number (0 for none).
	LastSeq(ctx context.Context, sandbox rung.SandboxID) (int64, error)
	// TrimEvents deletes output events (never journal entries) older than
	// before and returns how many it deleted.
	TrimEvents(ctx context.Context, before time.Time) (int64, error)

	// DeclareEffect records an external effect under its idempotency key
	// and appends its journal entry ev. When the key was already declared
	// for the sandbox it changes nothing and returns the first declaration
	// with created false.
	DeclareEffect(ctx context.Context, e Effect, ev Event) (first Effect, created bool, err error)
	// ListEffects returns a sandbox's effects in declaration order.
	ListEffects(ctx context.Context, sandbox rung.SandboxID) ([]Effect, error)

	// NextAlarm returns the earliest alarm time of any sandbox, and false
	// when no sandbox has one.
	NextAlarm(ctx context.Context) (time.Time, bool, error)
	// DueSandboxes returns the sandboxes with an alarm at or before now.
	DueSandboxes(ctx context.Context, now time.Time) ([]Sandbox, error)
	// PostponeExpiry moves the sandbox's TTL alarm (ExpiresAt) to at and
	// changes nothing else, whatever else changed since the caller read the
	// row. A missing sandbox is ErrNotFound.
	PostponeExpiry(ctx context.Context, id rung.SandboxID, at time.Time) error

	// Close releases the store. It is idempotent.

	// CreateShare records a share of a sandbox's port (a signed preview
	// URL). A duplicate ID is ErrExists.
	CreateShare(ctx context.Context, sh Share) error
	// GetShare returns the share with id, revoked or not; ErrNotFound if
	// there is none (or it belongs to another tenant, when tenant is set).
	GetShare(ctx context.Context, tenant rung.TenantID, id string) (Share, error)
	// ListShares returns a sandbox's shares, oldest first.
	ListShares(ctx context.Context, tenant rung.TenantID, sandbox rung.SandboxID) ([]Share, error)
	// RevokeShare marks a share revoked at at; revoking twice keeps the
	// first time. ErrNotFound if tenant has no such share.
	RevokeShare(ctx context.Context, tenant rung.TenantID, id string, at time.Time) error

	// PutSecret creates or replaces a tenant's secret (by name) and
	// reports whether it was new. CreatedAt of a replaced one is kept.
	PutSecret(ctx context.Context, sec SecretRow) (created bool, err error)
	// GetSecret returns a tenant's secret; ErrNotFound if there is none.
	GetSecret(ctx context.Context, tenant rung.TenantID, name string) (SecretRow, error)
	// ListSecrets returns a tenant's secrets by name.
	ListSecrets(ctx context.Context, tenant rung.TenantID) ([]SecretRow, error)
	// DeleteSecret removes a tenant's secret; ErrNotFound if there is none.
	DeleteSecret(ctx context.Context, tenant rung.TenantID, name string) error

	Close() error
}

// Share is a signed, expiring, revocable URL to one port of a sandbox.
// The URL carries the share's ID and a signature; the row says whether
// it still holds. A sandbox's delete removes its shares.
type Share struct {
	ID        string // "shr_" + 26 base32 characters
	Tenant    rung.TenantID
	Sandbox   rung.SandboxID
	Port      int
	CreatedAt time.Time
	ExpiresAt time.Time
	RevokedAt time.Time // zero while valid
}

// SecretRow is a tenant's secret as stored: its value sealed (encrypted
// with the server's key; the store never sees it in clear).
type SecretRow struct {
	rung.Secret
	Sealed []byte
}

// Tenant, Event and Effect are the domain's types (package rung), stored
// as they are: what a method returns goes up through the controller to the
// API without a conversion, and the store adds no fields to them.
type (
	Tenant = rung.Tenant
	Event  = rung.Event
	Effect = rung.Effect
)

// Token is an API bearer token as stored: its SHA-256 hash, never the
// token. Admin tokens may manage tenants and tokens.
type Token struct {
	ID        string // "tok_..." for listing and revocation
	Tenant    rung.TenantID
	Hash      [32]byte
	Admin     bool
	CreatedAt time.Time
}

// Sandbox is a sandbox row: the domain sandbox plus its alarms. A zero
// alarm time means none.
type Sandbox struct {
	rung.Sandbox
	// ExpiresAt is when the TTL deletes the sandbox.
	ExpiresAt time.Time
	// IdleAt is when the idle timeout stops its container.
	IdleAt time.Time
}

// Alarm returns the earliest of s's alarm times, or the zero time.
func (s Sandbox) Alarm() time.Time {
	switch {
	case s.ExpiresAt.IsZero():
		return s.IdleAt
	case s.IdleAt.IsZero() || s.ExpiresAt.Before(s.IdleAt):
		return s.ExpiresAt
	}
	return s.IdleAt
}

// Filter selects sandboxes. Zero fields match everything.
type Filter struct {
	Tenant rung.TenantID
	State  rung.State
	Labels map[string]string // every pair must match
	Limit  int               // <= 0 means no limit
	// After, when set, lists only the sandboxes after this position of
	// the list's order: a cursor that stays valid when the sandbox at it
	// is deleted.
	After *Position
	// Desc orders the list newest first (After then means older).
	Desc bool
	// CreatedFrom, when not zero, lists only the sandboxes created at or
	// after it.
	CreatedFrom time.Time
}

// Position is a place in the sandbox list's order: creation time, then
// id.
type Position struct {
	Created time.Time
	ID      rung.SandboxID
}

// SnapshotState is where a snapshot row is in its making.
type SnapshotState string

// Snapshot states. A creating row may name a subvolume that does not exist
// yet (or never will): start-up reconciliation removes such rows, and only
// ready ones are shown to API callers.
const (
	SnapshotCreating SnapshotState = "creating"
	SnapshotReady    SnapshotState = "ready"
)

// Snapshot is a snapshot row: the domain handle, its state, and the
// sandbox as it was when the snapshot was taken (its image, size,
// isolation, network, environment and user: what a restore starts from).
type Snapshot struct {
	rung.Snapshot
	State  SnapshotState `json:"state"`
	Source rung.Sandbox  `json:"source"`
}

// SnapshotFilter selects snapshots. Zero fields match everything.
type SnapshotFilter struct {
	Tenant  rung.TenantID
	Sandbox rung.SandboxID
	Name    string
	Labels  map[string]string // every pair must match
	// After, when set, starts the list after the snapshot created at
	// AfterCreated with ID After (a page's last entry).
	AfterCreated time.Time
	After        rung.SnapshotID
	Limit        int  // <= 0 means no limit
	Newest       bool // newest first (After then pages backwards)
}

// ExecState is where an exec is in its life.
type ExecState string

// Exec states. An exec is never re-run: a started exec found at start-up
// becomes lost.
const (
	ExecStarted ExecState = "started"
	ExecEnded   ExecState = "ended"
	ExecLost    ExecState = "lost"
)

// Exec is one exec's record.
type Exec struct {
	ID        rung.ExecID
	Sandbox   rung.SandboxID
	Command   string
	State     ExecState
	Backend   rung.Backend
	ExitCode  int
	Bytes     int64 // stdout plus stderr bytes
	StartedAt time.Time
	EndedAt   time.Time
}

// EventQuery selects events of one sandbox.
type EventQuery struct {
	After       int64
	Limit       int
	JournalOnly bool
}

// QueuedStart is an exec's start queued by Store.QueueStartExec. Its
// methods are safe for concurrent use; the caller must call Wait or End
// before it gives up on the exec.
type QueuedStart interface {
	// Wait commits the start if no write has yet and returns ev's
	// sequence number (a missing sandbox is ErrNotFound); again and
	// again, the same.
	Wait() (int64, error)
	// End is Wait then EndExec, except that a start still queued is
	// taken off the queue and the exec recorded started and ended in
	// one write (the same rows and events: the start's entry, then evs,
	// in order, as if it had never been in flight) that End does not
	// wait for: every read of the store after End returns sees it, but
	// a crash before its commit drops it, as it would have dropped the
	// queued start (the caller queues only starts a crash may drop: an
	// exec that has changed nothing yet). A start that failed is its
	// error.
	End(ctx context.Context, e Exec, evs []Event) error
}
