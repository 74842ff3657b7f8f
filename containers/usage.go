package containers

import (
	"context"

	"rung.dev/rung"
	"rung.dev/rung/container"
	"rung.dev/rung/controller"
	"rung.dev/rung/storage"
	"rung.dev/rung/usage"
)

var _ controller.ContainerUsage = (*Tier)(nil)

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
	t.mu.Lock()
	ids := make([]rung.SandboxID, 0, len(t.followers))
	for ctr := range t.followers {
		ids = append(ids, ctr.Sandbox)
	}
	t.mu.Unlock()
	return readUsage(ctx, container.NewUsageReader("rung"), t.cfg.Pool, ids, dst)
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
