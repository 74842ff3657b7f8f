package controller

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/usage"
)

// UsageConfig configures the sampling of sandboxes' resource use: every
// Interval, a reading of each sandbox whose container runs (CPU time,
// memory, peak memory from its cgroups; disk bytes from its quota), kept
// in memory for Keep in a ring per sandbox. Zero fields take the
// defaults.
type UsageConfig struct {
	Interval time.Duration // default 5 seconds
	Keep     time.Duration // default 1 hour: 720 samples of 48 bytes, 34 KiB, per sandbox
}

// ContainerUsage is an optional ability of a [ContainerTier]: it reports
// what its running containers use. Without it no sandbox is sampled,
// [Controller.Usage] has no samples and [Controller.ContainersLive] says
// 0. Package containers implements it.
type ContainerUsage interface {
	// Usage appends a reading of every running container that serves a
	// sandbox (warm spares are not sampled) to dst and returns it.
	Usage(ctx context.Context, dst []usage.Reading) []usage.Reading
	// Live returns how many containers serve sandboxes now.
	Live() int
}

// newSampler returns the usage sampler over the container tier, nil when
// the tier cannot report usage.
func (c *Controller) newSampler() *usage.Sampler {
	cu, ok := c.tier.(ContainerUsage)
	if !ok {
		return nil
	}
	return usage.New(usage.Config{Source: cu.Usage, Interval: c.cfg.Usage.Interval, Keep: c.cfg.Usage.Keep,
		Observe: c.cfg.Observer.UsagePass})
}

// SandboxUsage is a sandbox's samples, oldest first.
type SandboxUsage struct {
	Sandbox  rung.SandboxID
	Interval time.Duration // between two samples
	Samples  []usage.Sample
}

// Usage returns tenant's sandbox ref's usage samples taken from start to
// end (inclusive; a zero start is the oldest kept, a zero end now). A
// sandbox whose container has not run within the kept window has none.
// Errors: ErrNotFound, ErrInvalid (start after end).
func (c *Controller) Usage(ctx context.Context, tenant rung.TenantID, ref string, start, end time.Time) (SandboxUsage, error) {
	if !start.IsZero() && !end.IsZero() && start.After(end) {
		return SandboxUsage{}, rung.Errorf(rung.ErrInvalid, "start %s is after end %s", start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	sb, err := c.Get(ctx, tenant, ref)
	if err != nil {
		return SandboxUsage{}, err
	}
	out := SandboxUsage{Sandbox: sb.ID}
	if c.usage == nil {
		return out, nil
	}
	out.Interval = c.usage.Interval()
	out.Samples = c.usage.Samples(sb.ID, start, end)
	return out, nil
}

// DiskUsed returns the bytes tenant's sandbox ref's files take against
// its disk size, read now from the pool's quota. Errors: ErrNotFound,
// ErrUnavailable (the pool keeps no quotas).
func (c *Controller) DiskUsed(ctx context.Context, tenant rung.TenantID, ref string) (int64, error) {
	sb, err := c.Get(ctx, tenant, ref)
	if err != nil {
		return 0, err
	}
	return c.pool.UsedBytes(ctx, string(sb.ID))
}

// CurrentUsage is one sandbox's newest usage sample.
type CurrentUsage struct {
	Sandbox rung.Sandbox
	Sample  usage.Sample
}

// CurrentUsage returns the newest usage sample of each of tenant's
// sandboxes whose container runs (sampled in the last two intervals),
// busiest CPU first, and the sampling interval.
func (c *Controller) CurrentUsage(ctx context.Context, tenant rung.TenantID) ([]CurrentUsage, time.Duration, error) {
	if c.usage == nil {
		return nil, 0, nil
	}
	var out []CurrentUsage
	for _, cur := range c.usage.Current(time.Now()) {
		// One lookup per sampled sandbox (those with a running
		// container), not a listing of the tenant's, which may be
		// thousands of idle ones.
		sb, err := c.Get(ctx, tenant, string(cur.Sandbox))
		if errors.Is(err, rung.ErrNotFound) {
			continue // another tenant's, or deleted meanwhile
		}
		if err != nil {
			return nil, 0, err
		}
		out = append(out, CurrentUsage{Sandbox: sb, Sample: cur.Sample})
	}
	slices.SortFunc(out, func(a, b CurrentUsage) int {
		return cmp.Or(cmp.Compare(b.Sample.CPUPercent, a.Sample.CPUPercent), cmp.Compare(b.Sample.MemoryBytes, a.Sample.MemoryBytes),
			cmp.Compare(a.Sandbox.ID, b.Sandbox.ID))
	})
	return out, c.usage.Interval(), nil
}

// UsageSampled returns a channel closed when the usage sampler's next
// pass ends, nil when there is no sampler (for tests that wait for a
// sample rather than sleep).
func (c *Controller) UsageSampled() <-chan struct{} {
	if c.usage == nil {
		return nil
	}
	return c.usage.Sampled()
}

// ContainersLive returns how many containers serve sandboxes now (warm
// spares are [Controller.WarmReady]); 0 without a container tier that
// reports it.
func (c *Controller) ContainersLive() int {
	if cu, ok := c.tier.(ContainerUsage); ok {
		return cu.Live()
	}
	return 0
}
