package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// MaxForks is the most forks one request makes.
const MaxForks = 100

// forksAtOnce bounds the store writes of a fork request made at the same
// time (the store commits concurrent writes together).
const forksAtOnce = 10

// ForkRequest asks for forks. Count defaults to len(Names), else 1.
type ForkRequest struct {
	Count  int
	Names  []string          // the forks' names, in order; fewer than Count leaves the rest unnamed
	Labels map[string]string // every fork's labels; default the source's
}

// ForkOutcome is one fork: its sandbox, or why it could not be made.
type ForkOutcome struct {
	Sandbox rung.Sandbox
	Err     error
}

func checkFork(req ForkRequest) (int, error) {
	n := req.Count
	if n == 0 {
		n = max(len(req.Names), 1)
	}
	if n < 1 || n > MaxForks {
		return 0, rung.Errorf(rung.ErrInvalid, "count must be between 1 and %d", MaxForks)
	}
	if len(req.Names) > n {
		return 0, rung.Errorf(rung.ErrInvalid, "%d names for %d forks", len(req.Names), n)
	}
	seen := map[string]bool{}
	for _, name := range req.Names {
		if name != "" && seen[name] {
			return 0, rung.Errorf(rung.ErrInvalid, "name %q given twice", clip(name))
		}
		seen[name] = true
	}
	if req.Labels != nil {
		if err := checkLabels(req.Labels); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Fork makes req.Count independent sandboxes from tenant's live sandbox
// ref, all with its files as of one instant (one snapshot, taken on its
// actor and removed once the forks are made), its config, their own ids,
// files, containers and journals ("sandbox.forked" with the parent). A
// write in one is never seen in another. Failures are per fork; the error
// is for the request as a whole (ErrInvalid, ErrNotFound, the snapshot's).
func (c *Controller) Fork(ctx context.Context, tenant rung.TenantID, ref string, req ForkRequest) (outs []ForkOutcome, err error) {
	defer func(start time.Time) { c.observeSnapshot(OpFork, start, err, forksMade(outs)) }(time.Now())
	n, err := checkFork(req)
	if err != nil {
		return nil, err
	}
	a, err := c.acquire(ctx, tenant, ref)
	if err != nil {
		return nil, err
	}
	defer c.release(a)
	var src store.Snapshot
	err = c.do(ctx, a, func() error {
		sb := c.sandbox(a)
		src = store.Snapshot{Snapshot: rung.Snapshot{ID: rung.NewSnapshotID(), Tenant: sb.Tenant, Sandbox: sb.ID, Image: sb.Image}, Source: sb.Sandbox}
		// No row: a crash leaves a subvolume nothing names, which
		// start-up reconciliation removes.
		return c.pool.Snapshot(ctx, string(sb.ID), string(src.ID))
	})
	if err != nil {
		return nil, fmt.Errorf("fork sandbox %s: %w", a.id, err)
	}
	defer func() {
		if err := c.pool.Delete(context.WithoutCancel(ctx), string(src.ID)); err != nil {
			c.log.WarnContext(ctx, "fork: snapshot left for reconcile", "snapshot", src.ID, "err", err)
		}
	}()
	outs = c.forkAll(ctx, tenant, src, req, n, branch{forkOf: a.id, typ: rung.EntrySandboxForked, data: SandboxForked{Parent: a.id}})
	var made, failed []string
	for _, o := range outs {
		if o.Err != nil {
			failed = append(failed, rung.Code(o.Err))
		} else {
			made = append(made, string(o.Sandbox.ID))
		}
	}
	c.journal(ctx, a.id, rung.EntrySandboxForkMade, SandboxForkMade{Failed: failed, Forks: made})
	return outs, nil
}

// ForkSnapshot makes req.Count independent sandboxes from tenant's
// snapshot snapRef, as a restore makes one (same image rule), and renews
// the snapshot's retention.
func (c *Controller) ForkSnapshot(ctx context.Context, tenant rung.TenantID, snapRef string, req ForkRequest) (outs []ForkOutcome, err error) {
	defer func(start time.Time) { c.observeSnapshot(OpFork, start, err, forksMade(outs)) }(time.Now())
	n, err := checkFork(req)
	if err != nil {
		return nil, err
	}
	snap, err := c.findSnapshot(ctx, tenant, snapRef)
	if err != nil {
		return nil, err
	}
	defer c.snaps.hold(snap.ID)()
	if snap.Image, err = c.restoreImage(tenant, snap, ""); err != nil {
		return nil, err
	}
	outs = c.forkAll(ctx, tenant, snap, req, n, branch{origin: snap.ID, typ: rung.EntrySandboxForked,
		data: SandboxForked{Parent: snap.Sandbox, Snapshot: snap.ID}})
	c.renew(ctx, snap)
	c.spareFor(snap.ID)
	return outs, nil
}

// forkAll makes n branches of from, like proto: their rows side by side
// (the store commits them together), then their subvolumes in one
// storage.ForkMany (one btrfs commit for all, where forks made one by one
// each wait for their own), then their limits, states and journals.
func (c *Controller) forkAll(ctx context.Context, tenant rung.TenantID, from store.Snapshot, req ForkRequest, n int, proto branch) []ForkOutcome {
	outs := make([]ForkOutcome, n)
	bs := make([]branch, n)
	sbs := make([]store.Sandbox, n)
	start := time.Now()
	parallel(n, func(i int) {
		b := proto
		b.tenant, b.from = tenant, from
		b.req = CreateRequest{Labels: req.Labels}
		if i < len(req.Names) {
			b.req.Name = req.Names[i]
		}
		b.req = fromSource(b.req, from.Source)
		bs[i] = b
		sbs[i], outs[i].Err = c.prepareBranch(ctx, b)
	})
	var idx []int
	var names []string
	for i := range n {
		if outs[i].Err == nil {
			idx, names = append(idx, i), append(names, string(sbs[i].ID))
		}
	}
	c.fault("fork.row")
	errs := c.pool.ForkMany(ctx, string(from.ID), names)
	c.fault("fork.subvolume")
	parallel(len(idx), func(k int) {
		i := idx[k]
		if errs[k] != nil {
			outs[i].Err = c.undoBranch(ctx, sbs[i], errs[k])
			return
		}
		outs[i].Sandbox, outs[i].Err = c.finishBranch(ctx, bs[i], sbs[i])
	})
	for _, o := range outs {
		if o.Err != nil && rung.Code(o.Err) == rung.CodeInternal {
			c.log.WarnContext(ctx, "fork failed", "tenant", tenant, "snapshot", from.ID, "err", o.Err)
		}
	}
	c.log.InfoContext(ctx, "forks made", "tenant", tenant, "sandbox", from.Sandbox, "count", n, "duration", time.Since(start))
	return outs
}

// parallel runs fn(0) .. fn(n-1), forksAtOnce at a time, and returns when
// all have.
func parallel(n int, fn func(i int)) {
	slots := make(chan struct{}, forksAtOnce)
	var wg sync.WaitGroup
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() { // ends when fn(i) returns
			defer func() { <-slots }()
			fn(i)
		})
	}
	wg.Wait()
}

// forksMade counts the forks outs made.
func forksMade(outs []ForkOutcome) int {
	n := 0
	for _, o := range outs {
		if o.Err == nil {
			n++
		}
	}
	return n
}
