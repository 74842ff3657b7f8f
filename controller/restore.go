package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// branch is a new sandbox whose files are a writable snapshot of a
// snapshot's: a restore or one fork.
type branch struct {
	tenant rung.TenantID
	from   store.Snapshot // its files, image and (by default) its config
	req    CreateRequest  // the new sandbox's config, from's filled in
	forkOf rung.SandboxID // the sandbox it is a fork of; "" for a restore
	origin rung.SnapshotID
	typ    rung.EntryType // its first journal entry: sandbox.created or sandbox.forked
	data   any            // that entry's data: a SandboxCreated or a SandboxForked
}

// fromSource fills the zero fields of req from the sandbox a snapshot was
// taken of: a restore keeps its size, isolation, network, environment,
// labels, idle timeout and time to live unless the request says otherwise.
func fromSource(req CreateRequest, src rung.Sandbox) CreateRequest {
	if req.Size == (rung.Size{}) {
		req.Size = src.Size
		if src.Size.Preset != "" {
			req.Size = rung.Size{Preset: src.Size.Preset} // resolved again against today's policy
		}
	}
	if req.Isolation == "" {
		req.Isolation = src.Isolation
	}
	if req.Network.Mode == "" {
		req.Network = src.Network
	}
	if req.Env == nil {
		req.Env = src.Env
	}
	if req.Labels == nil {
		req.Labels = src.Labels
	}
	if req.IdleTimeout == 0 {
		req.IdleTimeout = src.IdleTimeout
	}
	if req.TTL == 0 {
		req.TTL = src.TTL
	}
	return req
}

// makeBranch creates b's sandbox: a store row in state creating, then a
// fork of the snapshot's subvolume limited to the sandbox's disk size,
// then state ready; a crash midway leaves a creating row that start-up
// reconciliation removes (and journals on the sandbox forked, if any).
func (c *Controller) makeBranch(ctx context.Context, b branch) (rung.Sandbox, error) {
	sb, err := c.prepareBranch(ctx, b)
	if err != nil {
		return rung.Sandbox{}, err
	}
	c.fault("fork.row")
	if err := c.pool.Fork(ctx, string(b.from.ID), string(sb.ID)); err != nil {
		return rung.Sandbox{}, c.undoBranch(ctx, sb, err)
	}
	c.fault("fork.subvolume")
	return c.finishBranch(ctx, b, sb)
}

// prepareBranch checks b and writes its sandbox's row, in state creating.
func (c *Controller) prepareBranch(ctx context.Context, b branch) (store.Sandbox, error) {
	size, err := c.checkCreate(b.tenant, b.req)
	if err != nil {
		return store.Sandbox{}, err
	}
	now := time.Now().UTC()
	// The source row carries the config a restore keeps that the request
	// cannot name (the user commands run as, and whatever comes later).
	sb := store.Sandbox{Sandbox: b.from.Source}
	sb.ID, sb.Name, sb.Tenant, sb.Labels, sb.Image = rung.NewSandboxID(), b.req.Name, b.tenant, b.req.Labels, b.from.Image
	sb.Size, sb.Isolation, sb.Network, sb.Env = size, b.req.Isolation, b.req.Network, b.req.Env
	sb.IdleTimeout, sb.TTL, sb.State, sb.CreatedAt, sb.UpdatedAt = b.req.IdleTimeout, b.req.TTL, store.StateCreating, now, now
	sb.Origin, sb.ForkedFrom, sb.OnExpiry = b.origin, b.forkOf, b.req.OnExpiry
	if sb.Isolation == "" {
		sb.Isolation = rung.IsolationContainer
	}
	if sb.Network.Mode == "" {
		sb.Network.Mode = "none"
	}
	if b.req.TTL > 0 {
		sb.ExpiresAt = now.Add(b.req.TTL)
	}
	if err := c.st.CreateSandbox(ctx, sb, c.lim.SandboxesPerTenant); err != nil {
		return store.Sandbox{}, err
	}
	return sb, nil
}

// finishBranch limits sb's new subvolume to its disk size, marks it ready
// and journals b's entry.
func (c *Controller) finishBranch(ctx context.Context, b branch, sb store.Sandbox) (rung.Sandbox, error) {
	if err := c.pool.SetQuota(ctx, string(sb.ID), sb.Size.DiskBytes); err != nil && !errors.Is(err, rung.ErrUnavailable) {
		return rung.Sandbox{}, c.undoBranch(ctx, sb, err)
	}
	sb.State = rung.StateReady
	if err := c.st.UpdateSandbox(ctx, sb); err != nil {
		return rung.Sandbox{}, c.undoBranch(ctx, sb, err)
	}
	c.journal(ctx, sb.ID, b.typ, b.data)
	if !sb.ExpiresAt.IsZero() {
		c.poke()
	}
	return sb.Sandbox, nil
}

// undoBranch removes a branch that failed (its subvolume, then its row,
// without the caller's cancellation) and returns cause.
func (c *Controller) undoBranch(ctx context.Context, sb store.Sandbox, cause error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.pool.Delete(cctx, string(sb.ID)); err != nil && !errors.Is(err, rung.ErrNotFound) {
		c.log.WarnContext(ctx, "undo sandbox create: subvolume left for reconcile", "sandbox", sb.ID, "err", err)
	}
	if err := c.st.DeleteSandbox(cctx, sb.ID); err != nil {
		c.log.WarnContext(ctx, "undo sandbox create: row left for reconcile", "sandbox", sb.ID, "err", err)
	}
	return cause
}

// createFromSnapshot is Create with req.FromSnapshot: a new sandbox whose
// files and root filesystem changes are the snapshot's, on the snapshot's
// image digest.
func (c *Controller) createFromSnapshot(ctx context.Context, tenant rung.TenantID, req CreateRequest) (_ rung.Sandbox, err error) {
	defer func(start time.Time) { c.observeSnapshot(OpRestore, start, err, 0) }(time.Now())
	snap, err := c.findSnapshot(ctx, tenant, req.FromSnapshot)
	if err != nil {
		return rung.Sandbox{}, err
	}
	defer c.snaps.hold(snap.ID)()
	if snap.Image, err = c.restoreImage(tenant, snap, req.Image); err != nil {
		return rung.Sandbox{}, err
	}
	if req.Env, err = c.sandboxEnv(ctx, tenant, req.Env); err != nil {
		return rung.Sandbox{}, err
	}
	req = fromSource(req, snap.Source)
	sb, err := c.makeBranch(ctx, branch{tenant: tenant, from: snap, req: req, origin: snap.ID, typ: rung.EntrySandboxCreated,
		data: SandboxCreated{Name: req.Name, Snapshot: snap.ID}})
	if err != nil {
		return rung.Sandbox{}, fmt.Errorf("restore snapshot %s: %w", snap.ID, err)
	}
	c.renew(ctx, snap)
	c.spareFor(snap.ID) // the next restore renames (spare.go)
	c.log.InfoContext(ctx, "sandbox restored from snapshot", "sandbox", sb.ID, "tenant", tenant, "snapshot", snap.ID)
	return sb, nil
}

// restoreImage returns the image a sandbox from snapshot snap runs: the
// snapshot's own digest, which must be on this server (its root
// filesystem changes are only meaningful on those layers). asked, the
// request's image, must pin to the same digest. Both failures are
// ErrConflict naming the two digests.
func (c *Controller) restoreImage(tenant rung.TenantID, snap store.Snapshot, asked string) (string, error) {
	check := c.cfg.CheckImage
	if snap.Image == "" || check == nil {
		// A snapshot of a sandbox that never had an image pinned holds no
		// root filesystem changes: it starts on the image asked for, as a
		// new sandbox would.
		if check == nil {
			return asked, nil
		}
		return check(tenant, asked)
	}
	if asked != "" {
		pinned, err := check(tenant, asked)
		if err != nil {
			return "", err
		}
		if pinned != snap.Image {
			return "", rung.Errorf(rung.ErrConflict, "snapshot %s is bound to image %s; the request asks for %s", snap.ID, snap.Image, pinned)
		}
	}
	got, err := check(tenant, snap.Image)
	if err == nil {
		return got, nil
	}
	if c.haveImage(snap.Image) {
		return "", err // the allowlist refuses it
	}
	name, _, _ := cutLast(snap.Image, "@sha256:")
	if cur, cerr := check(tenant, name); cerr == nil {
		return "", rung.Errorf(rung.ErrConflict, "snapshot %s needs image %s, which this server does not have (it has %s)", snap.ID, snap.Image, cur)
	}
	return "", rung.Errorf(rung.ErrConflict, "snapshot %s needs image %s, which this server does not have", snap.ID, snap.Image)
}

// haveImage reports whether the container tier's image store keeps ref
// (name@sha256:…); true when it cannot tell.
func (c *Controller) haveImage(ref string) bool {
	t, err := c.containers()
	if err != nil {
		return true
	}
	return t.HasImage(ref)
}

// Rollback puts the files of tenant's snapshot snapRef back in place of
// sandbox ref's: its container is stopped gracefully, execs in flight are
// canceled, and its subvolume is exchanged for a writable snapshot of the
// snapshot's in one atomic step; the sandbox keeps its id, name, journal
// and sequence, and journals "sandbox.restored". The snapshot must be of
// the sandbox's image digest (ErrConflict). Errors: ErrNotFound,
// ErrInvalid, ErrConflict.
func (c *Controller) Rollback(ctx context.Context, tenant rung.TenantID, ref, snapRef string) (_ rung.Sandbox, err error) {
	defer func(start time.Time) { c.observeSnapshot(OpRollback, start, err, 0) }(time.Now())
	snap, err := c.findSnapshot(ctx, tenant, snapRef)
	if err != nil {
		return rung.Sandbox{}, err
	}
	a, err := c.acquire(ctx, tenant, ref)
	if err != nil {
		return rung.Sandbox{}, err
	}
	defer c.release(a)
	if sb := c.sandbox(a); snap.Image != "" && sb.Image != snap.Image {
		return rung.Sandbox{}, rung.Errorf(rung.ErrConflict, "snapshot %s is bound to image %s; sandbox %s runs %s", snap.ID, snap.Image, sb.ID, sb.Image)
	}
	defer c.snaps.hold(snap.ID)()
	// Stopped before the swap is queued, so that the container's exit is
	// usually journaled before the rollback; the swap stops it again in
	// case an exec started one meanwhile.
	if err := c.stopContainerOf(ctx, a.id, "rollback"); err != nil {
		return rung.Sandbox{}, fmt.Errorf("rollback sandbox %s: %w", a.id, err)
	}
	var out rung.Sandbox
	err = c.do(ctx, a, func() error {
		sb, err := c.rollbackLocked(ctx, a, snap)
		out = sb.Sandbox
		return err
	})
	if err == nil {
		c.renew(ctx, snap)
		c.spareFor(snap.ID)
	}
	return out, err
}

// rollbackLocked swaps a's files for snap's. It runs on a's goroutine.
// The actor is retired first (its open file view and shell belong to the
// old subvolume): requests that come meanwhile wait for the swap and then
// get a fresh actor (see acquire).
func (c *Controller) rollbackLocked(ctx context.Context, a *actor, snap store.Snapshot) (store.Sandbox, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	done := make(chan struct{})
	c.mu.Lock()
	if a.deleted || a.retired {
		c.mu.Unlock()
		return store.Sandbox{}, rung.Errorf(rung.ErrNotFound, "sandbox %s not found", a.id)
	}
	a.retired = true
	if c.actors[a.id] == a {
		delete(c.actors, a.id)
	}
	c.snaps.mu.Lock()
	if c.snaps.swaps == nil {
		c.snaps.swaps = map[rung.SandboxID]chan struct{}{}
	}
	c.snaps.swaps[a.id] = done
	c.snaps.mu.Unlock()
	sb := a.sb
	c.mu.Unlock()
	defer func() {
		c.snaps.mu.Lock()
		delete(c.snaps.swaps, a.id)
		c.snaps.mu.Unlock()
		close(done)
	}()
	a.execCancel()
	a.execs.Wait()
	if err := c.stopContainerOf(ctx, a.id, "rollback"); err != nil {
		return sb, fmt.Errorf("rollback sandbox %s: %w", a.id, err)
	}
	commit, err := c.pool.Replace(ctx, string(a.id), string(snap.ID))
	if err != nil {
		return sb, fmt.Errorf("rollback sandbox %s: %w", a.id, err)
	}
	c.fault("rollback.exchanged") // the new files are in place, nothing recorded yet
	sb.Origin, sb.State, sb.IdleAt, sb.UpdatedAt = snap.ID, rung.StateReady, time.Time{}, time.Now().UTC()
	if err := c.writeRow(ctx, a, sb); err != nil {
		// The files are swapped; start-up reconciliation records it.
		return sb, fmt.Errorf("rollback sandbox %s: %w", a.id, err)
	}
	c.journal(ctx, a.id, rung.EntrySandboxRestored, SandboxRestored{Name: &snap.Name, Snapshot: snap.ID})
	commit()
	c.log.InfoContext(ctx, "sandbox rolled back", "sandbox", a.id, "tenant", sb.Tenant, "snapshot", snap.ID)
	return sb, nil
}
