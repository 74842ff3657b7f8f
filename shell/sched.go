package shell

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Scheduler shares the daemon's CPUs between in-process execs. It has a
// fixed number of run slots (GOMAXPROCS less one by default: one core stays
// for the daemon's own work, the API, the store and the collector, which
// the scheduler does not see); every goroutine that runs an exec's
// commands (the exec itself, each pipeline stage, each background job and
// process substitution) holds one while it runs, and gives it back while
// it waits for something other than CPU: a pipe, a job, stdin, sleep (see
// [Call.Block]). When others wait, a holder whose time slice is over gives
// its slot up at its next check point (every command and loop iteration,
// and every ctx.Err() a tool calls) and queues again.
//
// A free slot goes to the waiting tenant that has had the least slot time
// among the tenants with execs running (ties: the one served longest ago),
// then to that tenant's waiting sandbox with the least, then round robin
// between that sandbox's execs (schedqueue.go). A tenant running 64
// CPU-bound execs thus gets as much CPU as a tenant running one, and a
// tenant that starts an exec (counted from the least of the others) is
// served at the next free slot.
//
// Code that reaches no check point for long (a big in-memory sort) cannot
// make everyone else wait: two ticks after it was asked to yield, the
// monitor takes its slot away and admits a waiter; the exec gives a slot
// back at its next check point without freeing one. So a stuck holder
// costs others at most about two slices, and the slots are briefly
// over-committed.
//
// An exec's CPU time (Limits.CPUTime) is the time its goroutines hold
// slots, sampled by the monitor every half slice: slots held at a tick
// count a full half slice each. It is not the exact CPU time (Go cannot
// measure that per goroutine), but for a CPU-bound exec it is close, and
// time spent waiting for a slot, for a pipe or for input does not count.
//
// The monitor goroutine runs only while some exec holds a slot, and stops
// on its own one tick after the last one ends. A Scheduler is safe for
// concurrent use; it needs no Close.
type Scheduler struct {
	slots int
	tick  time.Duration

	mu        sync.Mutex // guards the fields below and every execSched's scheduling fields
	free      int
	running   []*execSched            // execs holding slots; execSched.pos is the index
	tenants   map[string]*schedTenant // tenants with execs registered, and idle ones (up to maxIdleGroups)
	active    []*schedTenant          // tenants with execs registered
	queue     []*schedTenant          // tenants with goroutines waiting
	nwait     int                     // goroutines waiting for a slot
	serial    uint64                  // counts grants from the queue
	monitorOn bool
}

// SchedulerConfig configures a [Scheduler]; the zero value gives the
// defaults.
type SchedulerConfig struct {
	Slots int           // run slots; default runtime.GOMAXPROCS(0)-1, at least 1
	Slice time.Duration // time slice; default 4 ms (the monitor ticks every half slice)
}

// NewScheduler returns a Scheduler.
func NewScheduler(cfg SchedulerConfig) *Scheduler {
	if cfg.Slots <= 0 {
		cfg.Slots = max(1, runtime.GOMAXPROCS(0)-1)
	}
	if cfg.Slice <= 0 {
		cfg.Slice = 4 * time.Millisecond
	}
	return &Scheduler{slots: cfg.Slots, tick: cfg.Slice / 2, free: cfg.Slots, tenants: map[string]*schedTenant{}}
}

// defaultScheduler serves the shells configured without one: execs of one
// process share its CPUs whichever Shell runs them.
var defaultScheduler = sync.OnceValue(func() *Scheduler { return NewScheduler(SchedulerConfig{}) })

// overBudget is told when an exec passes its CPU budget (an interface
// rather than a func, so that the exec's *shared needs no closure).
type overBudget interface{ cpuOver() }

// budgetFunc adapts a function to overBudget.
type budgetFunc func()

func (f budgetFunc) cpuOver() { f() }

// execSched is one exec's share of a Scheduler.
type execSched struct {
	s        *Scheduler
	sb       *schedSandbox // its sandbox, in its tenant
	budget   time.Duration // Limits.CPUTime
	onBudget overBudget    // ends the exec when its CPU time passes budget; nil: nothing

	// attn tells check points to call checkpoint: a yield was asked for,
	// or a slot was taken away. Read without the lock.
	attn atomic.Bool

	// Guarded by s.mu.
	held    int // slots the exec holds
	owed    int // slots taken away (revoked) that its goroutines still think they hold
	pos     int // index in s.running while held > 0
	cpu     time.Duration
	over    bool // onBudget was told
	ticks   int  // monitor ticks since its last grant or yield while others waited
	asked   int  // the tick count at which a yield was asked for; 0: none
	waiters fifo[chan struct{}]
	queued  bool // in its sandbox's queue
}

// fifo is a small first-in first-out queue.
type fifo[T comparable] struct{ items []T }

func (q *fifo[T]) len() int { return len(q.items) }
func (q *fifo[T]) front() T { return q.items[0] }
func (q *fifo[T]) push(v T) { q.items = append(q.items, v) }
func (q *fifo[T]) pop() T   { v := q.items[0]; q.items = q.items[1:]; return v }
func (q *fifo[T]) rotate()  { q.push(q.pop()) }
func (q *fifo[T]) remove(v T) {
	for i, x := range q.items {
		if x == v {
			q.items = append(q.items[:i:i], q.items[i+1:]...)
			return
		}
	}
}

// due reports whether a check point must call checkpoint: one atomic
// load. A nil execSched (an exec run without a scheduler, in benchmarks)
// never is, and its other methods do nothing.
func (x *execSched) due() bool { return x != nil && x.attn.Load() }

// acquire waits for a slot for one goroutine of x. It fails only when
// ctx ends first.
func (x *execSched) acquire(ctx context.Context) error {
	if x == nil {
		return nil
	}
	s := x.s
	s.mu.Lock()
	if s.free > 0 && s.nwait == 0 {
		s.grantLocked(x)
		s.mu.Unlock()
		return nil
	}
	ch := s.enqueueLocked(x)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-ch: // granted meanwhile: the slot is ours, and the caller will see ctx
		return nil
	default:
	}
	s.dequeueLocked(x, ch)
	return ctx.Err()
}

// release gives back one goroutine's slot. It reports whether the exec
// held one to give (a goroutine that runs for the exec without having
// acquired one, a tool's own, has none).
func (x *execSched) release() bool {
	if x == nil {
		return false
	}
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releaseLocked(x)
}

// block releases the slot of a goroutine about to wait for something
// other than CPU; unblock, when it reports true, takes one again.
func (x *execSched) block() bool { return x != nil && x.release() }

func (x *execSched) unblock(ctx context.Context, released bool) {
	if released {
		// A cancelled wait ends the exec, which is all that matters then.
		_ = x.acquire(ctx)
	}
}

// checkpoint gives the slot up and queues again when the exec was asked to
// yield, or had a slot taken away. Check points call it when x.attn is
// set, which costs them one atomic load otherwise.
func (x *execSched) checkpoint(ctx context.Context) {
	s := x.s
	s.mu.Lock()
	switch {
	case x.owed > 0:
		x.owed-- // this goroutine's slot is already someone else's
	case x.asked > 0 && s.nwait > 0 && x.held > 0:
		x.held--
		s.free++
		if x.held == 0 {
			s.stopRunningLocked(x)
		}
	default:
		x.asked = 0
		x.attn.Store(x.owed > 0)
		s.mu.Unlock()
		return
	}
	// Queue first, then hand the freed slot out: the fair order decides
	// whether it comes straight back.
	ch := s.enqueueLocked(x)
	s.dispatchLocked()
	s.mu.Unlock()
	select {
	case <-ch:
		return
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-ch:
	default:
		s.dequeueLocked(x, ch)
	}
}

func (s *Scheduler) releaseLocked(x *execSched) bool {
	switch {
	case x.owed > 0:
		x.owed--
		return true
	case x.held == 0:
		return false
	}
	x.held--
	s.free++
	if x.held == 0 {
		s.stopRunningLocked(x)
	}
	s.dispatchLocked()
	return true
}

// grantLocked gives x a free slot.
func (s *Scheduler) grantLocked(x *execSched) {
	s.free--
	x.held++
	x.ticks, x.asked = 0, 0
	x.attn.Store(x.owed > 0)
	if x.held == 1 {
		x.pos = len(s.running)
		s.running = append(s.running, x)
		if !s.monitorOn {
			s.monitorOn = true
			go s.monitor() // stops by itself once no exec holds a slot
		}
	}
}

func (s *Scheduler) stopRunningLocked(x *execSched) {
	last := s.running[len(s.running)-1]
	s.running[x.pos] = last
	last.pos = x.pos
	s.running[len(s.running)-1] = nil
	s.running = s.running[:len(s.running)-1]
}

// monitor accounts CPU time, asks holders whose slice is over to yield
// while others wait, and takes slots from holders that do not.
func (s *Scheduler) monitor() {
	t := time.NewTicker(s.tick)
	defer t.Stop()
	for range t.C {
		if !s.monitorTick(s.tick) {
			return
		}
	}
}

// monitorTick does one tick's work; it reports false, having stopped the
// monitor, when no exec holds a slot.
func (s *Scheduler) monitorTick(elapsed time.Duration) bool {
	var over []func()
	s.mu.Lock()
	if len(s.running) == 0 {
		s.monitorOn = false
		s.mu.Unlock()
		return false
	}
	for i := 0; i < len(s.running); i++ {
		x := s.running[i]
		x.charge(time.Duration(x.held) * elapsed)
		if x.cpu > x.budget && !x.over && x.onBudget != nil {
			x.over = true
			over = append(over, x.onBudget.cpuOver)
		}
		if s.nwait == 0 {
			x.ticks, x.asked = 0, 0
			continue
		}
		x.ticks++
		switch {
		case x.asked == 0 && x.ticks >= 2:
			x.asked = x.ticks
			x.attn.Store(true)
		case x.asked > 0 && x.ticks >= x.asked+2:
			// Asked a slice ago and not yielded: stuck in code without
			// check points, or blocked where it did not say. Its slot goes
			// to a waiter; it owes it back at its next check point.
			x.held--
			x.owed++
			x.ticks, x.asked = 0, 0
			x.attn.Store(true)
			s.free++
			if x.held == 0 {
				s.stopRunningLocked(x)
				i-- // another exec moved into this place
			}
		}
	}
	s.dispatchLocked()
	s.mu.Unlock()
	for _, f := range over {
		f() // outside the lock: it cancels the exec's context
	}
	return true
}

// cpuTime returns the CPU time charged to x so far.
func (x *execSched) cpuTime() time.Duration {
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	return x.cpu
}
