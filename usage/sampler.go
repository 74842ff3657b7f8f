package usage

import (
	"context"
	"sync"
	"time"

	"rung.dev/rung"
)

// Config configures a [Sampler]. Source is required; zero fields take
// the defaults.
type Config struct {
	Source Source
	// Interval is the time between two passes; default 5 seconds.
	Interval time.Duration
	// Keep is how long a sandbox's samples are kept: its ring holds
	// Keep/Interval samples, and a sandbox not sampled for Keep (its
	// container stopped) loses its ring. Default 1 hour.
	Keep time.Duration
	// MaxSandboxes bounds the rings kept: past it, the ring sampled
	// longest ago goes. Default 10,000.
	MaxSandboxes int
	// Observe, if set, is told after each pass how long it took and how
	// many sandboxes it read (for metrics).
	Observe func(took time.Duration, sandboxes int)
}

// Sampler samples sandboxes' use every Interval and keeps each
// sandbox's samples in a ring of Keep/Interval. Its methods are safe for
// concurrent use, except [Sampler.Sample] with itself.
type Sampler struct {
	cfg      Config
	capacity int       // samples per ring
	buf      []Reading // the pass's readings, reused: only Sample touches it

	mu      sync.Mutex // guards the fields below
	rings   map[rung.SandboxID]*ring
	sampled chan struct{} // closed when the next pass ends
}

// New returns a sampler over cfg; [Sampler.Run] takes the samples.
func New(cfg Config) *Sampler {
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Keep <= 0 {
		cfg.Keep = time.Hour
	}
	if cfg.MaxSandboxes <= 0 {
		cfg.MaxSandboxes = 10000
	}
	return &Sampler{cfg: cfg, capacity: max(1, int(cfg.Keep/cfg.Interval)), rings: map[rung.SandboxID]*ring{},
		sampled: make(chan struct{})}
}

// Interval returns the time between two passes.
func (s *Sampler) Interval() time.Duration { return s.cfg.Interval }

// Keep returns how long samples are kept.
func (s *Sampler) Keep() time.Duration { return s.cfg.Keep }

// Run takes a sample every Interval until ctx ends.
func (s *Sampler) Run(ctx context.Context) {
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			s.Sample(ctx, now)
		}
	}
}

// Sampled returns a channel that is closed when the next pass ends (a
// signal, carrying no data: read the samples after it).
func (s *Sampler) Sampled() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sampled
}

// Sample takes one pass at time now: a reading of every sandbox the
// Source reports, added to its ring. Rings not sampled since now-Keep go.
// Run calls it, from one goroutine; tests and benchmarks call it instead
// of Run. It is not safe for concurrent use with itself.
func (s *Sampler) Sample(ctx context.Context, now time.Time) {
	start := time.Now()
	s.buf = s.cfg.Source(ctx, s.buf[:0])
	s.mu.Lock()
	t := now.UnixNano()
	for _, r := range s.buf {
		s.addLocked(r, t)
	}
	s.pruneLocked(now.Add(-s.cfg.Keep).UnixNano())
	done := s.sampled
	s.sampled = make(chan struct{})
	s.mu.Unlock()
	close(done)
	if s.cfg.Observe != nil {
		s.cfg.Observe(time.Since(start), len(s.buf))
	}
}

// addLocked adds reading r, taken at t, to its sandbox's ring.
func (s *Sampler) addLocked(r Reading, t int64) {
	rg := s.rings[r.Sandbox]
	if rg == nil {
		rg = &ring{}
		s.rings[r.Sandbox] = rg
	}
	p := point{t: t, cpu: int64(r.CPU), mem: r.MemoryBytes, peak: r.MemoryPeakBytes, disk: r.DiskBytes}
	if prev, ok := rg.last(); ok && t > prev.t {
		used := p.cpu - prev.cpu
		if used < 0 { // the container restarted: its counter began again
			used = p.cpu
		}
		p.pct = 100 * float64(used) / float64(t-prev.t)
	}
	rg.add(p, s.capacity)
}

// pruneLocked drops the rings whose newest sample is older than cutoff,
// then, past MaxSandboxes, those sampled longest ago.
func (s *Sampler) pruneLocked(cutoff int64) {
	for id, rg := range s.rings {
		if p, ok := rg.last(); !ok || p.t < cutoff {
			delete(s.rings, id)
		}
	}
	for len(s.rings) > s.cfg.MaxSandboxes {
		var oldest rung.SandboxID
		var at int64
		for id, rg := range s.rings {
			if p, _ := rg.last(); oldest == "" || p.t < at {
				oldest, at = id, p.t
			}
		}
		delete(s.rings, oldest)
	}
}

// Forget drops sandbox id's samples (it was deleted).
func (s *Sampler) Forget(id rung.SandboxID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rings, id)
}

// Samples returns sandbox id's samples taken from start to end
// inclusive, oldest first (a zero start or end is unbounded); nil when it
// has none.
func (s *Sampler) Samples(id rung.SandboxID, start, end time.Time) []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	rg := s.rings[id]
	if rg == nil {
		return nil
	}
	var out []Sample
	for i := range rg.pts {
		p := rg.at(i)
		if !start.IsZero() && p.t < start.UnixNano() || !end.IsZero() && p.t > end.UnixNano() {
			continue
		}
		out = append(out, p.sample())
	}
	return out
}

// Current is a sandbox's newest sample.
type Current struct {
	Sandbox rung.SandboxID
	Sample
}

// Current returns the newest sample of every sandbox sampled in the last
// two intervals before now (whose container runs, as far as the sampler
// knows), in no order.
func (s *Sampler) Current(now time.Time) []Current {
	cutoff := now.Add(-2 * s.cfg.Interval).UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Current
	for id, rg := range s.rings {
		if p, ok := rg.last(); ok && p.t >= cutoff {
			out = append(out, Current{Sandbox: id, Sample: p.sample()})
		}
	}
	return out
}
