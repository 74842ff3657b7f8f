package store

import (
	"context"
	"time"

	"rung.dev/rung"
)

// Observe returns s with every method but Close timed: observe gets the
// method's name ("GetSandbox") and how long it took, error or not, once
// it returns. It must be quick and safe for concurrent use; the metrics
// of the store's latency come from it. The result is safe for concurrent
// use as s is.
func Observe(s Store, observe func(op string, took time.Duration)) Store {
	return &observed{s: s, observe: observe}
}

// observed is [Observe]'s Store.
type observed struct {
	s       Store
	observe func(op string, took time.Duration)
}

var _ Store = (*observed)(nil)

// done reports op, started at start.
func (o *observed) done(op string, start time.Time) { o.observe(op, time.Since(start)) }

func (o *observed) CreateTenant(ctx context.Context, t Tenant) error {
	defer o.done("CreateTenant", time.Now())
	return o.s.CreateTenant(ctx, t)
}

func (o *observed) GetTenant(ctx context.Context, id rung.TenantID) (Tenant, error) {
	defer o.done("GetTenant", time.Now())
	return o.s.GetTenant(ctx, id)
}

func (o *observed) ListTenants(ctx context.Context) ([]Tenant, error) {
	defer o.done("ListTenants", time.Now())
	return o.s.ListTenants(ctx)
}

func (o *observed) CreateToken(ctx context.Context, t Token) error {
	defer o.done("CreateToken", time.Now())
	return o.s.CreateToken(ctx, t)
}

func (o *observed) TokenByHash(ctx context.Context, hash [32]byte) (Token, error) {
	defer o.done("TokenByHash", time.Now())
	return o.s.TokenByHash(ctx, hash)
}

func (o *observed) CreateSandbox(ctx context.Context, s Sandbox, maxPerTenant int, evs ...Event) error {
	defer o.done("CreateSandbox", time.Now())
	return o.s.CreateSandbox(ctx, s, maxPerTenant, evs...)
}

func (o *observed) GetSandbox(ctx context.Context, tenant rung.TenantID, id rung.SandboxID) (Sandbox, error) {
	defer o.done("GetSandbox", time.Now())
	return o.s.GetSandbox(ctx, tenant, id)
}

func (o *observed) SandboxByName(ctx context.Context, tenant rung.TenantID, name string) (Sandbox, error) {
	defer o.done("SandboxByName", time.Now())
	return o.s.SandboxByName(ctx, tenant, name)
}

func (o *observed) ListSandboxes(ctx context.Context, f Filter) ([]Sandbox, error) {
	defer o.done("ListSandboxes", time.Now())
	return o.s.ListSandboxes(ctx, f)
}

func (o *observed) SandboxStates(ctx context.Context) (map[rung.State]int, error) {
	defer o.done("SandboxStates", time.Now())
	return o.s.SandboxStates(ctx)
}

func (o *observed) PostponeExpiry(ctx context.Context, id rung.SandboxID, at time.Time) error {
	defer o.done("PostponeExpiry", time.Now())
	return o.s.PostponeExpiry(ctx, id, at)
}

func (o *observed) UpdateSandbox(ctx context.Context, s Sandbox) error {
	defer o.done("UpdateSandbox", time.Now())
	return o.s.UpdateSandbox(ctx, s)
}

func (o *observed) DeleteSandbox(ctx context.Context, id rung.SandboxID) error {
	defer o.done("DeleteSandbox", time.Now())
	return o.s.DeleteSandbox(ctx, id)
}

func (o *observed) CreateSnapshot(ctx context.Context, s Snapshot, maxPerTenant int) error {
	defer o.done("CreateSnapshot", time.Now())
	return o.s.CreateSnapshot(ctx, s, maxPerTenant)
}

func (o *observed) GetSnapshot(ctx context.Context, tenant rung.TenantID, id rung.SnapshotID) (Snapshot, error) {
	defer o.done("GetSnapshot", time.Now())
	return o.s.GetSnapshot(ctx, tenant, id)
}

func (o *observed) SnapshotByName(ctx context.Context, tenant rung.TenantID, name string) (Snapshot, error) {
	defer o.done("SnapshotByName", time.Now())
	return o.s.SnapshotByName(ctx, tenant, name)
}

func (o *observed) ListSnapshots(ctx context.Context, f SnapshotFilter) ([]Snapshot, error) {
	defer o.done("ListSnapshots", time.Now())
	return o.s.ListSnapshots(ctx, f)
}

func (o *observed) UpdateSnapshot(ctx context.Context, s Snapshot) error {
	defer o.done("UpdateSnapshot", time.Now())
	return o.s.UpdateSnapshot(ctx, s)
}

func (o *observed) DeleteSnapshot(ctx context.Context, id rung.SnapshotID) error {
	defer o.done("DeleteSnapshot", time.Now())
	return o.s.DeleteSnapshot(ctx, id)
}

func (o *observed) SnapshotUsage(ctx context.Context, tenant rung.TenantID) (count int, bytes int64, err error) {
	defer o.done("SnapshotUsage", time.Now())
	return o.s.SnapshotUsage(ctx, tenant)
}

func (o *observed) NextSnapshotExpiry(ctx context.Context) (time.Time, bool, error) {
	defer o.done("NextSnapshotExpiry", time.Now())
	return o.s.NextSnapshotExpiry(ctx)
}

func (o *observed) ExpiredSnapshots(ctx context.Context, now time.Time, limit int) ([]Snapshot, error) {
	defer o.done("ExpiredSnapshots", time.Now())
	return o.s.ExpiredSnapshots(ctx, now, limit)
}

func (o *observed) QueueStartExec(ctx context.Context, e Exec, ev Event) QueuedStart {
	return observedStart{o, o.s.QueueStartExec(ctx, e, ev)}
}

// observedStart times a QueuedStart's waits as op StartExec and its end as
// EndExec.
type observedStart struct {
	o *observed
	q QueuedStart
}

func (s observedStart) Wait() (int64, error) {
	defer s.o.done("StartExec", time.Now())
	return s.q.Wait()
}

func (s observedStart) End(ctx context.Context, e Exec, evs []Event) error {
	defer s.o.done("EndExec", time.Now())
	return s.q.End(ctx, e, evs)
}

func (o *observed) EndExec(ctx context.Context, e Exec, evs []Event) (int64, error) {
	defer o.done("EndExec", time.Now())
	return o.s.EndExec(ctx, e, evs)
}

func (o *observed) GetExec(ctx context.Context, sandbox rung.SandboxID, id rung.ExecID) (Exec, error) {
	defer o.done("GetExec", time.Now())
	return o.s.GetExec(ctx, sandbox, id)
}

func (o *observed) LoseExecs(ctx context.Context, journal func(rung.SandboxID, []rung.ExecID) Event) ([]Exec, error) {
	defer o.done("LoseExecs", time.Now())
	return o.s.LoseExecs(ctx, journal)
}

func (o *observed) AppendEvents(ctx context.Context, sandbox rung.SandboxID, evs []Event) (int64, error) {
	defer o.done("AppendEvents", time.Now())
	return o.s.AppendEvents(ctx, sandbox, evs)
}

func (o *observed) ListEvents(ctx context.Context, sandbox rung.SandboxID, q EventQuery) ([]Event, error) {
	defer o.done("ListEvents", time.Now())
	return o.s.ListEvents(ctx, sandbox, q)
}

func (o *observed) LastSeq(ctx context.Context, sandbox rung.SandboxID) (int64, error) {
	defer o.done("LastSeq", time.Now())
	return o.s.LastSeq(ctx, sandbox)
}

func (o *observed) TrimEvents(ctx context.Context, before time.Time) (int64, error) {
	defer o.done("TrimEvents", time.Now())
	return o.s.TrimEvents(ctx, before)
}

func (o *observed) DeclareEffect(ctx context.Context, e Effect, ev Event) (first Effect, created bool, err error) {
	defer o.done("DeclareEffect", time.Now())
	return o.s.DeclareEffect(ctx, e, ev)
}

func (o *observed) ListEffects(ctx context.Context, sandbox rung.SandboxID) ([]Effect, error) {
	defer o.done("ListEffects", time.Now())
	return o.s.ListEffects(ctx, sandbox)
}

func (o *observed) NextAlarm(ctx context.Context) (time.Time, bool, error) {
	defer o.done("NextAlarm", time.Now())
	return o.s.NextAlarm(ctx)
}

func (o *observed) DueSandboxes(ctx context.Context, now time.Time) ([]Sandbox, error) {
	defer o.done("DueSandboxes", time.Now())
	return o.s.DueSandboxes(ctx, now)
}

func (o *observed) CreateShare(ctx context.Context, sh Share) error {
	defer o.done("CreateShare", time.Now())
	return o.s.CreateShare(ctx, sh)
}

func (o *observed) GetShare(ctx context.Context, tenant rung.TenantID, id string) (Share, error) {
	defer o.done("GetShare", time.Now())
	return o.s.GetShare(ctx, tenant, id)
}

func (o *observed) ListShares(ctx context.Context, tenant rung.TenantID, sandbox rung.SandboxID) ([]Share, error) {
	defer o.done("ListShares", time.Now())
	return o.s.ListShares(ctx, tenant, sandbox)
}

func (o *observed) RevokeShare(ctx context.Context, tenant rung.TenantID, id string, at time.Time) error {
	defer o.done("RevokeShare", time.Now())
	return o.s.RevokeShare(ctx, tenant, id, at)
}

func (o *observed) PutSecret(ctx context.Context, sec SecretRow) (created bool, err error) {
	defer o.done("PutSecret", time.Now())
	return o.s.PutSecret(ctx, sec)
}

func (o *observed) GetSecret(ctx context.Context, tenant rung.TenantID, name string) (SecretRow, error) {
	defer o.done("GetSecret", time.Now())
	return o.s.GetSecret(ctx, tenant, name)
}

func (o *observed) ListSecrets(ctx context.Context, tenant rung.TenantID) ([]SecretRow, error) {
	defer o.done("ListSecrets", time.Now())
	return o.s.ListSecrets(ctx, tenant)
}

func (o *observed) DeleteSecret(ctx context.Context, tenant rung.TenantID, name string) error {
	defer o.done("DeleteSecret", time.Now())
	return o.s.DeleteSecret(ctx, tenant, name)
}

// Close closes the store underneath.
func (o *observed) Close() error { return o.s.Close() }
