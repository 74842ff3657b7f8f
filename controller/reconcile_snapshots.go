package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"rung.dev/rung"
	"rung.dev/rung/storage"
	"rung.dev/rung/store"
)

// SnapshotReport says what start-up reconciliation did about snapshots.
type SnapshotReport struct {
	// Unfinished are snapshots and imports a crash interrupted (rows in
	// state creating): their rows and subvolumes were removed.
	Unfinished []rung.SnapshotID `json:"unfinished,omitempty"`
	// Lost are snapshots whose subvolume was gone: their rows were
	// removed.
	Lost []rung.SnapshotID `json:"lost,omitempty"`
}

// Empty reports whether nothing needed fixing.
func (r SnapshotReport) Empty() bool { return len(r.Unfinished) == 0 && len(r.Lost) == 0 }

// reconcileSnapshots makes the snapshot rows and the pool agree: a row a
// crash left in state creating goes, with whatever subvolume it got (so
// no half-made or unrecorded snapshot survives), and is journaled on its
// sandbox; a ready row without a subvolume goes too. Every snapshot that
// stays is added to keep, so that the pool's reconcile removes the
// subvolumes no row names (a live fork's unrecorded snapshot, an import
// renamed into place just before the crash).
func (c *Controller) reconcileSnapshots(ctx context.Context, rep *Report, keep map[string]bool) error {
	rows, err := c.st.ListSnapshots(ctx, store.SnapshotFilter{})
	if err != nil {
		return err
	}
	for _, s := range rows {
		ok, err := c.pool.Exists(ctx, string(s.ID))
		if err != nil {
			return err
		}
		switch {
		case s.State == store.SnapshotCreating:
			if ok {
				if err := c.pool.Delete(ctx, string(s.ID)); err != nil && !errors.Is(err, rung.ErrNotFound) {
					// Without a row the pool's reconcile tries again,
					// and quarantines it if it must.
					c.log.WarnContext(ctx, "unfinished snapshot's subvolume left for the pool's reconcile", "snapshot", s.ID, "err", err)
				}
			}
			if err := c.st.DeleteSnapshot(ctx, s.ID); err != nil && !errors.Is(err, rung.ErrNotFound) {
				return fmt.Errorf("finish snapshot %s: %w", s.ID, err)
			}
			rep.Snapshots.Unfinished = append(rep.Snapshots.Unfinished, s.ID)
			if s.Sandbox != "" {
				c.journalIfExists(ctx, s.Sandbox, rung.EntrySnapshotLost, SnapshotLost{Name: s.Name,
					Reason: "the server stopped while the snapshot was being taken; nothing of it was kept", Snapshot: s.ID})
			} else {
				c.log.WarnContext(ctx, "import interrupted by the server's stop: nothing of it was kept", "snapshot", s.ID, "tenant", s.Tenant)
			}
		case !ok:
			if err := c.st.DeleteSnapshot(ctx, s.ID); err != nil && !errors.Is(err, rung.ErrNotFound) {
				return fmt.Errorf("drop snapshot %s: %w", s.ID, err)
			}
			rep.Snapshots.Lost = append(rep.Snapshots.Lost, s.ID)
			c.log.WarnContext(ctx, "snapshot's subvolume missing at start-up: removed", "snapshot", s.ID, "tenant", s.Tenant)
		default:
			keep[string(s.ID)] = true
		}
	}
	return nil
}

// forkLost journals, on the sandbox sb was forked from, that the fork a
// crash interrupted was removed.
func (c *Controller) forkLost(ctx context.Context, sb store.Sandbox) {
	if sb.ForkedFrom == "" {
		return
	}
	c.journalIfExists(ctx, sb.ForkedFrom, rung.EntrySandboxForkLost, SandboxForkLost{
		Reason: "the server stopped while the fork was being made; it was removed", Sandbox: sb.ID})
}

// recoverRollbacks records the rollbacks a crash interrupted, as the
// pool found them: one whose exchange happened gets the sandbox's origin
// and its "sandbox.restored" entry (marked recovered) unless it was
// journaled already; one that did not is journaled as failed, the sandbox
// having kept its files.
func (c *Controller) recoverRollbacks(ctx context.Context, rbs []storage.Rollback) error {
	for _, rb := range rbs {
		sb, err := c.st.GetSandbox(ctx, "", rung.SandboxID(rb.Sandbox))
		if errors.Is(err, rung.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if !rb.Done {
			c.journal(ctx, sb.ID, rung.EntrySandboxRestoreFailed, SandboxRestoreFailed{
				Reason: "the server stopped before the sandbox's files were replaced; it kept its own", Snapshot: rung.SnapshotID(rb.Snapshot)})
			continue
		}
		if sb.Origin == rung.SnapshotID(rb.Snapshot) && c.lastRestore(ctx, sb.ID) == rb.Snapshot {
			continue // recorded just before the crash
		}
		sb.Origin = rung.SnapshotID(rb.Snapshot)
		if err := c.st.UpdateSandbox(ctx, sb); err != nil {
			return err
		}
		c.journal(ctx, sb.ID, rung.EntrySandboxRestored, SandboxRestored{Recovered: true, Snapshot: rung.SnapshotID(rb.Snapshot)})
	}
	return nil
}

// lastRestore returns the snapshot of the sandbox's latest
// "sandbox.restored" entry among its last few journal entries, or "".
func (c *Controller) lastRestore(ctx context.Context, id rung.SandboxID) string {
	last, err := c.st.LastSeq(ctx, id)
	if err != nil {
		return ""
	}
	// The restore is journaled right before its old files go; only the
	// container's own entries can come between.
	evs, err := c.st.ListEvents(ctx, id, store.EventQuery{After: max(last-16, 0), JournalOnly: true})
	if err != nil {
		return ""
	}
	for i := len(evs) - 1; i >= 0; i-- {
		switch rung.EntryType(evs[i].Type) {
		case rung.EntrySandboxRestored:
			var d SandboxRestored
			json.Unmarshal(evs[i].Data, &d)
			return string(d.Snapshot)
		case rung.EntrySandboxRestoreFailed:
			return ""
		}
	}
	return ""
}

// journalIfExists is journal for a sandbox that may have been deleted
// since (a snapshot's or a fork's source): then there is nobody to tell.
func (c *Controller) journalIfExists(ctx context.Context, id rung.SandboxID, typ rung.EntryType, data any) {
	if err := c.appendJournal(ctx, id, typ, data); err != nil && !errors.Is(err, rung.ErrNotFound) {
		c.log.WarnContext(ctx, "journal append", "sandbox", id, "type", typ, "err", err)
	}
}
