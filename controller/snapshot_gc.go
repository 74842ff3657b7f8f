package controller

import (
	"context"
	"errors"
	"time"

	"rung.dev/rung"
)

// expireBatch is how many expired snapshots one pass of the alarm
// goroutine reads at a time.
const expireBatch = 100

// expireSnapshots deletes the snapshots whose retention ended by now: the
// row, then the subvolume, journaled on the sandbox they were taken from
// ("snapshot.expired") when it still exists. A snapshot a restore or fork
// is reading is kept until it is done: its expiry moves a minute on (the
// restore renews it anyway). It runs on the alarm goroutine.
func (c *Controller) expireSnapshots(now time.Time) {
	for c.ctx.Err() == nil {
		due, err := c.st.ExpiredSnapshots(c.ctx, now, expireBatch)
		if err != nil {
			if c.ctx.Err() == nil {
				c.log.Warn("read expired snapshots", "err", err)
			}
			return
		}
		for _, s := range due {
			if c.snaps.inUse(s.ID) {
				s.ExpiresAt = now.Add(time.Minute)
				if err := c.st.UpdateSnapshot(c.ctx, s); err != nil && !errors.Is(err, rung.ErrNotFound) {
					c.log.Warn("postpone snapshot expiry", "snapshot", s.ID, "err", err)
				}
				continue
			}
			if err := c.st.DeleteSnapshot(c.ctx, s.ID); err != nil {
				if !errors.Is(err, rung.ErrNotFound) && c.ctx.Err() == nil {
					c.log.Warn("expire snapshot", "snapshot", s.ID, "err", err)
				}
				continue
			}
			if err := c.pool.Delete(c.ctx, string(s.ID)); err != nil && !errors.Is(err, rung.ErrNotFound) {
				c.log.Warn("expired snapshot's subvolume left for reconcile", "snapshot", s.ID, "err", err)
			}
			c.log.Info("snapshot expired", "snapshot", s.ID, "tenant", s.Tenant)
			if s.Sandbox != "" {
				c.journalQuiet(s.Sandbox, rung.EntrySnapshotExpired, SnapshotExpired{Name: s.Name, Snapshot: s.ID})
			}
		}
		if len(due) < expireBatch {
			return
		}
	}
}

// snapshotWait shortens wait, the alarm goroutine's sleep, to the next
// snapshot expiry.
func (c *Controller) snapshotWait(ctx context.Context, wait time.Duration) time.Duration {
	at, ok, err := c.st.NextSnapshotExpiry(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("read next snapshot expiry", "err", err)
		}
		return wait
	}
	if ok {
		wait = min(wait, time.Until(at))
	}
	return wait
}
