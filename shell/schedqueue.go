package shell

import (
	"context"
	"time"
)

// This file holds the Scheduler's waiting room: who gets the next free
// slot (see Scheduler).

// schedGroup is what the scheduler knows of a tenant or a sandbox while it
// has execs: the slot time its execs have had (vtime) and when it was last
// served, to pick the neediest waiter.
type schedGroup struct {
	name   string
	vtime  time.Duration // slot time charged to its execs since it became active
	served uint64        // Scheduler.serial at its last grant from the queue; 0: never
	execs  int           // execs registered (newExec, not yet end)
	queued bool          // in its parent's queue: some exec of it waits
	apos   int           // index in its parent's active list while execs > 0
}

// before reports whether g should be served before h.
func (g *schedGroup) before(h *schedGroup) bool {
	if g.vtime != h.vtime {
		return g.vtime < h.vtime
	}
	return g.served < h.served
}

type schedTenant struct {
	schedGroup
	sandboxes map[string]*schedSandbox // active and idle (up to maxIdleGroups)
	active    []*schedSandbox          // sandboxes with execs
	queue     []*schedSandbox          // sandboxes with execs waiting
}

type schedSandbox struct {
	schedGroup
	tenant *schedTenant
	queue  fifo[*execSched] // execs with goroutines waiting, round robin
}

// floor is the least vtime among the active groups, or 0: where a group
// that becomes active starts, so that it gets no credit for the time it
// was away, and owes nothing for it either.
func floor[G interface{ group() *schedGroup }](active []G) time.Duration {
	if len(active) == 0 {
		return 0
	}
	least := active[0].group().vtime
	for _, g := range active[1:] {
		least = min(least, g.group().vtime)
	}
	return least
}

// activate and deactivate keep a group in its parent's active list.
func activate[G interface{ group() *schedGroup }](active *[]G, g G) {
	g.group().apos = len(*active)
	*active = append(*active, g)
}

func deactivate[G interface{ group() *schedGroup }](active *[]G, g G) {
	a := *active
	i := g.group().apos
	last := a[len(a)-1]
	a[i] = last
	last.group().apos = i
	var zero G
	a[len(a)-1] = zero
	*active = a[:len(a)-1]
}

// maxIdleGroups is how many inactive tenants (and sandboxes per tenant)
// are kept: a tenant's next exec reuses its records instead of making
// them again, which was most of what the scheduler added to a short exec.
const maxIdleGroups = 256

func (t *schedTenant) group() *schedGroup  { return &t.schedGroup }
func (s *schedSandbox) group() *schedGroup { return &s.schedGroup }

// newExec registers x, an exec of tenant's sandbox; its goroutines then
// acquire and release slots through it, and end unregisters it once they
// are done. x is the caller's, so that an exec costs no allocation here.
func (s *Scheduler) newExec(x *execSched, tenant, sandbox string, budget time.Duration, onBudget overBudget) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.newExecLocked(x, tenant, sandbox, budget, onBudget)
}

// start is newExec, then acquire for the exec's first goroutine, under one
// lock when a slot is free.
func (s *Scheduler) start(ctx context.Context, x *execSched, tenant, sandbox string, budget time.Duration, onBudget overBudget) error {
	s.mu.Lock()
	s.newExecLocked(x, tenant, sandbox, budget, onBudget)
	if s.free > 0 && s.nwait == 0 {
		s.grantLocked(x)
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	return x.acquire(ctx)
}

// finish is release, then end, for the exec's last goroutine.
func (x *execSched) finish() {
	if x == nil {
		return
	}
	s := x.s
	s.mu.Lock()
	s.releaseLocked(x)
	s.endLocked(x)
	s.mu.Unlock()
}

// endLocked unregisters x.
func (s *Scheduler) endLocked(x *execSched) {
	sb := x.sb
	t := sb.tenant
	if sb.execs--; sb.execs == 0 {
		deactivate(&t.active, sb)
	}
	if t.execs--; t.execs == 0 {
		deactivate(&s.active, t)
	}
}

func (s *Scheduler) newExecLocked(x *execSched, tenant, sandbox string, budget time.Duration, onBudget overBudget) {
	// A tenant or sandbox that becomes active starts a slice below the
	// least of the others: the next free slot is its, and it may take one
	// from a busier holder at once (preemptForLocked). One slice of credit
	// per exec started is all a stream of short execs gains.
	credit := 2 * s.tick
	t := s.tenants[tenant]
	if t == nil {
		if len(s.tenants) >= maxIdleGroups {
			pruneIdle(s.tenants)
		}
		t = &schedTenant{schedGroup: schedGroup{name: tenant}, sandboxes: map[string]*schedSandbox{}}
		s.tenants[tenant] = t
	}
	if t.execs == 0 {
		t.vtime = floor(s.active) - credit
		activate(&s.active, t)
	}
	sb := t.sandboxes[sandbox]
	if sb == nil {
		if len(t.sandboxes) >= maxIdleGroups {
			pruneIdle(t.sandboxes)
		}
		sb = &schedSandbox{schedGroup: schedGroup{name: sandbox}, tenant: t}
		t.sandboxes[sandbox] = sb
	}
	if sb.execs == 0 {
		sb.vtime = floor(t.active) - credit
		activate(&t.active, sb)
	}
	t.execs++
	sb.execs++
	*x = execSched{s: s, sb: sb, budget: budget, onBudget: onBudget}
}

// pruneIdle forgets the groups that have no exec.
func pruneIdle[G interface{ group() *schedGroup }](groups map[string]G) {
	for name, g := range groups {
		if g.group().execs == 0 {
			delete(groups, name)
		}
	}
}

// end unregisters x; its goroutines hold no slot and wait for none. Its
// tenant and sandbox records stay, idle, for the next exec.
func (x *execSched) end() {
	if x == nil {
		return
	}
	s := x.s
	s.mu.Lock()
	s.endLocked(x)
	s.mu.Unlock()
}

// charge adds slot time to x and its groups.
func (x *execSched) charge(d time.Duration) {
	x.cpu += d
	x.sb.vtime += d
	x.sb.tenant.vtime += d
}

// enqueueLocked queues a waiter for x and returns its channel, closed when
// it is granted a slot.
func (s *Scheduler) enqueueLocked(x *execSched) chan struct{} {
	ch := make(chan struct{})
	x.waiters.push(ch)
	s.nwait++
	if s.free == 0 {
		s.preemptForLocked(x)
	}
	if x.queued {
		return ch
	}
	x.queued = true
	sb := x.sb
	sb.queue.push(x)
	if sb.queued {
		return ch
	}
	sb.queued = true
	t := sb.tenant
	t.queue = append(t.queue, sb)
	if !t.queued {
		t.queued = true
		s.queue = append(s.queue, t)
	}
	return ch
}

// needier reports whether x should run before y: its tenant has had less
// slot time, or, in one tenant, its sandbox has. Execs of one sandbox take
// turns by slices.
func (x *execSched) needier(y *execSched) bool {
	if x.sb.tenant != y.sb.tenant {
		return x.sb.tenant.vtime < y.sb.tenant.vtime
	}
	return x.sb != y.sb && x.sb.vtime < y.sb.vtime
}

// preemptForLocked asks the least needy holder of another tenant that x
// is needier than to yield at its next check point, without waiting for
// the end of its slice: a bystander tenant's short exec then waits
// microseconds, not a slice. Within a tenant, sandboxes take turns by
// slices only: preempting there made every short exec of a busy tenant
// (an API under load, 100 sandboxes) yield to the next, and cost 10% more
// CPU per exec in switches.
func (s *Scheduler) preemptForLocked(x *execSched) {
	var victim *execSched
	for _, r := range s.running {
		if r.asked > 0 || r.sb.tenant == x.sb.tenant || !x.needier(r) {
			continue
		}
		if victim == nil || victim.needier(r) {
			victim = r
		}
	}
	if victim != nil {
		victim.asked = max(victim.ticks, 1)
		victim.attn.Store(true)
	}
}

// dequeueLocked withdraws a waiter that gave up.
func (s *Scheduler) dequeueLocked(x *execSched, ch chan struct{}) {
	x.waiters.remove(ch)
	s.nwait--
	if x.waiters.len() > 0 {
		return
	}
	sb := x.sb
	sb.queue.remove(x)
	x.queued = false
	if sb.queue.len() == 0 {
		s.unqueueSandboxLocked(sb)
	}
}

// unqueueSandboxLocked takes a sandbox with no waiter left out of its
// tenant's queue, and the tenant out of the scheduler's when it was its
// last.
func (s *Scheduler) unqueueSandboxLocked(sb *schedSandbox) {
	t := sb.tenant
	sb.queued = false
	t.queue = removeFrom(t.queue, sb)
	if len(t.queue) == 0 {
		t.queued = false
		s.queue = removeFrom(s.queue, t)
	}
}

func removeFrom[T comparable](q []T, v T) []T {
	for i, x := range q {
		if x == v {
			return append(q[:i:i], q[i+1:]...)
		}
	}
	return q
}

// neediest returns the group that should be served first.
func neediest[G interface{ group() *schedGroup }](q []G) G {
	best := q[0]
	for _, g := range q[1:] {
		if g.group().before(best.group()) {
			best = g
		}
	}
	return best
}

// dispatchLocked hands free slots to waiters: the neediest waiting tenant,
// its neediest waiting sandbox, that sandbox's next exec in turn, whose
// oldest waiter gets the slot.
func (s *Scheduler) dispatchLocked() {
	for s.free > 0 && s.nwait > 0 {
		t := neediest(s.queue)
		sb := neediest(t.queue)
		x := sb.queue.front()
		ch := x.waiters.pop()
		s.nwait--
		s.serial++
		t.served, sb.served = s.serial, s.serial
		s.grantLocked(x)
		close(ch)
		if x.waiters.len() > 0 {
			sb.queue.rotate()
		} else {
			sb.queue.pop()
			x.queued = false
			if sb.queue.len() == 0 {
				s.unqueueSandboxLocked(sb)
			}
		}
	}
}
