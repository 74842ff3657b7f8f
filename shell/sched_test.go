package shell

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// newX registers a new exec with s.
func newX(s *Scheduler, tenant, sandbox string, budget time.Duration, onBudget func()) *execSched {
	x := new(execSched)
	var ob overBudget
	if onBudget != nil {
		ob = budgetFunc(onBudget)
	}
	s.newExec(x, tenant, sandbox, budget, ob)
	return x
}

// idle lets the monitor see that nothing runs and stop, so the bubble
// ends with no goroutine left.
func idle(s *Scheduler) {
	time.Sleep(2 * s.tick)
	synctest.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.monitorOn {
		panic("monitor still on")
	}
}

// busyLoop runs for x like a CPU-bound exec: it holds a slot, works in
// steps of step (fake time), and reaches a check point after each, until
// stop is closed.
func busyLoop(t *testing.T, x *execSched, step time.Duration, stop chan struct{}) {
	if err := x.acquire(t.Context()); err != nil {
		t.Error(err)
		return
	}
	for {
		select {
		case <-stop:
			x.release()
			x.end()
			return
		default:
		}
		time.Sleep(step)
		if x.due() {
			x.checkpoint(t.Context())
		}
	}
}

// TestSchedulerFairness runs CPU-bound execs of two tenants on one slot,
// tenant A with three sandboxes (one running two execs) and tenant B with
// one, and checks the shares of slot time: half each for A and B, a third
// of A's for each of its sandboxes, and half of a sandbox's for each of
// its two execs. Then a bystander tenant's exec gets the slot at the
// holder's next check point.
func TestSchedulerFairness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(SchedulerConfig{Slots: 1, Slice: 4 * time.Millisecond})
		specs := [][2]string{{"A", "a1"}, {"A", "a1"}, {"A", "a2"}, {"A", "a3"}, {"B", "b1"}}
		stop := make(chan struct{})
		var xs []*execSched
		var wg sync.WaitGroup
		for _, sp := range specs {
			x := newX(s, sp[0], sp[1], time.Hour, nil)
			xs = append(xs, x)
			wg.Go(func() { busyLoop(t, x, 100*time.Microsecond, stop) })
		}
		time.Sleep(3 * time.Second)

		// A bystander arrives: the holder yields at its next step.
		by := newX(s, "C", "c1", time.Hour, nil)
		start := time.Now()
		if err := by.acquire(t.Context()); err != nil {
			t.Fatal(err)
		}
		if wait := time.Since(start); wait > 100*time.Microsecond {
			t.Errorf("bystander waited %s for a slot, want at most one step (100µs)", wait)
		}
		by.release()
		by.end()

		close(stop)
		wg.Wait()
		cpu := func(i int) float64 { return float64(xs[i].cpuTime()) }
		total := cpu(0) + cpu(1) + cpu(2) + cpu(3) + cpu(4)
		for _, c := range []struct {
			what string
			got  float64
			want float64
		}{
			{"tenant A", (cpu(0) + cpu(1) + cpu(2) + cpu(3)) / total, 0.5},
			{"tenant B", cpu(4) / total, 0.5},
			{"sandbox a1", (cpu(0) + cpu(1)) / total, 0.5 / 3},
			{"sandbox a2", cpu(2) / total, 0.5 / 3},
			{"sandbox a3", cpu(3) / total, 0.5 / 3},
			{"exec 1 of a1", cpu(0) / total, 0.5 / 6},
			{"exec 2 of a1", cpu(1) / total, 0.5 / 6},
		} {
			if c.got < c.want*0.9 || c.got > c.want*1.1 {
				t.Errorf("%s had %.3f of the slot time, want %.3f (±10%%)", c.what, c.got, c.want)
			}
		}
		idle(s)
	})
}

// TestSchedulerSlice checks that a holder is asked to yield when its slice
// is over and someone waits, and yields at its next check point.
func TestSchedulerSlice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(SchedulerConfig{Slots: 1, Slice: 4 * time.Millisecond})
		// Two execs of one sandbox: the waiter preempts no one, it waits
		// for the holder's slice to end.
		busy := newX(s, "A", "a", time.Hour, nil)
		busy.acquire(t.Context())
		start := time.Now()
		granted := make(chan time.Duration, 1)
		other := newX(s, "A", "a", time.Hour, nil)
		go func() {
			other.acquire(t.Context())
			granted <- time.Since(start)
			other.release()
		}()
		synctest.Wait()
		// The busy exec runs in steps of 1 ms, each ending at a check
		// point, as the interpreter's commands do.
		yielded := time.Duration(0)
		for yielded == 0 {
			time.Sleep(time.Millisecond)
			if busy.attn.Load() {
				at := time.Since(start)
				busy.checkpoint(t.Context())
				yielded = at
			}
		}
		if d := <-granted; d != yielded || d < 4*time.Millisecond || d > 6*time.Millisecond {
			t.Errorf("waiter granted after %s, holder yielded after %s; want both at one slice (4-6 ms)", d, yielded)
		}
		busy.release()
		idle(s)
	})
}

// TestSchedulerRevoke checks that a holder that reaches no check point
// loses its slot two ticks after it was asked to yield, and owes it back.
func TestSchedulerRevoke(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(SchedulerConfig{Slots: 1, Slice: 4 * time.Millisecond})
		stuck := newX(s, "A", "a", time.Hour, nil)
		stuck.acquire(t.Context())
		start := time.Now()
		granted := make(chan time.Duration, 1)
		let := make(chan struct{})
		other := newX(s, "A", "a", time.Hour, nil)
		go func() {
			other.acquire(t.Context())
			granted <- time.Since(start)
			<-let
			other.release()
		}()
		time.Sleep(50 * time.Millisecond) // a long computation without check points
		if d := <-granted; d != 8*time.Millisecond {
			t.Errorf("waiter granted after %s, want 8 ms (asked at 4 ms, revoked two ticks later)", d)
		}
		if !stuck.attn.Load() {
			t.Fatal("the stuck exec was not told it owes a slot")
		}
		// At its next check point it gives the slot back without freeing
		// one, and waits for the waiter to finish.
		back := make(chan struct{})
		go func() {
			stuck.checkpoint(t.Context())
			close(back)
		}()
		synctest.Wait()
		select {
		case <-back:
			t.Fatal("the stuck exec went on while the slot was the other's")
		default:
		}
		close(let)
		<-back
		stuck.release()
		s.mu.Lock()
		if s.free != 1 || len(s.running) != 0 || s.nwait != 0 {
			t.Errorf("after all released: free %d, running %d, waiting %d; want 1, 0, 0", s.free, len(s.running), s.nwait)
		}
		s.mu.Unlock()
		idle(s)
	})
}

// TestSchedulerBudget checks the CPU budget: slot time is counted at each
// tick, and the exec is told when it passes its budget, once; time blocked
// (a pipe, sleep) does not count.
func TestSchedulerBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(SchedulerConfig{Slots: 2, Slice: 4 * time.Millisecond})
		var mu sync.Mutex // the monitor's goroutine calls back
		var calls []time.Duration
		start := time.Now()
		x := newX(s, "A", "a", 10*time.Millisecond, func() {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, time.Since(start))
		})
		x.acquire(t.Context())
		released := x.block()
		time.Sleep(time.Second) // waiting costs nothing
		x.unblock(t.Context(), released)
		mu.Lock()
		if len(calls) != 0 || x.cpuTime() != 0 {
			t.Fatalf("blocked exec charged %s (calls %v), want nothing", x.cpuTime(), calls)
		}
		start = time.Now()
		mu.Unlock()
		time.Sleep(30 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		if len(calls) != 1 || calls[0] != 12*time.Millisecond {
			t.Errorf("budget calls %v, want one at 12 ms (the first tick past 10 ms)", calls)
		}
		x.release()
		idle(s)
	})
}

// TestSchedulerCancel checks that a waiter whose context ends leaves the
// queue, and that the scheduler stays consistent.
func TestSchedulerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(SchedulerConfig{Slots: 1})
		holder := newX(s, "A", "a", time.Hour, nil)
		holder.acquire(t.Context())
		ctx, cancel := context.WithCancel(t.Context())
		x := newX(s, "B", "b", time.Hour, nil)
		errc := make(chan error, 1)
		go func() { errc <- x.acquire(ctx) }()
		synctest.Wait()
		cancel()
		if err := <-errc; err == nil {
			t.Fatal("acquire with a cancelled context succeeded while the slot was held")
		}
		holder.release()
		s.mu.Lock()
		if s.free != 1 || s.nwait != 0 || len(s.queue) != 0 {
			t.Errorf("free %d, waiting %d, tenants queued %d; want 1, 0, 0", s.free, s.nwait, len(s.queue))
		}
		s.mu.Unlock()
		holder.end()
		x.end()
		s.mu.Lock()
		for name, tn := range s.tenants {
			if tn.execs != 0 {
				t.Errorf("tenant %s has %d execs after every exec ended, want 0", name, tn.execs)
			}
		}
		s.mu.Unlock()
		idle(s)
	})
}
