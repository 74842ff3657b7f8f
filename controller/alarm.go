package controller

import (
	"context"
	"maps"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// alarms is the one timer goroutine. Alarm times live in the store (so
// they survive restarts); it sleeps until the nearest one, or until
// poke says they changed, fires what is due, and trims old output events
// once per trimEvery. It stops when Close cancels c.ctx.
func (c *Controller) alarms() {
	const trimEvery = time.Minute
	nextTrim := time.Now()
	for {
		now := time.Now()
		if !now.Before(nextTrim) {
			if n, err := c.st.TrimEvents(c.ctx, now.Add(-c.cfg.Retention)); err != nil && c.ctx.Err() == nil {
				c.log.Warn("trim events", "err", err)
			} else if n > 0 {
				c.log.Debug("trimmed output events", "count", n)
			}
			nextTrim = now.Add(trimEvery)
		}
		c.fireDue(now)
		c.expireSnapshots(now) // snapshot_gc.go
		wait := time.Until(nextTrim)
		if at, ok, err := c.st.NextAlarm(c.ctx); err == nil && ok {
			wait = min(wait, time.Until(at))
		} else if err != nil && c.ctx.Err() == nil {
			c.log.Warn("read next alarm", "err", err)
		}
		wait = c.snapshotWait(c.ctx, wait)
		t := time.NewTimer(max(wait, 0))
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-c.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// fireDue runs every alarm due at now: TTL deletes the sandbox (or stops
// it, see expireStop); the idle
// timeout stops its container (never the sandbox). Alarms of different
// sandboxes run side by side, at most maxAlarmsAtOnce at a time: a
// container's graceful stop (up to its grace) or an agent slow to list
// its processes must not hold up every other sandbox's alarm. Each one
// holds its own sandbox's actor; fireDue returns when all are done, so
// the next round never fires one twice.
func (c *Controller) fireDue(now time.Time) {
	due, err := c.st.DueSandboxes(c.ctx, now)
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.Warn("read due alarms", "err", err)
		}
		return
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxAlarmsAtOnce)
	for _, sb := range due {
		if c.ctx.Err() != nil {
			break
		}
		slots <- struct{}{}
		wg.Go(func() { // ends when this sandbox's alarm is handled
			defer func() { <-slots }()
			if !sb.ExpiresAt.IsZero() && !now.Before(sb.ExpiresAt) {
				c.expire(sb)
			} else if !sb.IdleAt.IsZero() && !now.Before(sb.IdleAt) {
				c.idle(sb)
			}
		})
	}
	wg.Wait()
}

// maxAlarmsAtOnce bounds the alarms handled at once: each may start a
// runtime process (a container's stop) on a host with few cores.
const maxAlarmsAtOnce = 16

// expire deletes a sandbox whose time to live is over, or stops it when
// its OnExpiry says so (expireStop).
func (c *Controller) expire(sb store.Sandbox) {
	a, err := c.acquire(c.ctx, "", string(sb.ID))
	if err != nil {
		c.log.Warn("ttl delete", "sandbox", sb.ID, "err", err)
		c.retryExpire(sb) // not found too: see retryExpire
		return
	}
	defer c.release(a)
	if c.sandbox(a).OnExpiry.Stop {
		if err := c.expireStop(a); err != nil && c.ctx.Err() == nil {
			c.log.Warn("ttl stop", "sandbox", sb.ID, "err", err)
			c.retryExpire(sb)
		}
		return
	}
	if err := c.do(c.ctx, a, func() error { return c.deleteLocked(c.ctx, a, "ttl") }); err != nil && c.ctx.Err() == nil {
		c.log.Warn("ttl delete", "sandbox", sb.ID, "err", err)
		c.retryExpire(sb)
	}
}

// expireStop is a TTL running out on a sandbox whose OnExpiry says
// stop: its container stops (as an idle timeout's, so a process in it
// ends too), then its TTL is cleared, OnExpiry's labels are merged into
// its own, and the journal says sandbox.expiry_stopped. A TTL moved since
// the alarm was read (setTimeout, a connect) is left to fire later.
func (c *Controller) expireStop(a *actor) error {
	due := func() bool {
		cur := c.sandbox(a)
		return !cur.ExpiresAt.IsZero() && !time.Now().Before(cur.ExpiresAt)
	}
	if !due() {
		return nil
	}
	if err := c.stopContainerOf(c.ctx, a.id, "ttl"); err != nil {
		return err
	}
	return c.do(c.ctx, a, func() error {
		if !due() {
			return nil
		}
		cur := c.sandbox(a)
		ttl := cur.TTL
		cur.TTL, cur.ExpiresAt, cur.IdleAt = 0, time.Time{}, time.Time{}
		if len(cur.OnExpiry.Labels) > 0 {
			labels := maps.Clone(cur.Labels)
			if labels == nil {
				labels = map[string]string{}
			}
			// Create and Update keep room for them (maxLabels).
			maps.Copy(labels, cur.OnExpiry.Labels)
			cur.Labels = labels
		}
		if cur.State == rung.StateRunning {
			cur.State = rung.StateReady
		}
		cur.UpdatedAt = time.Now().UTC()
		if err := c.writeRow(c.ctx, a, cur); err != nil {
			return err
		}
		c.log.Info("sandbox stopped by its ttl", "sandbox", a.id, "tenant", cur.Tenant)
		c.journal(c.ctx, a.id, rung.EntrySandboxExpiryStopped, SandboxExpiryStopped{Labels: cur.Labels, TTLMS: ttl.Milliseconds()})
		c.notify(a.id)
		return nil
	})
}

// retryExpire pushes a TTL alarm whose delete failed back a minute, so a
// persistent failure is retried, not spun on. A sandbox whose delete is
// still under way (waiting for an exec to end) keeps its row, and with it
// the alarm; a row already gone makes this a no-op.
func (c *Controller) retryExpire(sb store.Sandbox) {
	// Only the alarm: the row may have changed since it was read (a
	// delete under way marks it deleted), and those changes stay.
	if err := c.st.PostponeExpiry(c.ctx, sb.ID, time.Now().Add(time.Minute)); err != nil && rung.Code(err) != rung.CodeNotFound {
		c.log.Warn("ttl delete: push the alarm back", "sandbox", sb.ID, "err", err)
	}
}

// idle handles an idle timeout: it stops the sandbox's container (never
// the sandbox), clears the alarm and journals the stop. A sandbox with an
// exec in flight, or whose container runs a background process, is not
// idle: like a Docker container it runs as long as its processes do (a
// dev server between requests), up to the sandbox's TTL, so the alarm is
// pushed back a whole idle timeout instead. An exec's end and a
// process's exit (processExited) restart the timeout, so it counts from
// the last of them.
func (c *Controller) idle(sb store.Sandbox) {
	a, err := c.acquire(c.ctx, "", string(sb.ID))
	if err != nil {
		return
	}
	defer c.release(a)
	c.mu.Lock()
	execs := a.running
	c.mu.Unlock()
	if used, ok := c.lastUsed(sb.ID); ok && execs == 0 {
		if until := used.Add(idleTimeout(c.sandbox(a))); time.Now().Before(until) {
			// Used since the alarm was written (containerUsed moves it
			// only now and then): it goes off again a timeout after that use.
			c.touchContainerUntil(sb.ID, rung.StateRunning, until)
			return
		}
	}
	if execs > 0 || c.runsProcesses(sb.ID) {
		c.log.Debug("idle stop deferred", "sandbox", sb.ID, "execs", execs)
		c.touchContainer(sb.ID, rung.StateRunning)
		return
	}
	if err := c.stopContainerOf(c.ctx, sb.ID, "idle timeout"); err != nil {
		c.log.Warn("idle stop", "sandbox", sb.ID, "err", err)
	}
	err = c.do(c.ctx, a, func() error {
		cur := c.sandbox(a)
		cur.IdleAt = time.Time{}
		if cur.State == rung.StateRunning {
			cur.State = rung.StateReady
		}
		cur.UpdatedAt = time.Now().UTC()
		if err := c.writeRow(c.ctx, a, cur); err != nil {
			return err
		}
		c.journal(c.ctx, sb.ID, rung.EntrySandboxIdleStopped, SandboxIdleStopped{IdleTimeoutMS: cur.IdleTimeout.Milliseconds()})
		return nil
	})
	if err != nil && c.ctx.Err() == nil {
		c.log.Warn("idle stop", "sandbox", sb.ID, "err", err)
	}
}

// runsProcesses reports whether the sandbox's container has a running
// background process. An agent that does not answer within a few
// seconds counts as running none: a stuck container is not kept alive.
func (c *Controller) runsProcesses(id rung.SandboxID) bool {
	t, err := c.containers()
	if err != nil {
		return false
	}
	if !t.Running(id) {
		return false
	}
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	list, err := t.Processes(ctx, id)
	if err != nil {
		return false
	}
	for _, p := range list {
		if p.Running {
			return true
		}
	}
	return false
}
