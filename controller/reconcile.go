package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/storage"
	"rung.dev/rung/store"
)

// Report says what start-up reconciliation found and fixed, and what it
// could not.
type Report struct {
	LostExecs   []rung.ExecID           `json:"lost_execs,omitempty"`  // in flight at the crash: marked lost, not re-run
	Unfinished  []rung.SandboxID        `json:"unfinished,omitempty"`  // creates or deletes a crash (or a quarantine) left unfinished: removed
	Stopped     []rung.SandboxID        `json:"stopped,omitempty"`     // were running or paused: now ready (no container to adopt)
	Adopted     []rung.SandboxID        `json:"adopted,omitempty"`     // were running, and their containers still are: adopted (adopt.go)
	Recreated   []rung.SandboxID        `json:"recreated,omitempty"`   // row without subvolume: given an empty workspace
	Quarantined []Quarantine            `json:"quarantined,omitempty"` // could not be finished: left in place, retried at the next start
	Snapshots   SnapshotReport          `json:"snapshots,omitzero"`    // snapshot rows a crash left unfinished (reconcile_snapshots.go)
	Pool        storage.ReconcileReport `json:"pool"`                  // subvolumes without rows, staging leftovers

	running []store.Sandbox // rows left running for adoptContainers
}

// Quarantine is a sandbox whose files start-up reconciliation could not
// remove or recreate. It is left as it is, out of use, and the next
// start tries again.
type Quarantine struct {
	ID     rung.SandboxID `json:"id"`
	Reason string         `json:"reason"` // the error, for the operator
}

// Empty reports whether nothing needed fixing.
func (r Report) Empty() bool {
	return len(r.LostExecs) == 0 && len(r.Unfinished) == 0 && len(r.Stopped) == 0 && len(r.Adopted) == 0 && len(r.Recreated) == 0 &&
		len(r.Quarantined) == 0 && r.Snapshots.Empty() && r.Pool.Empty()
}

// reconcile makes the store and the pool agree after a restart: execs in
// flight become lost (journaled with their ids), interrupted creates and
// deletes are finished, and subvolumes nobody owns are removed. A sandbox
// whose files cannot be removed or recreated is quarantined (see
// [Controller.quarantine]) rather than failing the start: one sandbox must
// never keep the daemon from serving the others. Only store failures and
// ctx end it with an error.
func (c *Controller) reconcile(ctx context.Context) (Report, error) {
	var rep Report
	lost, err := c.st.LoseExecs(ctx, func(id rung.SandboxID, ids []rung.ExecID) store.Event {
		data, _ := json.Marshal(ExecLost{Execs: ids, Reason: "daemon restarted while they ran; not re-run"})
		return store.Event{Time: time.Now().UTC(), Type: string(rung.EntryExecLost), Journal: true, Data: data}
	})
	if err != nil {
		return rep, err
	}
	for _, e := range lost {
		rep.LostExecs = append(rep.LostExecs, e.ID)
	}
	rows, err := c.st.ListSandboxes(ctx, store.Filter{})
	if err != nil {
		return rep, err
	}
	keep := map[string]bool{}
	for _, sb := range rows {
		switch sb.State {
		case store.StateCreating, rung.StateDeleted:
			if err := c.pool.Delete(ctx, string(sb.ID)); err != nil && !errors.Is(err, rung.ErrNotFound) {
				if ctx.Err() != nil {
					return rep, ctx.Err()
				}
				if err := c.quarantine(ctx, sb, err); err != nil {
					return rep, err
				}
				rep.Quarantined = append(rep.Quarantined, Quarantine{ID: sb.ID, Reason: err.Error()})
				keep[string(sb.ID)] = true // the pool's reconcile must not try it again
				continue
			}
			if err := c.st.DeleteSandbox(ctx, sb.ID); err != nil {
				return rep, fmt.Errorf("finish sandbox %s: %w", sb.ID, err)
			}
			rep.Unfinished = append(rep.Unfinished, sb.ID)
			c.forkLost(ctx, sb) // reconcile_snapshots.go
			continue
		case rung.StateRunning, rung.StatePaused:
			if sb.State == rung.StateRunning && c.tier != nil {
				// Its container may have outlived the daemon: adopted
				// or settled once the container tier is wired (adopt.go).
				rep.running = append(rep.running, sb)
				break
			}
			sb.State, sb.IdleAt = rung.StateReady, time.Time{}
			if err := c.st.UpdateSandbox(ctx, sb); err != nil {
				return rep, err
			}
			rep.Stopped = append(rep.Stopped, sb.ID)
		}
		keep[string(sb.ID)] = true
		recreated, err := c.ensureWorkspace(ctx, sb)
		switch {
		case err != nil && ctx.Err() != nil:
			return rep, ctx.Err()
		case err != nil:
			// The row stays as it is: without a workspace every file
			// operation and exec fails, and a delete still works.
			c.log.WarnContext(ctx, "sandbox quarantined: its workspace is missing and could not be recreated; retried at the next start",
				"sandbox", sb.ID, "tenant", sb.Tenant, "err", err)
			c.journal(ctx, sb.ID, rung.EntrySandboxQuarantined, SandboxQuarantined{Reason: "workspace missing at start-up and could not be recreated; retried at the next start"})
			rep.Quarantined = append(rep.Quarantined, Quarantine{ID: sb.ID, Reason: err.Error()})
		case recreated:
			rep.Recreated = append(rep.Recreated, sb.ID)
			c.journal(ctx, sb.ID, rung.EntrySandboxWorkspaceLost, SandboxWorkspaceLost{Reason: "subvolume missing at start-up; recreated empty"})
		}
	}
	if err := c.reconcileSnapshots(ctx, &rep, keep); err != nil {
		return rep, err
	}
	rep.Pool, err = c.pool.Reconcile(ctx, func(name string) bool { return keep[name] })
	if err != nil {
		return rep, err
	}
	return rep, c.recoverRollbacks(ctx, rep.Pool.Rollbacks)
}

// ensureWorkspace gives sb an empty subvolume, limited to its disk size,
// if it has none, and reports whether it did.
func (c *Controller) ensureWorkspace(ctx context.Context, sb store.Sandbox) (bool, error) {
	ok, err := c.pool.Exists(ctx, string(sb.ID))
	if err != nil || ok {
		return false, err
	}
	if err := c.pool.Create(ctx, string(sb.ID)); err != nil {
		return false, fmt.Errorf("recreate workspace of %s: %w", sb.ID, err)
	}
	if err := c.pool.SetQuota(ctx, string(sb.ID), sb.Size.DiskBytes); err != nil && !errors.Is(err, rung.ErrUnavailable) {
		// No workspace rather than an unlimited one.
		if derr := c.pool.Delete(ctx, string(sb.ID)); derr != nil {
			c.log.WarnContext(ctx, "recreated workspace left without its limit", "sandbox", sb.ID, "err", derr)
		}
		return false, fmt.Errorf("limit recreated workspace of %s: %w", sb.ID, err)
	}
	return true, nil
}

// quarantine keeps sandbox sb, whose subvolume could not be removed, as a
// tombstone: state deleted, which no request reaches (not found, as after
// any delete), with its name freed for a new sandbox and its alarms
// cleared (a due alarm on a row no request reaches would fire again and
// again). The subvolume stays where it is; the next start's
// reconciliation tries the removal again. It journals and logs why, and
// returns only a store failure.
func (c *Controller) quarantine(ctx context.Context, sb store.Sandbox, cause error) error {
	sb.State, sb.Name, sb.ExpiresAt, sb.IdleAt, sb.UpdatedAt = rung.StateDeleted, "", time.Time{}, time.Time{}, time.Now().UTC()
	if err := c.st.UpdateSandbox(ctx, sb); err != nil {
		return fmt.Errorf("quarantine sandbox %s: %w", sb.ID, err)
	}
	c.log.WarnContext(ctx, "sandbox quarantined: its files could not be removed; retried at the next start",
		"sandbox", sb.ID, "tenant", sb.Tenant, "err", cause)
	c.journal(ctx, sb.ID, rung.EntrySandboxQuarantined, SandboxQuarantined{Reason: "its files could not be removed; the removal is retried at the next start"})
	return nil
}
