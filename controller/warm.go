package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/container"
	"rung.dev/rung/image"
	"rung.dev/rung/storage"
	"rung.dev/rung/store"
)

// The warm pool keeps spare sandboxes ready so that a create can skip the
// container's cold start. A spare is a sandbox subvolume under a fresh,
// unguessable id whose container is started and whose agent answers, but
// which has no store row: nothing can address it until a create claims
// it. The claim records the sandbox under the spare's id and hands the
// running container to it, so the overlay upper and the /workspace and
// /tmp bind mounts are in the sandbox's own subvolume exactly as after a
// cold start. A crash leaves a subvolume without a row and a container
// without a sandbox; Manager.ReapStale and start-up reconciliation remove
// them like any other leftover.

const (
	// warmRecheck is how often the refiller looks for spares that died
	// or whose image was rebuilt, when nothing wakes it sooner.
	warmRecheck = 30 * time.Second
	// warmBackoffMin and warmBackoffMax bound the wait after a failed
	// refill; it doubles with each failure in a row.
	warmBackoffMin = time.Second
	warmBackoffMax = time.Minute
)

// WarmSpec asks for spare sandboxes of one image and size. A create
// claims a spare when its image, size, isolation ("container") and
// network ("none") match; any other create starts cold.
type WarmSpec struct {
	// Image is an image name in the image store ("lite", "debian");
	// "" is the container tier's default image. A spare runs the
	// image's current digest; a rebuilt image replaces its spares.
	Image string
	// Size is a preset or custom values, resolved like a create's; the
	// zero value is the default preset. No tenant's size policy applies:
	// the operator chose it, and a spare only serves a create whose size
	// already passed its own tenant's policy, so it gives no tenant more
	// than that policy allows.
	Size rung.Size
	// Count is how many spares are kept ready; 0 keeps none.
	Count int
}

// String returns the spec in [ParseWarm]'s form.
func (s WarmSpec) String() string {
	img := s.Image
	if img == "" {
		img = "default"
	}
	if s.Size == (rung.Size{}) {
		return img + "=" + strconv.Itoa(s.Count)
	}
	return img + ":" + s.Size.String() + "=" + strconv.Itoa(s.Count)
}

// ParseWarm parses IMAGE[:SIZE]=COUNT, the form of `rung serve --warm`:
// "lite=2" keeps two spares of image lite at the default size,
// "debian:basic=1" one of image debian at size preset basic. Errors are
// rung.ErrInvalid.
func ParseWarm(s string) (WarmSpec, error) {
	key, n, ok := strings.Cut(s, "=")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count < 0 {
		return WarmSpec{}, rung.Errorf(rung.ErrInvalid, "warm spec %q: want IMAGE[:SIZE]=COUNT, COUNT a number >= 0", clip(s))
	}
	img, preset, _ := strings.Cut(key, ":")
	if !rung.ValidName(img) {
		return WarmSpec{}, rung.Errorf(rung.ErrInvalid, "warm spec %q: invalid image name %q", clip(s), clip(img))
	}
	spec := WarmSpec{Image: img, Count: count}
	if preset != "" {
		if _, ok := rung.Presets[preset]; !ok {
			return WarmSpec{}, rung.Errorf(rung.ErrInvalid, "warm spec %q: unknown size preset %q", clip(s), clip(preset))
		}
		spec.Size = rung.Size{Preset: preset}
	}
	return spec, nil
}

// warmPool holds the spares and refills them. Its one goroutine (run)
// starts and destroys spares; claims only take spares off the list.
type warmPool struct {
	t     *Containers
	pool  *storage.Pool
	log   *slog.Logger
	specs []WarmSpec    // images named, sizes resolved; Count > 0
	kick  chan struct{} // cap 1: the refiller should look again

	mu      sync.Mutex    // guards the fields below
	ready   [][]*spare    // per spec, oldest first
	making  int           // index of the spec whose spare is being started; -1 for none
	discard []*spare      // returned, dead or stale spares for the refiller to destroy
	changed chan struct{} // closed and replaced whenever ready changes
	closed  bool          // drained: no more spares
}

// spare is one pre-started sandbox without a row.
type spare struct {
	id   rung.SandboxID
	ctr  *container.Container
	spec int // index in warmPool.specs
}

// newWarmPool checks specs against the container tier: each image must
// exist. It returns nil when no spec asks for a spare.
func newWarmPool(cfg Config, log *slog.Logger) (*warmPool, error) {
	w := &warmPool{pool: cfg.Pool, log: log, kick: make(chan struct{}, 1), changed: make(chan struct{})}
	for _, s := range cfg.Warm {
		if s.Count <= 0 {
			continue
		}
		if w.t == nil {
			t, ok := cfg.Container.(*Containers)
			if !ok || t == nil {
				return nil, rung.Errorf(rung.ErrUnavailable, "warm pool: the container tier is not available")
			}
			w.t = t
		}
		if s.Image == "" {
			s.Image = w.t.defaultImage()
		}
		if _, err := w.t.Images.Get(s.Image); err != nil {
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

// claim takes a live spare of image ref ("" for the default image, a
// name, or name@sha256:…) and size, or returns nil.
func (w *warmPool) claim(ref string, size rung.Size) *spare {
	name, digest, err := image.ParseRef(ref)
	if ref == "" {
		name, digest, err = w.t.defaultImage(), "", nil
	}
	if err != nil {
		return nil
	}
	sp, taken := w.take(name, digest, size)
	if taken {
		w.poke() // refill what was taken, destroy what was discarded
	}
	return sp
}

// take pops spec's first live spare of image name (and digest, unless
// "") and size; spares found dead or stale go to the discard list. taken
// reports whether the pool changed.
func (w *warmPool) take(name, digest string, size rung.Size) (sp *spare, taken bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, false
	}
	for i, s := range w.specs {
		if s.Image != name || !sameSize(s.Size, size) {
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

// run is the refiller: it keeps every spec's spares at its count,
// destroys discarded ones, and backs off after a failure. It stops when
// ctx ends, after destroying every spare.
func (w *warmPool) run(ctx context.Context) {
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
		im, err := w.t.Images.Get(s.Image)
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
			sp, err := w.start(ctx, im, s.Size)
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

// start makes one spare: subvolume, quota, container. On failure nothing
// is left behind.
func (w *warmPool) start(ctx context.Context, im image.Image, size rung.Size) (*spare, error) {
	id := rung.NewSandboxID()
	if err := w.pool.Create(ctx, string(id)); err != nil {
		return nil, err
	}
	err := w.pool.SetQuota(ctx, string(id), size.DiskBytes)
	if errors.Is(err, rung.ErrUnavailable) {
		err = nil // quotas are off on this pool, as for any sandbox
	}
	var ctr *container.Container
	if err == nil {
		ctr, err = w.t.Runc.Start(ctx, container.StartRequest{Sandbox: id, Subvolume: w.pool.Path(string(id)), Image: im, Size: size})
	}
	if err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if derr := w.pool.Delete(dctx, string(id)); derr != nil && !errors.Is(derr, rung.ErrNotFound) {
			w.log.Warn("warm spare: subvolume left for reconcile", "sandbox", id, "err", derr)
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
	if err := w.t.Runc.Stop(ctx, sp.id); err != nil {
		w.log.Warn("warm spare: stop container", "sandbox", sp.id, "err", err)
		if !exited(sp.ctr) {
			return // it may still use the subvolume: leave both for the next start
		}
	}
	if err := w.pool.Delete(ctx, string(sp.id)); err != nil && !errors.Is(err, rung.ErrNotFound) {
		w.log.Warn("warm spare: subvolume left for reconcile", "sandbox", sp.id, "err", err)
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

// WarmReady returns how many spare sandboxes are ready to be claimed.
func (c *Controller) WarmReady() int {
	if c.warm == nil {
		return 0
	}
	c.warm.mu.Lock()
	defer c.warm.mu.Unlock()
	n := 0
	for _, r := range c.warm.ready {
		n += len(r)
	}
	return n
}

// WaitWarm waits until every [WarmSpec] has its count of spares ready,
// or ctx ends. Without a warm pool it returns at once.
func (c *Controller) WaitWarm(ctx context.Context) error {
	if c.warm == nil {
		return nil
	}
	for {
		ok, changed := c.warm.full()
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

// claimSpare takes a spare that matches sb for its create, or returns
// nil; sb then takes the spare's id.
func (c *Controller) claimSpare(sb *store.Sandbox) *spare {
	if c.warm == nil || sb.Isolation != rung.IsolationContainer || sb.Network.Mode != "none" {
		return nil
	}
	sp := c.warm.claim(sb.Image, sb.Size)
	if sp != nil {
		sb.ID = sp.id
	}
	return sp
}

// adoptSpare makes sp's container the running container of sb, whose row
// now records it as running: it journals the start and watches the
// container like one started cold.
func (c *Controller) adoptSpare(ctx context.Context, sb store.Sandbox, sp *spare) {
	c.journal(ctx, sb.ID, rung.EntryContainerStarted, ContainerStarted{
		Image: sp.ctr.Image.Ref(), Isolation: sb.Isolation, Warm: true,
	})
	c.warm.t.watch(sb.ID, sp.ctr)
	c.poke() // the idle alarm
}
