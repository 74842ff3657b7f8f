package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"rung.dev/rung"
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
// them like any other leftover. The container tier keeps the pool
// (containers/warm.go); the controller claims from it.

// WarmSpec asks for spare sandboxes of one image and size. A create
// claims a spare when its image, size, isolation ("container") and
// LinkWorkspace match; any other create starts cold. A spare's container
// starts without network: a create in mode egress or open that claims it
// gets its link as the claim ends, as a running sandbox whose network
// changes does (a few milliseconds; see [NetworkTier].Apply).
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
	// LinkWorkspace is what a create's CreateRequest.LinkWorkspace must
	// be to claim one of these spares: the image's directory made a link
	// to /workspace before the spare's container starts (E2B's creates
	// link /home/user). "" serves creates that link nothing.
	LinkWorkspace string
}

// String returns the spec in [ParseWarm]'s form, followed by the linked
// directory when it has one.
func (s WarmSpec) String() string {
	img := s.Image
	if img == "" {
		img = "default"
	}
	if s.Size != (rung.Size{}) {
		img += ":" + s.Size.String()
	}
	img += "=" + strconv.Itoa(s.Count)
	if s.LinkWorkspace != "" {
		img += " (" + s.LinkWorkspace + " linked)"
	}
	return img
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

// spares opens the container tier's warm pool for Config.Warm; nil when
// no spec asks for a spare.
func (c *Controller) spares() (Spares, error) {
	var specs []WarmSpec
	for _, s := range c.cfg.Warm {
		if err := checkLinkWorkspace(s.LinkWorkspace); err != nil {
			return nil, fmt.Errorf("warm pool %s: %w", s, err)
		}
		if s.Count > 0 {
			specs = append(specs, s)
		}
	}
	if len(specs) == 0 {
		return nil, nil
	}
	if c.tier == nil {
		return nil, rung.Errorf(rung.ErrUnavailable, "warm pool: the container tier is not available")
	}
	w, err := c.tier.Spares(specs)
	if err != nil || w == nil {
		return nil, err // a nil *T in a non-nil interface would pass c.warm != nil
	}
	return w, nil
}

// WarmReady returns how many spare sandboxes are ready to be claimed.
func (c *Controller) WarmReady() int {
	if c.warm == nil {
		return 0
	}
	return c.warm.Ready()
}

// WaitWarm waits until every [WarmSpec] has its count of spares ready,
// or ctx ends. Without a warm pool it returns at once.
func (c *Controller) WaitWarm(ctx context.Context) error {
	if c.warm == nil {
		return nil
	}
	return c.warm.Wait(ctx)
}

// claimSpare takes a spare that matches sb for its create, with link
// linked (CreateRequest.LinkWorkspace), and gives sb its id; "" when
// there is none, else the image the spare runs.
func (c *Controller) claimSpare(sb *store.Sandbox, link string) (image string) {
	if c.warm == nil || sb.Isolation != rung.IsolationContainer || sb.Network.Mode != rung.NetworkNone && c.net == nil {
		return ""
	}
	id, image, ok := c.warm.Claim(sb.Image, sb.Size, link)
	if !ok {
		return ""
	}
	sb.ID = id
	return image
}

// createOnSpare finishes the create of sb on the spare it claimed (see
// claimSpare): the spare's subvolume and running container are the
// sandbox's already, so its workspace is given to the sandbox's user
// first, and then one write adds the row, in state "running" with its
// idle alarm armed, together with its first journal entries
// (sandbox.created, container.started). A crash before that write
// leaves a spare for start-up reconciliation to remove; after it, a
// running sandbox. When the write fails (a name taken, the tenant's
// limit) the spare goes back to the pool, its workspace back to the
// owner it had (root's, or a linked home's), or is destroyed when that
// fails.
func (c *Controller) createOnSpare(ctx context.Context, sb store.Sandbox, who Identity, image string, claimed time.Time) (rung.Sandbox, error) {
	// The owner it had goes back with a spare given back (root's, or a
	// linked home's); a spare whose owner cannot be read is destroyed.
	uid, gid, ownerErr := c.workspaceOwner(sb.ID)
	giveBack := func(cause error) (rung.Sandbox, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if ownerErr != nil || c.chownWorkspace(sb.ID, uid, gid) != nil {
			c.warm.Destroy(cctx, sb.ID)
		} else {
			c.warm.Return(cctx, sb.ID)
		}
		return rung.Sandbox{}, fmt.Errorf("create sandbox: %w", cause)
	}
	if ownerErr != nil {
		return giveBack(ownerErr)
	}
	if err := c.ownWorkspace(sb.ID, who); err != nil {
		return giveBack(err)
	}
	sb.State, sb.IdleAt = rung.StateRunning, sb.CreatedAt.Add(idleTimeout(sb))
	created, err := c.entry(rung.EntrySandboxCreated, SandboxCreated{Name: sb.Name, Size: sb.Size.String(), Warm: true})
	if err != nil {
		return giveBack(err)
	}
	started, err := c.entry(rung.EntryContainerStarted, ContainerStarted{Image: image, Isolation: sb.Isolation, Warm: true})
	if err != nil {
		return giveBack(err)
	}
	if err := c.st.CreateSandbox(ctx, sb, c.lim.SandboxesPerTenant, created, started); err != nil {
		return giveBack(err)
	}
	c.activate(sb)
	c.notify(sb.ID)
	c.warm.Attach(sb.ID)
	c.poke() // the idle alarm (and the TTL's, when it has one)
	if sb.Network.Mode != rung.NetworkNone {
		c.spareNetwork(ctx, sb.Sandbox)
	}
	took := time.Since(claimed)
	c.observeStart(true, took)
	_, digest, _ := strings.Cut(image, "@")
	c.traceStart(ctx, sb.ID, true, ContainerStart{Image: image, Digest: digest, Took: took})
	return sb.Sandbox, nil
}

// spareNetwork gives the container of sb, created on a spare (which runs
// without network), the network sb's policy says, on sb's actor as an
// update's would be. When that fails the container stops (reason
// "network"): the sandbox stays, and its next start prepares its
// network as a cold start does, or fails naming why.
func (c *Controller) spareNetwork(ctx context.Context, sb rung.Sandbox) {
	a, err := c.acquire(ctx, sb.Tenant, string(sb.ID))
	if err == nil {
		err = c.do(ctx, a, func() error { return c.net.Apply(ctx, sb) })
		c.release(a)
	}
	if err == nil {
		return
	}
	c.log.WarnContext(ctx, "a claimed spare's network: its container stops", "sandbox", sb.ID, "err", err)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := c.tier.Stop(sctx, sb.ID, "network"); err != nil {
		c.log.WarnContext(ctx, "stop a claimed spare's container", "sandbox", sb.ID, "err", err)
	}
}
