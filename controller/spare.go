package controller

import (
	"errors"
	"time"

	"rung.dev/rung"
)

// maxSpares bounds the snapshots that have a spare (storage's MakeSpare)
// at once: a spare costs a little metadata and nothing else until used.
const maxSpares = 32

// spares is which snapshots have (or are getting) a spare, guarded by
// snapshots.mu: the least recently used loses its spare to a new one.
type spares struct {
	used   map[rung.SnapshotID]time.Time // snapshots with a spare, by last use
	making map[rung.SnapshotID]bool      // spares being made now
}

// spareFor makes a spare of snapshot id in the background, so that the
// next restore, fork or rollback from it renames a subvolume into place
// instead of taking a snapshot, whose transaction commit (with the disk
// flushes) is most of a restore's time. The goroutine belongs to the
// controller: Close waits for it.
func (c *Controller) spareFor(id rung.SnapshotID) {
	s := &c.snaps
	s.mu.Lock()
	if s.spares.used == nil {
		s.spares.used, s.spares.making = map[rung.SnapshotID]time.Time{}, map[rung.SnapshotID]bool{}
	}
	if s.spares.making[id] {
		s.mu.Unlock()
		return
	}
	var evict rung.SnapshotID
	if _, ok := s.spares.used[id]; !ok && len(s.spares.used) >= maxSpares {
		var oldest time.Time
		for sid, at := range s.spares.used {
			if evict == "" || at.Before(oldest) {
				evict, oldest = sid, at
			}
		}
		delete(s.spares.used, evict)
	}
	s.spares.used[id], s.spares.making[id] = time.Now(), true
	s.mu.Unlock()
	done := func(ok bool) {
		s.mu.Lock()
		delete(s.spares.making, id)
		if !ok {
			delete(s.spares.used, id)
		}
		s.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		done(false)
		return
	}
	c.wg.Go(func() { // ends when the spare is made: one snapshot ioctl
		if evict != "" {
			c.pool.DropSpare(c.ctx, string(evict))
		}
		err := c.pool.MakeSpare(c.ctx, string(id))
		if err != nil && !errors.Is(err, rung.ErrNotFound) && c.ctx.Err() == nil {
			c.log.Warn("spare of snapshot", "snapshot", id, "err", err)
		}
		done(err == nil)
	})
}
