package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/storage"
	"rung.dev/rung/store"
)

// Report says what start-up reconciliation found and fixed.
type Report struct {
	LostExecs  []rung.ExecID           `json:"lost_execs,omitempty"` // in flight at the crash: marked lost, not re-run
	Unfinished []rung.SandboxID        `json:"unfinished,omitempty"` // creates or deletes a crash interrupted: removed
	Stopped    []rung.SandboxID        `json:"stopped,omitempty"`    // were running or paused: now ready (containers do not survive)
	Recreated  []rung.SandboxID        `json:"recreated,omitempty"`  // row without subvolume: given an empty workspace
	Pool       storage.ReconcileReport `json:"pool"`                 // subvolumes without rows, staging leftovers
}

// Empty reports whether nothing needed fixing.
func (r Report) Empty() bool {
	return len(r.LostExecs) == 0 && len(r.Unfinished) == 0 && len(r.Stopped) == 0 && len(r.Recreated) == 0 && r.Pool.Empty()
}

// reconcile makes the store and the pool agree after a restart: execs in
// flight become lost (journaled with their ids), interrupted creates and
// deletes are finished, and subvolumes nobody owns are removed.
func (c *Controller) reconcile(ctx context.Context) (Report, error) {
	var rep Report
	lost, err := c.st.LoseExecs(ctx, func(id rung.SandboxID, ids []rung.ExecID) store.Event {
		data, _ := json.Marshal(map[string]any{"execs": ids, "reason": "daemon restarted while they ran; not re-run"})
		return store.Event{Time: time.Now().UTC(), Type: "exec.lost", Journal: true, Data: data}
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
				return rep, fmt.Errorf("finish sandbox %s: %w", sb.ID, err)
			}
			if err := c.st.DeleteSandbox(ctx, sb.ID); err != nil {
				return rep, fmt.Errorf("finish sandbox %s: %w", sb.ID, err)
			}
			rep.Unfinished = append(rep.Unfinished, sb.ID)
			continue
		case rung.StateRunning, rung.StatePaused:
			sb.State, sb.IdleAt = rung.StateReady, time.Time{}
			if err := c.st.UpdateSandbox(ctx, sb); err != nil {
				return rep, err
			}
			rep.Stopped = append(rep.Stopped, sb.ID)
		}
		keep[string(sb.ID)] = true
		ok, err := c.pool.Exists(ctx, string(sb.ID))
		if err != nil {
			return rep, err
		}
		if !ok {
			if err := c.pool.Create(ctx, string(sb.ID)); err != nil {
				return rep, fmt.Errorf("recreate workspace of %s: %w", sb.ID, err)
			}
			rep.Recreated = append(rep.Recreated, sb.ID)
			c.journal(ctx, sb.ID, "sandbox.workspace_lost", map[string]any{"reason": "subvolume missing at start-up; recreated empty"})
		}
	}
	// Snapshots are not owned here yet (issue 2 keeps them): keep every one.
	rep.Pool, err = c.pool.Reconcile(ctx, func(name string) bool {
		return keep[name] || strings.HasPrefix(name, "snp_")
	})
	return rep, err
}
