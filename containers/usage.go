package containers

import (
	"context"
	"sync"

	"rung.dev/rung"
	"rung.dev/rung/container"
	"rung.dev/rung/controller"
	"rung.dev/rung/storage"
	"rung.dev/rung/usage"
)

var _ controller.ContainerUsage = (*Tier)(nil)

// usageState is what the tier keeps for reading usage: the cgroup reader
// and the pass's list of sandboxes, both reused from pass to pass.
type usageState struct {
	mu     sync.Mutex // guards the fields below: one pass at a time
	reader *container.UsageReader
	ids    []rung.SandboxID
}

// Live implements [controller.ContainerUsage]: the containers the tier
// watches for their sandboxes (warm spares have no watcher until claimed).
func (t *Tier) Live() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.followers)
}

// Usage implements [controller.ContainerUsage]: for each container that
// serves a sandbox, its cgroups' counters (runc and runsc both make
// /rung/<sandbox>) and its subvolume's quota accounting.
func (t *Tier) Usage(ctx context.Context, dst []usage.Reading) []usage.Reading {
	u := &t.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.reader == nil {
		u.reader = container.NewUsageReader("rung")
	}
	u.ids = u.ids[:0]
	t.mu.Lock()
	for ctr := range t.followers {
		u.ids = append(u.ids, ctr.Sandbox)
	}
	t.mu.Unlock()
	return readUsage(ctx, u.reader, t.cfg.Pool, u.ids, dst)
}

// readUsage appends a reading of each of ids to dst: cgroups from r,
// disk bytes from pool (-1 when the pool keeps no quotas). A sandbox
// whose cgroups are gone (its container just stopped) is left out.
func readUsage(ctx context.Context, r *container.UsageReader, pool *storage.Pool, ids []rung.SandboxID, dst []usage.Reading) []usage.Reading {
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		cg, err := r.Read(id)
		if err != nil {
			continue
		}
		disk := int64(-1)
		if n, err := pool.UsedBytes(ctx, string(id)); err == nil {
			disk = n
		}
		dst = append(dst, usage.Reading{Sandbox: id, CPU: cg.CPU, MemoryBytes: cg.MemoryBytes, MemoryPeakBytes: cg.MemoryPeakBytes, DiskBytes: disk})
	}
	return dst
}
