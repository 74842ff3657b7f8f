// Package procs sets how many threads run Go code at once
// (runtime.GOMAXPROCS) by the process's load, between one and the
// runtime's own default.
//
// A daemon that answers one request at a time has a goroutine to run
// now and then, and each one it readies while other Ps are idle makes
// the runtime wake an idle thread to look for it, which spins, may steal
// it to a CPU whose caches are cold, or sleeps again. On a small host
// whose client runs beside the daemon, that thread takes the CPU the
// client is waiting on. Measured on 2 vCPUs with the E2B SDK in Node
// calling one request at a time (docs/BENCHMARKS.md, "GOMAXPROCS by
// load"): commands.run 1.53 ms and a 1 KiB write and read 1.75 ms at the
// median of twelve runs with this governor, against 1.87 and 2.00 ms with
// two Ps throughout; while 50 clients got 3,031-4,384 execs/s from a
// daemon held to one P, against 5,954-6,418 with the governor and
// 5,987-6,378 with two. So the Governor keeps one P while the process
// uses little CPU and gives it every P as soon as it is busy: when it
// uses most of its Ps' time, or when goroutines queue to run.
package procs

import (
	"errors"
	"math"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Config configures a [Governor].
type Config struct {
	// Max is the most Ps. Zero means the runtime's default (the CPUs,
	// or the cgroup's CPU limit), as it is each time the governor
	// raises the count: a limit changed meanwhile is followed.
	Max int
	// OnChange, when set, is called with the new count after each
	// change, from the governor's goroutine.
	OnChange func(procs int)
}

// The policy's thresholds (see next).
const (
	interval = 10 * time.Millisecond // between the governor's looks at the load
	// busyShare: two intervals in a row in which the process used this
	// share of its Ps' time (CPU time over wall time, per P) are busy.
	// One is not: a garbage collection's workers, or threads in system
	// calls, take a single P's process past it for a few milliseconds.
	busyShare = 0.95
	// slowWait: a goroutine that waited this long to run waited for
	// want of a P; most wait a few µs behind the goroutine that readied
	// them. queued: so many such waiters on average over queueIntervals
	// are a queue. Not fewer: with one P, the E2B SDK calling one request
	// at a time leaves 0.3-0.6 waiting on average (goroutines readied
	// while the P is in a system call wait for it to come back), about 1
	// at most over half a second (5 while sandboxes' containers start),
	// while the same calls are answered sooner than with two Ps
	// (docs/BENCHMARKS.md, "GOMAXPROCS by load"). The main signal is the
	// CPU the process uses; the queue is for a host so busy that a single
	// P cannot get busyShare of a CPU.
	slowWait       = 250 * time.Microsecond
	queued         = 3
	queueIntervals = 50
	// trackingPeriod: the runtime records the wait of one goroutine run
	// in this many (runtime/proc.go's gTrackingPeriod).
	trackingPeriod = 8
	// calmShare: after calmIntervals without a busy one, the Ps kept are
	// the fewest that the process's mean load over them keeps under this
	// share (a single interval's load is bursty: one garbage collection
	// or a create takes a CPU for a few milliseconds).
	calmShare     = 0.5
	calmIntervals = 50
)

// sample is what the process did over one interval.
type sample struct {
	cpu float64 // CPUs used: the process's CPU time over the interval's wall time
	// queue is how many goroutines waited to run, on average over the
	// interval, counting only waits of slowWait or more: the waits the
	// runtime sampled, times its sampling period (see meter.read).
	queue float64
}

// ring holds the last values of a series.
type ring struct {
	v []float64
	i int
}

func newRing(n int) ring { return ring{v: make([]float64, n)} }

func (r *ring) add(x float64) {
	r.v[r.i] = x
	r.i = (r.i + 1) % len(r.v)
}

// mean is the mean of the last len(r.v) values (zeros before the first).
func (r *ring) mean() float64 {
	var sum float64
	for _, x := range r.v {
		sum += x
	}
	return sum / float64(len(r.v))
}

// policy decides the Ps from one sample after another.
type policy struct {
	max   int
	hot   bool // the last sample used busyShare of its Ps
	load  ring // the last calmIntervals samples' cpu
	queue ring // the last queueIntervals samples' queue
	calm  int  // samples since the last busy one or the last change
}

func newPolicy(max int) *policy {
	return &policy{max: max, load: newRing(calmIntervals), queue: newRing(queueIntervals)}
}

// next returns the Ps to use after s, given cur. A queue of goroutines
// waiting to run, or two intervals in a row that used busyShare of the
// Ps, give every P at once: a burst of requests should not wait for a
// ramp. Ps are taken back only after calmIntervals samples without a
// busy one, down to as many as keep their mean load under calmShare per
// P, so a lull between two bursts does not cost a change each way.
func (p *policy) next(cur int, s sample) int {
	p.load.add(s.cpu)
	p.queue.add(s.queue)
	hot := s.cpu >= busyShare*float64(cur)
	busy := p.queue.mean() >= queued || hot && p.hot
	p.hot = hot
	if busy {
		p.calm = 0
		return p.max
	}
	p.calm++
	if cur == 1 || p.calm < calmIntervals {
		return cur
	}
	want := max(1, int(math.Ceil(p.load.mean()/calmShare)))
	if want >= cur {
		return cur
	}
	p.calm = 0
	return want
}

// Governor adjusts runtime.GOMAXPROCS to the process's load until Stop.
type Governor struct {
	cfg     Config
	deflt   bool // Max is the runtime's default
	changes atomic.Uint64
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// running is set while a Governor runs: GOMAXPROCS is the process's.
var running atomic.Bool

// ErrRunning is Start's error while another Governor runs.
var ErrRunning = errors.New("procs: a governor is already running")

// Start starts governing GOMAXPROCS with cfg. Only one Governor runs in
// a process at a time.
func Start(cfg Config) (*Governor, error) {
	if !running.CompareAndSwap(false, true) {
		return nil, ErrRunning
	}
	deflt := cfg.Max <= 0
	if deflt {
		runtime.SetDefaultGOMAXPROCS()
		cfg.Max = runtime.GOMAXPROCS(0)
	}
	g := &Governor{cfg: cfg, deflt: deflt, stop: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g, nil
}

// Procs is the process's count of Ps now (runtime.GOMAXPROCS).
func (g *Governor) Procs() int { return runtime.GOMAXPROCS(0) }

// Changes is how many times the governor has changed GOMAXPROCS.
func (g *Governor) Changes() uint64 { return g.changes.Load() }

// Stop stops the governor and gives the process its Max Ps back (the
// runtime's default, which the runtime then keeps up to date, when Max
// was zero). It is idempotent.
func (g *Governor) Stop() {
	g.once.Do(func() {
		close(g.stop)
		<-g.done
		g.setMax()
		running.Store(false)
	})
}

// setMax gives the process its most Ps and returns how many.
func (g *Governor) setMax() int {
	if !g.deflt {
		runtime.GOMAXPROCS(g.cfg.Max)
		return g.cfg.Max
	}
	runtime.SetDefaultGOMAXPROCS()
	return runtime.GOMAXPROCS(0)
}

func (g *Governor) run() {
	defer close(g.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	p := newPolicy(g.cfg.Max)
	var m meter
	m.init()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		cur := runtime.GOMAXPROCS(0) // the runtime may have changed its default since
		s, ok := m.read()
		if !ok {
			continue
		}
		n := p.next(cur, s)
		switch {
		case n == cur:
			continue
		case n == p.max:
			n = g.setMax()
			p.max = n
		default:
			runtime.GOMAXPROCS(n)
		}
		if n != cur {
			g.changes.Add(1)
			if g.cfg.OnChange != nil {
				g.cfg.OnChange(n)
			}
		}
	}
}

// meter reads the process's CPU time and the runtime's histogram of how
// long goroutines waited to run, as differences from its last read.
type meter struct {
	at      time.Time
	cpu     time.Duration
	metric  []metrics.Sample
	counts  []uint64 // the histogram's counts at the last read
	slowIdx int      // the first bucket whose waits are all slowWait or longer
}

const schedLatencies = "/sched/latencies:seconds"

func (m *meter) init() {
	m.metric = []metrics.Sample{{Name: schedLatencies}}
	metrics.Read(m.metric)
	m.slowIdx = -1
	if m.metric[0].Value.Kind() == metrics.KindFloat64Histogram {
		h := m.metric[0].Value.Float64Histogram()
		m.counts = append([]uint64(nil), h.Counts...)
		// Bucket i holds [Buckets[i], Buckets[i+1]).
		m.slowIdx = len(h.Counts)
		for i := range h.Counts {
			if h.Buckets[i] >= slowWait.Seconds() {
				m.slowIdx = i
				break
			}
		}
	}
	m.at, m.cpu = time.Now(), processCPU()
}

// read returns the sample since the last read; false when no time has
// passed on the clock.
func (m *meter) read() (sample, bool) {
	now, cpu := time.Now(), processCPU()
	wall := now.Sub(m.at)
	if wall <= 0 {
		return sample{}, false
	}
	s := sample{cpu: float64(cpu-m.cpu) / float64(wall)}
	m.at, m.cpu = now, cpu
	if m.slowIdx >= 0 {
		metrics.Read(m.metric)
		h := m.metric[0].Value.Float64Histogram()
		var waited float64 // seconds, each wait at its bucket's lower bound
		for i, c := range h.Counts {
			if i >= m.slowIdx {
				waited += float64(c-m.counts[i]) * h.Buckets[i]
			}
			m.counts[i] = c
		}
		s.queue = waited * trackingPeriod / wall.Seconds()
	}
	return s, true
}

// processCPU is the CPU time (user and system) of every thread of the
// process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
