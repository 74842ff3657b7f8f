package procs

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestPolicy(t *testing.T) {
	idle := sample{cpu: 0.1, queue: 0.05}
	type step struct {
		s    sample
		n    int // samples like s in a row
		want int // GOMAXPROCS after them
	}
	for _, tc := range []struct {
		name  string
		max   int
		start int
		steps []step
	}{
		{"one P stays while the load is light", 2, 1, []step{{idle, 200, 1}, {sample{cpu: 0.9, queue: queued - 0.1}, 200, 1}}},
		{"a queue of goroutines gives every P at once", 8, 1, []step{{idle, 3, 1}, {sample{cpu: 0.6, queue: queued}, queueIntervals - 1, 1}, {sample{cpu: 0.6, queue: queued}, 1, 8}}},
		{"a few long waits are not a queue", 2, 1, []step{{sample{cpu: 0.3, queue: 30}, 1, 1}, {idle, 60, 1}, {sample{cpu: 0.3, queue: 30}, 1, 1}, {idle, 60, 1}}},
		{"many in half a second are", 2, 1, []step{{sample{cpu: 0.3, queue: 70}, 1, 1}, {idle, queueIntervals - 3, 1}, {sample{cpu: 0.3, queue: 70}, 1, 1}, {sample{cpu: 0.3, queue: 70}, 1, 2}}},
		{"one busy interval is not enough", 2, 1, []step{{sample{cpu: 1.2}, 1, 1}, {idle, 1, 1}, {sample{cpu: 1.2}, 1, 1}, {idle, 1, 1}}},
		{"two busy intervals in a row are", 2, 1, []step{{sample{cpu: 0.96}, 1, 1}, {sample{cpu: 0.96}, 1, 2}}},
		{"Ps are taken back after the calm", 2, 2, []step{{idle, calmIntervals - 1, 2}, {idle, 1, 1}, {idle, 100, 1}}},
		{"a queue starts the calm over", 2, 2, []step{{idle, calmIntervals - 1, 2}, {sample{cpu: 0.3, queue: 200}, 1, 2}, {idle, calmIntervals + queueIntervals - 2, 2}, {idle, 1, 1}}},
		{"a load of one CPU keeps two Ps", 2, 2, []step{{sample{cpu: 1.05}, 500, 2}}},
		{"the calm's mean load sets how many are kept", 16, 16, []step{{sample{cpu: 2.9}, calmIntervals, 6}, {idle, calmIntervals, 1}}},
		{"a burst now and then is not a load", 2, 2, []step{{sample{cpu: 1.5}, 1, 2}, {idle, 9, 2}, {sample{cpu: 1.5}, 1, 2}, {idle, 9, 2}, {sample{cpu: 1.5}, 1, 2}, {idle, 9, 2},
			{sample{cpu: 1.5}, 1, 2}, {idle, 9, 2}, {sample{cpu: 1.5}, 1, 2}, {idle, 9, 1}}},
		{"never more than max", 4, 4, []step{{sample{cpu: 4, queue: 100}, 20, 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(tc.max)
			cur := tc.start
			for i, st := range tc.steps {
				for range st.n {
					cur = p.next(cur, st.s)
					if cur < 1 || cur > tc.max {
						t.Fatalf("step %d: %d Ps, outside 1..%d", i, cur, tc.max)
					}
				}
				if cur != st.want {
					t.Fatalf("step %d (%+v x%d): %d Ps, want %d", i, st.s, st.n, cur, st.want)
				}
			}
		})
	}
}

// TestGovernor runs a real governor over this process: idle, it takes
// the second P back; goroutines that keep a P busy get it again (by the
// CPU they use, or, on a host too busy to give them a CPU, by the queue
// they make); Stop gives back the Ps the process had.
func TestGovernor(t *testing.T) {
	before := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(before)
	changed := make(chan int, 64)
	g, err := Start(Config{Max: 2, OnChange: func(n int) {
		select {
		case changed <- n:
		default: // never block the governor (and so Stop)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	if _, err := Start(Config{}); !errors.Is(err, ErrRunning) {
		t.Fatalf("a second Start: %v, want ErrRunning", err)
	}
	await := func(want int) {
		t.Helper()
		timeout := time.After(time.Minute)
		for {
			select {
			case n := <-changed:
				if n == want {
					if got := runtime.GOMAXPROCS(0); got != want {
						t.Fatalf("GOMAXPROCS %d after a change to %d", got, want)
					}
					return
				}
			case <-timeout:
				t.Fatalf("no change to %d Ps in a minute (%d now, %d changes)", want, g.Procs(), g.Changes())
			}
		}
	}
	await(1) // this process does nothing meanwhile

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 2 * queued {
		wg.Go(func() {
			for ctx.Err() == nil {
				for i := 0; i < 1<<16; i++ {
				}
			}
		})
	}
	await(2)
	cancel()
	wg.Wait()
	g.Stop()
	if got := runtime.GOMAXPROCS(0); got != 2 || g.Procs() != 2 {
		t.Fatalf("after Stop: GOMAXPROCS %d, Procs %d; want the 2 at Start", got, g.Procs())
	}
}

// TestGovernorDefault: without a Max, the governor's most Ps are the
// runtime's default, and Stop leaves the runtime its default.
func TestGovernorDefault(t *testing.T) {
	before := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(before)
	runtime.SetDefaultGOMAXPROCS()
	deflt := runtime.GOMAXPROCS(1)
	g, err := Start(Config{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if g.Procs() != deflt || runtime.GOMAXPROCS(0) != deflt {
		t.Fatalf("at Start: Procs %d, GOMAXPROCS %d; want the default %d", g.Procs(), runtime.GOMAXPROCS(0), deflt)
	}
	runtime.GOMAXPROCS(1) // as if the governor had lowered it
	g.Stop()
	if g.Procs() != deflt || runtime.GOMAXPROCS(0) != deflt {
		t.Fatalf("after Stop: Procs %d, GOMAXPROCS %d; want the default %d", g.Procs(), runtime.GOMAXPROCS(0), deflt)
	}
}

func TestMeter(t *testing.T) {
	var m meter
	m.init()
	if m.slowIdx < 0 {
		t.Fatalf("the runtime has no %s histogram", schedLatencies)
	}
	// 20 ms of this process's CPU time.
	for c0 := processCPU(); processCPU()-c0 < 20*time.Millisecond; {
	}
	s, ok := m.read()
	if !ok || s.cpu <= 0 || s.queue < 0 {
		t.Fatalf("after 20 ms of CPU: %+v, %v", s, ok)
	}
	// Two goroutines that keep one P busy wait about 10 ms each time the
	// runtime preempts one for the other: the queue shows.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()
	m.read()
	for start := time.Now(); ; {
		runtime.Gosched()
		if s, _ := m.read(); s.queue >= queued {
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatal("no queue seen in a minute of two spinning goroutines on one P")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkMeterRead is what each of the governor's looks costs (one
// every 10 ms).
func BenchmarkMeterRead(b *testing.B) {
	var m meter
	m.init()
	for b.Loop() {
		m.read()
	}
}

// BenchmarkSetProcs is what each change costs the process: the runtime
// stops the world to resize its Ps (one change per iteration, 1 and 2
// alternately).
func BenchmarkSetProcs(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	n := 1
	for b.Loop() {
		n = 3 - n
		runtime.GOMAXPROCS(n)
	}
}
