package containers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/container"
	"rung.dev/rung/controller"
	"rung.dev/rung/image"
	"rung.dev/rung/storage"
)

// The warm pool keeps spare sandboxes ready so that a create can skip the
// container's cold start (controller/warm.go says what a spare is and how
// a create claims one). Here the pool starts, checks and destroys the
// spares; the controller claims them through [controller.Spares].

const (
	// warmRecheck is how often the refiller looks for spares that died
	// or whose image was rebuilt, when nothing wakes it sooner.
	warmRecheck = 30 * time.Second
	// warmBackoffMin and warmBackoffMax bound the wait after a failed
	// refill; it doubles with each failure in a row.
	warmBackoffMin = time.Second
	warmBackoffMax = time.Minute
	// refillDelay is how long a claim leaves the pool short before the
	// refill starts. A spare's start (runtime, mounts, agent) takes both
	// of a small host's cores for tens of milliseconds; the claimed
	// sandbox's first commands, which usually follow at once, come first.
	// Without it a warm claim and its first exec took a third longer here.
	refillDelay = 100 * time.Millisecond
)

// warmPool holds the spares and refills them; it implements
// [controller.Spares]. Its one goroutine (Run) starts and destroys
// spares; claims only take spares off the list.
type warmPool struct {
	t     *Tier
	pool  *storage.Pool
	log   *slog.Logger
	specs []controller.WarmSpec // images named, sizes resolved; Count > 0
	kick  chan struct{}         // cap 1: the refiller should look again

	mu      sync.Mutex                // guards the fields below
	ready   [][]*spare                // per spec, oldest first
	making  int                       // index of the spec whose spare is being started; -1 for none
	discard []*spare                  // returned, dead or stale spares for the refiller to destroy
	changed chan struct{}             // closed and replaced whenever ready changes
	closed  bool                      // drained: no more spares
	claimed map[rung.SandboxID]*spare // taken by Claim, until Attach, Return or Destroy
}

// spare is one pre-started sandbox without a row.
type spare struct {
	id   rung.SandboxID
	ctr  *container.Container
	spec int // index in warmPool.specs
}

// Spares implements [controller.ContainerTier]: it checks specs against
// the tier (each image must exist) and returns nil when no spec asks for
// a spare.
func (t *Tier) Spares(specs []controller.WarmSpec) (controller.Spares, error) {
	w := &warmPool{t: t, pool: t.cfg.Pool, log: t.log, kick: make(chan struct{}, 1), changed: make(chan struct{}),
		claimed: map[rung.SandboxID]*spare{}}
	for _, s := range specs {
		if s.Count <= 0 {
			continue
		}
		if s.Image == "" {
			s.Image = t.defaultImage()
		}
		if _, err := t.cfg.Images.Get(s.Image); err != nil {
			return nil, fmt.Errorf("warm pool %s: %w", s, err)
		}
		size, err := s.Size.Resolve(rung.SizePolicy{})
		if err != nil {
			return nil, fmt.Errorf("warm pool %s: %w", s, err)
		}
		s.Size = size
		w.specs = append(w.specs, s)
	}
	if len(w.specs) == 0 {
		return nil, nil
	}
	w.ready = make([][]*spare, len(w.specs))
	w.making = -1
	return w, nil
}

// poke wakes the refiller.
func (w *warmPool) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// changedLocked wakes whoever waits for the pool to change.
func (w *warmPool) changedLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// Claim takes a live spare of image ref ("" for the default image, a
// name, or name@sha256:…), size and linked directory; see
// [controller.Spares].
func (w *warmPool) Claim(ref string, size rung.Size, link string) (rung.SandboxID, string, bool) {
	name, digest, err := image.ParseRef(ref)
	if ref == "" {
		name, digest, err = w.t.defaultImage(), "", nil
	}
	if err != nil {
		return "", "", false
	}
	sp, taken := w.take(name, digest, size, link)
	if taken {
		time.AfterFunc(refillDelay, w.poke) // refill what was taken, destroy what was discarded
	}
	if sp == nil {
		return "", "", false
	}
	w.mu.Lock()
	w.claimed[sp.id] = sp
	w.mu.Unlock()
	return sp.id, sp.ctr.Image.Ref(), true
}

// unclaim returns claimed spare id, or nil.
func (w *warmPool) unclaim(id rung.SandboxID) *spare {
	w.mu.Lock()
	defer w.mu.Unlock()
	sp := w.claimed[id]
	delete(w.claimed, id)
	return sp
}

// Attach hands claimed spare id's container to its sandbox: the tier
// watches it like one started cold.
func (w *warmPool) Attach(id rung.SandboxID) {
	if sp := w.unclaim(id); sp != nil {
		if w.t.cfg.Network != nil {
			w.t.cfg.Network.Started(id, sp.ctr.InitPID())
		}
		w.t.watch(id, sp.ctr)
	}
}

// Return gives back claimed spare id (its create failed before the
// sandbox existed): to the ready list if its spec has room, otherwise to
// be destroyed.
func (w *warmPool) Return(ctx context.Context, id rung.SandboxID) {
	if sp := w.unclaim(id); sp != nil {
		w.putBack(ctx, sp)
	}
}

// Destroy stops claimed spare id's container and deletes its subvolume.
func (w *warmPool) Destroy(ctx context.Context, id rung.SandboxID) {
	if sp := w.unclaim(id); sp != nil {
		w.destroy(ctx, sp)
	}
}

// Ready returns how many spares are ready to be claimed.
func (w *warmPool) Ready() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, r := range w.ready {
		n += len(r)
	}
	return n
}

// Wait waits until every spec has its count of spares ready, or ctx
// ends.
func (w *warmPool) Wait(ctx context.Context) error {
	for {
		ok, changed := w.full()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// take pops spec's first live spare of image name (and digest, unless
// ""), size and linked directory; spares found dead or stale go to the
// discard list. taken reports whether the pool changed.
func (w *warmPool) take(name, digest string, size rung.Size, link string) (sp *spare, taken bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, false
	}
	for i, s := range w.specs {
		if s.Image != name || !sameSize(s.Size, size) || s.LinkWorkspace != link {
			continue
		}
		for len(w.ready[i]) > 0 {
			sp := w.ready[i][0]
			w.ready[i] = w.ready[i][1:]
			w.changedLocked()
			taken = true
			if exited(sp.ctr) || digest != "" && sp.ctr.Image.Digest != digest {
				w.discard = append(w.discard, sp)
				continue
			}
			return sp, true
		}
	}
	return nil, taken
}

// sameSize reports whether a and b give a container the same resources
// and the subvolume the same quota, whatever their preset names.
func sameSize(a, b rung.Size) bool {
	return a.MilliCPU == b.MilliCPU && a.MemoryBytes == b.MemoryBytes && a.DiskBytes == b.DiskBytes
}

func exited(ctr *container.Container) bool {
	select {
	case <-ctr.Done():
		return true
	default:
		return false
	}
}

// putBack returns an unused claimed spare (its create failed before the
// sandbox existed): to the ready list if its spec has room, otherwise to
// be destroyed.
func (w *warmPool) putBack(ctx context.Context, sp *spare) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.destroy(ctx, sp) // the refiller is gone
		return
	}
	if i := sp.spec; w.heldLocked(i) < w.specs[i].Count && !exited(sp.ctr) {
		w.ready[i] = append(w.ready[i], sp)
		w.changedLocked()
		w.mu.Unlock()
		return
	}
	w.discard = append(w.discard, sp)
	w.mu.Unlock()
	w.poke()
}

// Run is the refiller: it keeps every spec's spares at its count,
// destroys discarded ones, and backs off after a failure. It stops when
// ctx ends, after destroying every spare.
func (w *warmPool) Run(ctx context.Context) {
	defer w.drain(ctx)
	var backoff time.Duration
	for {
		wait, kick := warmRecheck, w.kick
		if err := w.fill(ctx); err != nil && ctx.Err() == nil {
			backoff = min(max(2*backoff, warmBackoffMin), warmBackoffMax)
			w.log.Warn("warm pool refill", "err", err, "retry_in", backoff)
			// Claims do not retry sooner: a failing host would otherwise
			// fail once per create.
			wait, kick = backoff, nil
		} else {
			backoff = 0
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-kick:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// fill destroys discarded and stale spares and starts missing ones, one
// at a time, so the pool never holds more than its counts.
func (w *warmPool) fill(ctx context.Context) error {
	w.mu.Lock()
	gone := w.discard
	w.discard = nil
	w.mu.Unlock()
	ims := make([]image.Image, len(w.specs))
	for i, s := range w.specs {
		im, err := w.t.cfg.Images.Get(s.Image)
		if err != nil {
			w.destroyAll(ctx, gone)
			return fmt.Errorf("spare %s: %w", s, err)
		}
		ims[i] = im
		gone = append(gone, w.prune(i, im.Ref())...)
	}
	w.destroyAll(ctx, gone)
	for i, s := range w.specs {
		im := ims[i]
		for ctx.Err() == nil && w.reserve(i) {
			sp, err := w.start(ctx, im, s)
			w.mu.Lock()
			w.making = -1
			if err == nil {
				sp.spec = i
				w.ready[i] = append(w.ready[i], sp)
				w.changedLocked()
			}
			w.mu.Unlock()
			if err != nil {
				return fmt.Errorf("spare %s: %w", s, err)
			}
			w.log.Info("warm spare ready", "sandbox", sp.id, "image", im.Ref(), "size", s.Size.String())
		}
	}
	return nil
}

// prune takes spec i's spares that died or run an image other than ref.
func (w *warmPool) prune(i int, ref string) []*spare {
	w.mu.Lock()
	defer w.mu.Unlock()
	var gone []*spare
	keep := w.ready[i][:0]
	for _, sp := range w.ready[i] {
		if exited(sp.ctr) || sp.ctr.Image.Ref() != ref {
			gone = append(gone, sp)
			continue
		}
		keep = append(keep, sp)
	}
	if len(gone) > 0 {
		w.ready[i] = keep
		w.changedLocked()
	}
	return gone
}

// reserve reports whether spec i lacks a spare and, if so, counts the
// one about to be started, so a putBack meanwhile cannot overfill it.
func (w *warmPool) reserve(i int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.heldLocked(i) >= w.specs[i].Count {
		return false
	}
	w.making = i
	return true
}

// heldLocked is how many spares spec i has, ready or being started.
func (w *warmPool) heldLocked(i int) int {
	n := len(w.ready[i])
	if w.making == i {
		n++
	}
	return n
}

// start makes one spare of spec s: subvolume, quota, the linked
// directory, container. On failure nothing is left behind.
func (w *warmPool) start(ctx context.Context, im image.Image, s controller.WarmSpec) (*spare, error) {
	id := rung.NewSandboxID()
	if err := w.pool.Create(ctx, string(id)); err != nil {
		return nil, err
	}
	err := w.pool.SetQuota(ctx, string(id), s.Size.DiskBytes)
	if errors.Is(err, rung.ErrUnavailable) {
		err = nil // quotas are off on this pool, as for any sandbox
	}
	if err == nil && s.LinkWorkspace != "" {
		subvol := w.pool.Path(string(id))
		err = w.t.LinkWorkspace(im.Ref(), s.LinkWorkspace, filepath.Join(subvol, "rootfs", "upper"), filepath.Join(subvol, "fs", "workspace"))
	}
	var ctr *container.Container
	var resolv string
	var bundle []byte
	if err == nil {
		// A spare's sandbox has network none; its certificate store and
		// resolv.conf are the ones a later switch to egress needs.
		_, resolv, bundle, err = w.t.prepareNetwork(ctx, rung.Sandbox{ID: id, Network: rung.NetworkPolicy{Mode: rung.NetworkNone}})
	}
	if err == nil {
		ctr, err = w.t.cfg.Runc.Start(ctx, container.StartRequest{Sandbox: id, Subvolume: w.pool.Path(string(id)), Image: im, Size: s.Size,
			ResolvConf: resolv, CABundle: bundle})
	}
	if err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if derr := w.pool.Delete(dctx, string(id)); derr != nil && !errors.Is(derr, rung.ErrNotFound) {
			w.log.Warn("warm spare: subvolume left for reconcile", "sandbox", id, "err", derr)
		}
		if w.t.cfg.Network != nil {
			w.t.cfg.Network.Forget(id)
		}
		return nil, err
	}
	return &spare{id: id, ctr: ctr}, nil
}

// destroy stops a spare's container, then deletes its subvolume (the
// container bind-mounts it). Failures are logged: start-up reconciliation
// removes what is left.
func (w *warmPool) destroy(ctx context.Context, sp *spare) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := w.t.cfg.Runc.Stop(ctx, sp.id); err != nil {
		w.log.Warn("warm spare: stop container", "sandbox", sp.id, "err", err)
		if !exited(sp.ctr) {
			return // it may still use the subvolume: leave both for the next start
		}
	}
	if err := w.pool.Delete(ctx, string(sp.id)); err != nil && !errors.Is(err, rung.ErrNotFound) {
		w.log.Warn("warm spare: subvolume left for reconcile", "sandbox", sp.id, "err", err)
	}
	if w.t.cfg.Network != nil {
		w.t.cfg.Network.Forget(sp.id)
	}
}

func (w *warmPool) destroyAll(ctx context.Context, sps []*spare) {
	for _, sp := range sps {
		w.destroy(ctx, sp)
	}
}

// drain destroys every spare; the pool takes no more claims.
func (w *warmPool) drain(ctx context.Context) {
	w.mu.Lock()
	w.closed = true
	all := w.discard
	w.discard = nil
	for i := range w.ready {
		all = append(all, w.ready[i]...)
		w.ready[i] = nil
	}
	w.changedLocked()
	w.mu.Unlock()
	w.destroyAll(ctx, all)
}

// full reports whether every spec has its count of spares, and returns
// the channel closed at the next change.
func (w *warmPool) full() (bool, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, s := range w.specs {
		if len(w.ready[i]) < s.Count {
			return false, w.changed
		}
	}
	return true, w.changed
}
