// Package usage keeps sandboxes' resource use over time: a [Sampler]
// takes a reading of every sandbox whose container runs, every few
// seconds, from a [Source] (the container tier's cgroups and the pool's
// quota accounting), and keeps each sandbox's samples in a bounded ring
// in memory. It knows nothing of tiers, tenants or the API: the
// controller owns a Sampler and scopes what it hands out.
package usage

import (
	"context"
	"time"

	"rung.dev/rung"
)

// Reading is one sandbox's use at one instant, as a [Source] reports it.
type Reading struct {
	Sandbox rung.SandboxID
	// CPU is the CPU time its container's processes have used since the
	// container started.
	CPU time.Duration
	// MemoryBytes is the memory charged to the container now, page
	// cache included (as its memory limit counts it).
	MemoryBytes int64
	// MemoryPeakBytes is the most memory charged to it at once since it
	// started.
	MemoryPeakBytes int64
	// DiskBytes is the space the sandbox's subvolume is charged (its
	// quota's accounting: what counts against its disk size); -1 when the
	// pool cannot tell.
	DiskBytes int64
}

// Source appends to dst a reading of every sandbox whose container runs
// now and returns it. A sandbox it cannot read is left out. It is called
// from one goroutine at a time, without any lock of the Sampler's held.
type Source func(ctx context.Context, dst []Reading) []Reading

// Sample is a [Reading] at a time, with the CPU rate over the time since
// the sandbox's previous sample.
type Sample struct {
	Time            time.Time
	CPU             time.Duration // cumulative, since the container started
	MemoryBytes     int64
	MemoryPeakBytes int64
	DiskBytes       int64 // -1: unknown
	// CPUPercent is the CPU used since the previous sample over the time
	// between them: 100 is one core busy throughout. It is 0 for a
	// sandbox's first sample. A container that restarted between two
	// samples (its CPU time went back) is charged its whole CPU time over
	// the interval: a bound, not an average.
	CPUPercent float64
}

// point is a Sample as a ring keeps it: 48 bytes rather than 64.
type point struct {
	t, cpu, mem, peak, disk int64 // t in Unix nanoseconds, cpu in nanoseconds
	pct                     float64
}

func (p point) sample() Sample {
	return Sample{Time: time.Unix(0, p.t), CPU: time.Duration(p.cpu), MemoryBytes: p.mem, MemoryPeakBytes: p.peak,
		DiskBytes: p.disk, CPUPercent: p.pct}
}

// ring is one sandbox's samples, oldest overwritten first once it holds
// its capacity. It grows to that capacity as samples come, so that a
// container that ran for a minute costs a minute of samples.
type ring struct {
	pts  []point // len grows to cap; then next wraps
	next int     // where the next point goes once full
}

// add appends p, overwriting the oldest point when the ring is full.
func (r *ring) add(p point, capacity int) {
	if len(r.pts) < capacity {
		r.pts = append(r.pts, p)
		return
	}
	r.pts[r.next] = p
	r.next = (r.next + 1) % len(r.pts)
}

// at returns the i-th oldest point.
func (r *ring) at(i int) point {
	if len(r.pts) == 0 {
		return point{}
	}
	return r.pts[(r.next+i)%len(r.pts)]
}

// last returns the newest point, false when there is none.
func (r *ring) last() (point, bool) {
	if len(r.pts) == 0 {
		return point{}, false
	}
	return r.at(len(r.pts) - 1), true
}
