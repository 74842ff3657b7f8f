package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// snapshots is the controller's in-memory snapshot state: which snapshots
// restores and forks are reading (retention and deletes leave those
// alone until they are done), and which sandboxes a rollback is swapping.
type snapshots struct {
	mu     sync.Mutex                       // guards the fields below; taken after Controller.mu, never before
	refs   map[rung.SnapshotID]int          // restores and forks reading each snapshot now
	swaps  map[rung.SandboxID]chan struct{} // rollbacks in progress; closed when done
	spares spares                           // spare.go
	caps   sync.Mutex                       // serialises checking a tenant's byte cap with recording the bytes
}

// hold marks snapshot id as being read until the returned function runs.
func (s *snapshots) hold(id rung.SnapshotID) (release func()) {
	s.mu.Lock()
	if s.refs == nil {
		s.refs = map[rung.SnapshotID]int{}
	}
	s.refs[id]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.refs[id]--; s.refs[id] <= 0 {
			delete(s.refs, id)
		}
		s.mu.Unlock()
	}
}

func (s *snapshots) inUse(id rung.SnapshotID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refs[id] > 0
}

// swapping returns the channel a rollback of sandbox id closes when it is
// done, or nil.
func (s *snapshots) swapping(id rung.SandboxID) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.swaps[id]
}

// SnapshotRequest is what a caller may set on a new snapshot. Zero fields
// take defaults: no name, no labels, the tenant's retention, not frozen.
type SnapshotRequest struct {
	Name   string
	Labels map[string]string
	// TTL is how long the snapshot lives after it is taken and after each
	// restore or fork from it; 0: the tenant's retention.
	TTL time.Duration
	// Freeze stops the container's processes (cgroup freezer) while the
	// snapshot is taken. See docs/decisions/snapshots.md for what each
	// mode guarantees.
	Freeze bool
}

func checkSnapshotRequest(name string, labels map[string]string, ttl time.Duration) error {
	if name != "" && !rung.ValidName(name) {
		return rung.Errorf(rung.ErrInvalid, "invalid snapshot name %q: want 1 to 63 of [a-z0-9._-], starting with a letter or digit", clip(name))
	}
	if ttl < 0 {
		return rung.Errorf(rung.ErrInvalid, "ttl must not be negative")
	}
	return checkLabels(labels)
}

// Snapshot takes a snapshot of tenant's sandbox ref: one read-only
// subvolume snapshot of its workspace, /tmp and its container's root
// filesystem changes, atomic at one instant, with or without a running
// container. The row is written first (state creating), so that a crash
// midway leaves something start-up reconciliation removes and journals.
// Errors: ErrInvalid, ErrNotFound, ErrExists (name taken), ErrLimit (the
// tenant's snapshot count or bytes), ErrUnavailable (freeze impossible).
func (c *Controller) Snapshot(ctx context.Context, tenant rung.TenantID, ref string, req SnapshotRequest) (_ rung.Snapshot, err error) {
	defer func(start time.Time) { c.observeSnapshot(OpSnapshot, start, err, 0) }(time.Now())
	if err := checkSnapshotRequest(req.Name, req.Labels, req.TTL); err != nil {
		return rung.Snapshot{}, err
	}
	a, err := c.acquire(ctx, tenant, ref)
	if err != nil {
		return rung.Snapshot{}, err
	}
	defer c.release(a)
	var out rung.Snapshot
	err = c.do(ctx, a, func() error {
		s, err := c.snapshotLocked(ctx, c.sandbox(a), req)
		out = s.Snapshot
		return err
	})
	return out, err
}

// snapshotLocked snapshots sb. It runs on sb's actor goroutine.
func (c *Controller) snapshotLocked(ctx context.Context, sb store.Sandbox, req SnapshotRequest) (store.Snapshot, error) {
	ctx = context.WithoutCancel(ctx) // half a snapshot is never left for a gone caller
	pol := c.cfg.Snapshots.For(sb.Tenant)
	now := time.Now().UTC()
	s := store.Snapshot{Snapshot: rung.Snapshot{
		ID: rung.NewSnapshotID(), Name: req.Name, Tenant: sb.Tenant, Labels: req.Labels, Sandbox: sb.ID, Parent: sb.Origin,
		Image: sb.Image, Consistency: "crash", CreatedAt: now, TTL: req.TTL,
	}, State: store.SnapshotCreating, Source: sb.Sandbox}
	if s.TTL == 0 {
		s.TTL = pol.Retention
	}
	if req.Freeze {
		// A sandbox without a container has no process to freeze: its
		// snapshot is as consistent as a frozen one's.
		s.Consistency = "frozen"
	}
	s.ExpiresAt = now.Add(s.TTL)
	if err := c.st.CreateSnapshot(ctx, s, pol.MaxSnapshots); err != nil {
		return s, fmt.Errorf("snapshot sandbox %s: %w", sb.ID, err)
	}
	undo := func(cause error) (store.Snapshot, error) {
		c.dropSnapshot(ctx, s.ID)
		return s, fmt.Errorf("snapshot sandbox %s: %w", sb.ID, cause)
	}
	if err := c.takeSnapshot(ctx, sb, &s, req.Freeze); err != nil {
		return undo(err)
	}
	if err := c.sizeSnapshot(ctx, &s, pol); err != nil {
		return undo(err)
	}
	c.journal(ctx, sb.ID, rung.EntrySandboxSnapshotted, SandboxSnapshotted{
		Consistency: s.Consistency, Name: s.Name, SizeBytes: s.SizeBytes, Snapshot: s.ID,
	})
	c.log.InfoContext(ctx, "snapshot taken", "sandbox", sb.ID, "tenant", sb.Tenant, "snapshot", s.ID)
	c.poke() // a new expiry
	return s, nil
}

// takeSnapshot makes s's subvolume from sb's, freezing its container
// around it when asked (and when it has one).
func (c *Controller) takeSnapshot(ctx context.Context, sb store.Sandbox, s *store.Snapshot, freeze bool) error {
	if freeze {
		if t, err := c.containers(); err == nil {
			thaw, err := t.Freeze(ctx, sb.ID)
			if err != nil {
				return err
			}
			if thaw != nil {
				defer func() {
					if err := thaw(); err != nil {
						c.log.ErrorContext(ctx, "thaw after snapshot", "sandbox", sb.ID, "err", err)
					}
				}()
			}
		}
	}
	c.fault("snapshot.row") // the row exists, the subvolume not yet
	if err := c.pool.Snapshot(ctx, string(sb.ID), string(s.ID)); err != nil {
		return err
	}
	c.fault("snapshot.subvolume") // the subvolume exists, the row says creating
	return nil
}

// sizeSnapshot fills in s's sizes from its sandbox's quota usage (read
// just after the snapshot's own transaction commit, so current), holds
// them to the tenant's byte cap, and marks s ready.
func (c *Controller) sizeSnapshot(ctx context.Context, s *store.Snapshot, pol SnapshotPolicy) error {
	if u, err := c.pool.Usage(ctx, string(s.Sandbox)); err == nil {
		s.SizeBytes = u.Bytes
		prev, err := c.st.ListSnapshots(ctx, store.SnapshotFilter{Sandbox: s.Sandbox, Newest: true, Limit: 2})
		if err != nil {
			return err
		}
		s.ExclusiveBytes = s.SizeBytes
		for _, p := range prev {
			if p.ID != s.ID && p.State == store.SnapshotReady {
				s.ExclusiveBytes = max(0, s.SizeBytes-p.SizeBytes)
				break
			}
		}
	} else if !errors.Is(err, rung.ErrUnavailable) {
		return err
	}
	return c.markReady(ctx, s, pol)
}

// markReady records s as ready, unless that takes its tenant past its
// byte cap.
func (c *Controller) markReady(ctx context.Context, s *store.Snapshot, pol SnapshotPolicy) error {
	s.State = store.SnapshotReady
	if pol.MaxBytes <= 0 {
		return c.st.UpdateSnapshot(ctx, *s)
	}
	c.snaps.caps.Lock()
	defer c.snaps.caps.Unlock()
	_, used, err := c.st.SnapshotUsage(ctx, s.Tenant)
	if err != nil {
		return err
	}
	if used+s.ExclusiveBytes > pol.MaxBytes {
		return &rung.LimitError{Limit: rung.LimitSnapshotBytes, Max: pol.MaxBytes}
	}
	return c.st.UpdateSnapshot(ctx, *s)
}

// dropSnapshot removes a snapshot's row, then its subvolume (a crash
// between leaves a subvolume without a row, which reconciliation
// removes). Failures are logged: the caller is already failing.
func (c *Controller) dropSnapshot(ctx context.Context, id rung.SnapshotID) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.st.DeleteSnapshot(ctx, id); err != nil && !errors.Is(err, rung.ErrNotFound) {
		c.log.WarnContext(ctx, "undo snapshot: row left for reconcile", "snapshot", id, "err", err)
	}
	if err := c.pool.Delete(ctx, string(id)); err != nil && !errors.Is(err, rung.ErrNotFound) {
		c.log.WarnContext(ctx, "undo snapshot: subvolume left for reconcile", "snapshot", id, "err", err)
	}
}

// findSnapshot returns tenant's ready snapshot ref (an ID or a name), or
// ErrNotFound: another tenant's is not found either, with the same
// message.
func (c *Controller) findSnapshot(ctx context.Context, tenant rung.TenantID, ref string) (store.Snapshot, error) {
	id := rung.SnapshotID(ref)
	var s store.Snapshot
	var err error
	switch {
	case id.Valid():
		s, err = c.st.GetSnapshot(ctx, tenant, id)
	case rung.ValidName(ref):
		s, err = c.st.SnapshotByName(ctx, tenant, ref)
	default:
		return s, rung.Errorf(rung.ErrInvalid, "invalid snapshot id or name %q", clip(ref))
	}
	if errors.Is(err, rung.ErrNotFound) || err == nil && s.State != store.SnapshotReady {
		return s, rung.Errorf(rung.ErrNotFound, "snapshot %s not found", clip(ref))
	}
	return s, err
}

// GetSnapshot returns tenant's snapshot ref (an ID or a name), or
// ErrNotFound.
func (c *Controller) GetSnapshot(ctx context.Context, tenant rung.TenantID, ref string) (rung.Snapshot, error) {
	s, err := c.findSnapshot(ctx, tenant, ref)
	return s.Snapshot, err
}

// SnapshotFilter selects a tenant's snapshots; zero fields match all.
type SnapshotFilter struct {
	Sandbox string // a sandbox id or name
	Name    string
	Labels  map[string]string
	// After is the Next of the previous page; Limit bounds a page
	// (default and most: 1000).
	After string
	Limit int
}

// SnapshotPage is one page of a snapshot list.
type SnapshotPage struct {
	Snapshots []rung.Snapshot
	Next      string // pass as After for the next page; "" on the last
}

const maxSnapshotPage = 1000

// ListSnapshots returns a page of tenant's snapshots matching f, oldest
// first.
func (c *Controller) ListSnapshots(ctx context.Context, tenant rung.TenantID, f SnapshotFilter) (SnapshotPage, error) {
	if err := checkLabels(f.Labels); err != nil {
		return SnapshotPage{}, err
	}
	if f.Name != "" && !rung.ValidName(f.Name) {
		return SnapshotPage{}, rung.Errorf(rung.ErrInvalid, "invalid snapshot name %q", clip(f.Name))
	}
	q := store.SnapshotFilter{Tenant: tenant, Name: f.Name, Labels: f.Labels, Limit: f.Limit}
	if q.Limit <= 0 || q.Limit > maxSnapshotPage {
		q.Limit = maxSnapshotPage
	}
	if f.Sandbox != "" {
		// The sandbox may be gone; its snapshots stay listed by its id.
		if id := rung.SandboxID(f.Sandbox); id.Valid() {
			q.Sandbox = id
		} else if sb, err := c.Get(ctx, tenant, f.Sandbox); err == nil {
			q.Sandbox = sb.ID
		} else {
			return SnapshotPage{}, err
		}
	}
	if f.After != "" {
		var err error
		if q.AfterCreated, q.After, err = parseCursor(f.After); err != nil {
			return SnapshotPage{}, err
		}
	}
	limit := q.Limit
	q.Limit++ // one more tells whether there is a next page
	rows, err := c.st.ListSnapshots(ctx, q)
	if err != nil {
		return SnapshotPage{}, fmt.Errorf("list snapshots: %w", err)
	}
	var page SnapshotPage
	if len(rows) > limit {
		rows = rows[:limit]
		// The cursor is the last row read, shown or not (one being
		// created is not), so no row is read twice or skipped.
		page.Next = cursor(rows[limit-1].Snapshot)
	}
	for _, s := range rows {
		if s.State == store.SnapshotReady {
			page.Snapshots = append(page.Snapshots, s.Snapshot)
		}
	}
	return page, nil
}

// DeleteSnapshot deletes tenant's snapshot ref: its row, then its
// subvolume. Sandboxes restored or forked from it are unaffected (theirs
// are writable snapshots of their own). A snapshot a restore or fork is
// reading right now is ErrConflict.
func (c *Controller) DeleteSnapshot(ctx context.Context, tenant rung.TenantID, ref string) error {
	s, err := c.findSnapshot(ctx, tenant, ref)
	if err != nil {
		return err
	}
	if c.snaps.inUse(s.ID) {
		return rung.Errorf(rung.ErrConflict, "snapshot %s is being restored or forked; try again when that is done", s.ID)
	}
	if err := c.st.DeleteSnapshot(ctx, s.ID); err != nil {
		return notFoundSnapshot(err, ref)
	}
	if err := c.pool.Delete(context.WithoutCancel(ctx), string(s.ID)); err != nil && !errors.Is(err, rung.ErrNotFound) {
		// Out of reach already (no row); the next start removes it.
		c.log.WarnContext(ctx, "snapshot subvolume left for reconcile", "snapshot", s.ID, "err", err)
	}
	c.log.InfoContext(ctx, "snapshot deleted", "snapshot", s.ID, "tenant", tenant)
	return nil
}

func notFoundSnapshot(err error, ref string) error {
	if errors.Is(err, rung.ErrNotFound) {
		return rung.Errorf(rung.ErrNotFound, "snapshot %s not found", clip(ref))
	}
	return err
}

// PinSnapshot pins (pinned) or unpins tenant's snapshot ref: a pinned
// snapshot never expires; unpinning gives it its TTL from now.
func (c *Controller) PinSnapshot(ctx context.Context, tenant rung.TenantID, ref string, pinned bool) (rung.Snapshot, error) {
	s, err := c.findSnapshot(ctx, tenant, ref)
	if err != nil {
		return rung.Snapshot{}, err
	}
	s.Pinned, s.ExpiresAt = pinned, time.Time{}
	if !pinned {
		s.ExpiresAt = time.Now().UTC().Add(s.TTL)
	}
	if err := c.st.UpdateSnapshot(ctx, s); err != nil {
		return rung.Snapshot{}, notFoundSnapshot(err, ref)
	}
	c.poke()
	return s.Snapshot, nil
}

// renewGranularity is how far a renewal must move an expiry to be
// written: restores in a burst cost one store write, not one each.
const renewGranularity = time.Minute

// renew pushes snapshot s's expiry to its TTL from now (a restore or fork
// used it), unless it is pinned or the expiry is less than a minute short
// of that. A failure is logged: the restore is done.
func (c *Controller) renew(ctx context.Context, s store.Snapshot) {
	next := time.Now().UTC().Add(s.TTL)
	if s.Pinned || next.Sub(s.ExpiresAt) < renewGranularity {
		return
	}
	s.ExpiresAt = next
	if err := c.st.UpdateSnapshot(context.WithoutCancel(ctx), s); err != nil && !errors.Is(err, rung.ErrNotFound) {
		c.log.WarnContext(ctx, "renew snapshot retention", "snapshot", s.ID, "err", err)
	}
	c.poke()
}

// cursor is a page's position: its last snapshot's creation time and ID.
func cursor(s rung.Snapshot) string { return pageCursor(s.CreatedAt, string(s.ID)) }

func parseCursor(v string) (time.Time, rung.SnapshotID, error) {
	t, id, ok := splitCursor(v)
	if !ok || !rung.SnapshotID(id).Valid() {
		return time.Time{}, "", rung.Errorf(rung.ErrInvalid, "invalid page cursor %q", clip(v))
	}
	return t, rung.SnapshotID(id), nil
}

// pageCursor is the cursor of a list's page that ends at the item
// created at created with id ("<Unix ns>-<id>"): lists of sandboxes and
// of snapshots go on after it.
func pageCursor(created time.Time, id string) string {
	return strconv.FormatInt(created.UnixNano(), 10) + "-" + id
}

// splitCursor reads a pageCursor; ok is false when v is not one.
func splitCursor(v string) (created time.Time, id string, ok bool) {
	ns, id, ok := strings.Cut(v, "-")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil {
		return time.Time{}, "", false
	}
	return time.Unix(0, n).UTC(), id, true
}
