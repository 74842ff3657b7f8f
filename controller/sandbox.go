package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// CreateRequest is what a caller may set on a new sandbox. Zero fields
// take defaults: no name, the server's default image, size preset
// rung.DefaultPreset, the image's default user, isolation "container",
// network "none", server-default idle timeout, no TTL.
type CreateRequest struct {
	Name        string             `json:"name,omitempty"`
	Labels      map[string]string  `json:"labels,omitempty"`
	Image       string             `json:"image,omitempty"`
	Size        rung.Size          `json:"size,omitzero"`
	Isolation   rung.Isolation     `json:"isolation,omitempty"`
	Network     rung.NetworkPolicy `json:"network,omitzero"`
	Env         map[string]string  `json:"env,omitempty"`
	User        string             `json:"user,omitempty"`
	IdleTimeout time.Duration      `json:"idle_timeout,omitempty"`
	TTL         time.Duration      `json:"ttl,omitempty"`
	// OnExpiry is what the TTL does when it runs out (rung.Expiry); the
	// zero value deletes the sandbox. Its labels follow the rules of
	// Labels. A restore or fork takes the request's, not the source's.
	OnExpiry rung.Expiry `json:"on_expiry,omitzero"`
	// FromSnapshot, a snapshot's id or name, restores it: the sandbox
	// starts with its files and on its image digest (see restore.go).
	FromSnapshot string `json:"from_snapshot,omitempty"`
	// LinkWorkspace, an absolute directory of the image such as E2B's
	// /home/user, becomes /workspace for the sandbox's container: a
	// symbolic link to it, whose contents in the image are copied into
	// /workspace first (see [ContainerImages].LinkWorkspace). It is done
	// at create, host-side, so no container starts for it, unless the
	// create claims a warm spare whose [WarmSpec] linked the same
	// directory before its container started. A restore or fork keeps
	// what its snapshot holds.
	LinkWorkspace string `json:"link_workspace,omitempty"`
}

// UpdateRequest changes a sandbox. Nil fields stay as they are.
type UpdateRequest struct {
	Labels      *map[string]string `json:"labels,omitempty"`
	IdleTimeout *time.Duration     `json:"idle_timeout,omitempty"`
	// Network replaces the sandbox's network policy, applied to its
	// running container at once (journaled network.updated).
	Network *rung.NetworkPolicy `json:"network,omitempty"`
	// ExpiresIn moves the sandbox's end: it is deleted this long from now
	// (its TTL becomes the time from creation to then), as E2B's
	// setTimeout does. It must be positive.
	ExpiresIn *time.Duration `json:"-"`
}

const (
	maxLabels     = 64
	maxLabelValue = 256
	maxEnv        = 256
	maxEnvBytes   = 64 << 10
)

func checkLabels(l map[string]string) error {
	if len(l) > maxLabels {
		return rung.Errorf(rung.ErrInvalid, "too many labels (%d, max %d)", len(l), maxLabels)
	}
	for k, v := range l {
		if !rung.ValidName(k) {
			return rung.Errorf(rung.ErrInvalid, "invalid label key %q: want 1 to 63 of [a-z0-9._-]", clip(k))
		}
		if len(v) > maxLabelValue {
			return rung.Errorf(rung.ErrInvalid, "label %s value longer than %d bytes", k, maxLabelValue)
		}
	}
	return nil
}

func checkEnv(env map[string]string) error {
	if len(env) > maxEnv {
		return rung.Errorf(rung.ErrInvalid, "too many environment variables (%d, max %d)", len(env), maxEnv)
	}
	n := 0
	for k, v := range env {
		n += len(k) + len(v)
		if k == "" || !validEnvName(k) {
			return rung.Errorf(rung.ErrInvalid, "invalid environment variable name %q", clip(k))
		}
		if strings.IndexByte(v, 0) >= 0 {
			return rung.Errorf(rung.ErrInvalid, "environment variable %s contains a NUL byte", k)
		}
	}
	if n > maxEnvBytes {
		return rung.Errorf(rung.ErrInvalid, "environment larger than %d bytes", maxEnvBytes)
	}
	return nil
}

func validEnvName(k string) bool {
	for i, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (c *Controller) checkCreate(tenant rung.TenantID, req CreateRequest) (rung.Size, error) {
	if req.Name != "" && !rung.ValidName(req.Name) {
		return rung.Size{}, rung.Errorf(rung.ErrInvalid, "invalid sandbox name %q: want 1 to 63 of [a-z0-9._-], starting with a letter or digit", clip(req.Name))
	}
	if err := checkLabels(req.Labels); err != nil {
		return rung.Size{}, err
	}
	if err := checkLabels(req.OnExpiry.Labels); err != nil {
		return rung.Size{}, fmt.Errorf("on expiry: %w", err)
	}
	if len(req.OnExpiry.Labels) > 0 && !req.OnExpiry.Stop {
		return rung.Size{}, rung.Errorf(rung.ErrInvalid, "on expiry: labels need stop (a deleted sandbox keeps none)")
	}
	if n := len(req.Labels) + len(req.OnExpiry.Labels); n > maxLabels {
		return rung.Size{}, rung.Errorf(rung.ErrInvalid, "too many labels with those set on expiry (%d, max %d)", n, maxLabels)
	}
	if err := checkEnv(req.Env); err != nil {
		return rung.Size{}, err
	}
	if err := checkLinkWorkspace(req.LinkWorkspace); err != nil {
		return rung.Size{}, err
	}
	if req.Image != "" && (len(req.Image) > 255 || !rung.ValidName(req.Image) && !validImageRef(req.Image)) {
		return rung.Size{}, rung.Errorf(rung.ErrInvalid, "invalid image %q", clip(req.Image))
	}
	switch req.Isolation {
	case "", rung.IsolationContainer, rung.IsolationGVisor:
	default:
		return rung.Size{}, rung.Errorf(rung.ErrInvalid, "unknown isolation %q (want container or gvisor)", clip(string(req.Isolation)))
	}
	if err := c.checkNetwork(tenant, req.Network); err != nil {
		return rung.Size{}, err
	}
	if req.IdleTimeout < 0 || req.TTL < 0 {
		return rung.Size{}, rung.Errorf(rung.ErrInvalid, "idle_timeout and ttl must not be negative")
	}
	return req.Size.Resolve(c.cfg.Sizes.For(tenant))
}

// checkLinkWorkspace validates a CreateRequest's or a WarmSpec's
// LinkWorkspace: "" or a clean absolute directory outside /workspace and
// /tmp.
func checkLinkWorkspace(d string) error {
	if d != "" && (len(d) > 255 || !path.IsAbs(d) || path.Clean(d) != d || d == "/" || under(d, "/workspace") || under(d, "/tmp")) {
		return rung.Errorf(rung.ErrInvalid, "invalid link_workspace %q: want a clean absolute directory outside /workspace and /tmp", clip(d))
	}
	return nil
}

// validImageRef accepts name@sha256:<hex>.
func validImageRef(s string) bool {
	name, digest, ok := cutLast(s, "@sha256:")
	if !ok || !rung.ValidName(name) || len(digest) != 64 {
		return false
	}
	for _, c := range digest {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func cutLast(s, sep string) (string, string, bool) {
	for i := len(s) - len(sep); i >= 0; i-- {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

// Create makes a sandbox for tenant: a store row in state "creating",
// then its subvolume, then state "ready", so that a crash at any point
// leaves something start-up reconciliation can finish or remove. A
// create that matches a warm spare (see [WarmSpec]) takes the spare's id,
// subvolume and running container and starts in state "running". The
// sandbox's user (req.User, or its image's default) owns /workspace.
// Errors: ErrInvalid (an unknown user or image too), ErrPermission (size
// outside the tenant's size policy, see [Config].Sizes), ErrExists (name
// taken), ErrLimit (too many sandboxes).
func (c *Controller) Create(ctx context.Context, tenant rung.TenantID, req CreateRequest) (rung.Sandbox, error) {
	if req.FromSnapshot != "" {
		return c.createFromSnapshot(ctx, tenant, req)
	}
	size, err := c.checkCreate(tenant, req)
	if err != nil {
		return rung.Sandbox{}, err
	}
	if req.Env, err = c.sandboxEnv(ctx, tenant, req.Env); err != nil {
		return rung.Sandbox{}, err
	}
	if c.cfg.CheckImage != nil {
		// Pin the image by digest now, so the sandbox always starts
		// exactly what its creator was allowed to start.
		if req.Image, err = c.cfg.CheckImage(tenant, req.Image); err != nil {
			return rung.Sandbox{}, err
		}
	}
	who, err := c.createIdentity(req.Image, req.User)
	if err != nil {
		return rung.Sandbox{}, err
	}
	now := time.Now().UTC()
	sb := store.Sandbox{Sandbox: rung.Sandbox{
		ID: rung.NewSandboxID(), Name: req.Name, Tenant: tenant, Labels: req.Labels, Image: req.Image,
		Size: size, Isolation: req.Isolation, Network: req.Network, Env: req.Env, User: who.User, State: store.StateCreating,
		IdleTimeout: req.IdleTimeout, TTL: req.TTL, OnExpiry: req.OnExpiry, CreatedAt: now, UpdatedAt: now,
	}}
	if sb.Isolation == "" {
		sb.Isolation = rung.IsolationContainer
	}
	if sb.Network.Mode == "" {
		sb.Network.Mode = "none"
	}
	if req.TTL > 0 {
		sb.ExpiresAt = now.Add(req.TTL)
	}
	// A matching spare gives the sandbox its id, subvolume and running
	// container (warm.go).
	claimed := time.Now()
	if spareImage := c.claimSpare(&sb, req.LinkWorkspace); spareImage != "" {
		return c.createOnSpare(ctx, sb, who, spareImage, claimed)
	}
	if err := c.st.CreateSandbox(ctx, sb, c.lim.SandboxesPerTenant); err != nil {
		return rung.Sandbox{}, fmt.Errorf("create sandbox: %w", err)
	}
	// Past this point the row exists: undo it on failure, without the
	// caller's cancellation, so nothing half-made stays behind.
	undo := func(cause error) (rung.Sandbox, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := c.pool.Delete(cctx, string(sb.ID)); err != nil && !errors.Is(err, rung.ErrNotFound) {
			c.log.WarnContext(ctx, "undo sandbox create: subvolume left for reconcile", "sandbox", sb.ID, "err", err)
		}
		if err := c.st.DeleteSandbox(cctx, sb.ID); err != nil {
			c.log.WarnContext(ctx, "undo sandbox create: row left for reconcile", "sandbox", sb.ID, "err", err)
		}
		return rung.Sandbox{}, fmt.Errorf("create sandbox: %w", cause)
	}
	if err := c.pool.Create(ctx, string(sb.ID)); err != nil {
		return undo(err)
	}
	if err := c.pool.SetQuota(ctx, string(sb.ID), size.DiskBytes); err != nil && !errors.Is(err, rung.ErrUnavailable) {
		return undo(err)
	}
	sb.State = rung.StateReady
	if err := c.ownWorkspace(sb.ID, who); err != nil {
		return undo(err)
	}
	if req.LinkWorkspace != "" && c.tier != nil {
		subvol := c.pool.Path(string(sb.ID))
		if err := c.tier.LinkWorkspace(sb.Image, req.LinkWorkspace, filepath.Join(subvol, "rootfs", "upper"), filepath.Join(subvol, "fs", "workspace")); err != nil {
			return undo(err)
		}
	}
	if err := c.st.UpdateSandbox(ctx, sb); err != nil {
		return undo(err)
	}
	// Active before anything else can learn of it (the caller, the
	// expiry alarm), so every later change of its row goes through it.
	c.activate(sb)
	c.journal(ctx, sb.ID, rung.EntrySandboxCreated, SandboxCreated{Name: sb.Name, Size: sb.Size.String()})
	if !sb.ExpiresAt.IsZero() {
		c.poke()
	}
	return sb.Sandbox, nil
}

// Get returns tenant's sandbox ref (an ID or a name), or ErrNotFound.
func (c *Controller) Get(ctx context.Context, tenant rung.TenantID, ref string) (rung.Sandbox, error) {
	id := rung.SandboxID(ref)
	var sb store.Sandbox
	var err error
	switch {
	case id.Valid():
		if sb, ok, err := c.activeRow(tenant, id, ref); ok {
			return sb, err
		}
		sb, err = c.st.GetSandbox(ctx, tenant, id)
	case rung.ValidName(ref):
		sb, err = c.st.SandboxByName(ctx, tenant, ref)
	default:
		return rung.Sandbox{}, rung.Errorf(rung.ErrInvalid, "invalid sandbox id or name %q", clip(ref))
	}
	if err != nil {
		return rung.Sandbox{}, notFound(err, ref)
	}
	if sb.State == store.StateCreating || sb.State == rung.StateDeleted {
		return rung.Sandbox{}, rung.Errorf(rung.ErrNotFound, "sandbox %s not found", clip(ref))
	}
	return sb.Sandbox, nil
}

// activeRow answers Get from the actor of sandbox id when it has one
// (ok): every write of an active sandbox's row goes through its actor
// (writeRow), which keeps its copy current, so the store need not be
// read. The copy's maps and slices are cloned: callers may change them.
func (c *Controller) activeRow(tenant rung.TenantID, id rung.SandboxID, ref string) (sb rung.Sandbox, ok bool, err error) {
	c.mu.Lock()
	a := c.actors[id]
	if a == nil {
		c.mu.Unlock()
		return rung.Sandbox{}, false, nil
	}
	deleted, row := a.deleted, a.sb
	c.mu.Unlock()
	if deleted {
		// Being deleted: the row says whether it is gone yet (a
		// delete that failed leaves it).
		return rung.Sandbox{}, false, nil
	}
	if (tenant != "" && row.Tenant != tenant) || row.State == store.StateCreating || row.State == rung.StateDeleted {
		return rung.Sandbox{}, true, rung.Errorf(rung.ErrNotFound, "sandbox %s not found", clip(ref))
	}
	sb = row.Sandbox
	sb.Labels, sb.Env = maps.Clone(sb.Labels), maps.Clone(sb.Env)
	sb.Network.Rules, sb.Network.Headers = slices.Clone(sb.Network.Rules), slices.Clone(sb.Network.Headers)
	sb.OnExpiry.Labels = maps.Clone(sb.OnExpiry.Labels)
	return sb, true, nil
}

// Deleting reports whether tenant's sandbox id is being deleted or is
// gone: a delete (by request, its TTL, ...) has begun on it, which its
// row does not say until the container has stopped, or the store no
// longer has it. Execs a delete cancels return after it has begun, so a
// caller can tell such an end from an exit or a kill of its own. A
// failure to read the store reports false.
func (c *Controller) Deleting(ctx context.Context, tenant rung.TenantID, id rung.SandboxID) bool {
	c.mu.Lock()
	a := c.actors[id]
	deleted := a != nil && a.deleted && a.sb.Tenant == tenant
	c.mu.Unlock()
	if deleted {
		return true
	}
	if a != nil {
		return false
	}
	sb, err := c.st.GetSandbox(ctx, tenant, id)
	if err != nil {
		return rung.Code(err) == rung.CodeNotFound
	}
	return sb.State == rung.StateDeleted
}

// ListFilter selects a tenant's sandboxes.
type ListFilter struct {
	State  rung.State
	Labels map[string]string
	Limit  int
	// After is a cursor, a page's Next: the list goes on after it.
	After string
	// Desc lists newest first; a cursor carries on in the order it was
	// made in.
	Desc bool
	// CreatedFrom, when not zero, keeps the sandboxes created at or after
	// it.
	CreatedFrom time.Time
}

// Page is one page of the sandbox list.
type Page struct {
	Sandboxes []rung.Sandbox
	// Next is the cursor of the page after this one (ListFilter.After),
	// "" when the list ends on this page.
	Next string
}

// List returns tenant's sandboxes matching f, oldest first.
func (c *Controller) List(ctx context.Context, tenant rung.TenantID, f ListFilter) ([]rung.Sandbox, error) {
	p, err := c.ListPage(ctx, tenant, f)
	return p.Sandboxes, err
}

// ListPage returns a page of tenant's sandboxes matching f, oldest
// first: at most f.Limit of them, after f.After, and the cursor of the
// next page when f.Limit cut the list short. Paging by cursor never
// skips or repeats a sandbox, whatever is created or deleted between
// pages (new ones come last).
func (c *Controller) ListPage(ctx context.Context, tenant rung.TenantID, f ListFilter) (Page, error) {
	switch f.State {
	case "", rung.StateReady, rung.StateRunning, rung.StatePaused:
	default:
		return Page{}, rung.Errorf(rung.ErrInvalid, "unknown state %q", clip(string(f.State)))
	}
	if err := checkLabels(f.Labels); err != nil {
		return Page{}, err
	}
	sf := store.Filter{Tenant: tenant, State: f.State, Labels: f.Labels, Desc: f.Desc, CreatedFrom: f.CreatedFrom}
	if f.Limit > 0 {
		sf.Limit = f.Limit + 1 // one more tells whether there is a next page
	}
	if f.After != "" {
		pos, err := parseSandboxCursor(f.After)
		if err != nil {
			return Page{}, err
		}
		sf.After = &pos
	}
	rows, err := c.st.ListSandboxes(ctx, sf)
	if err != nil {
		return Page{}, fmt.Errorf("list sandboxes: %w", err)
	}
	var p Page
	if f.Limit > 0 && len(rows) > f.Limit {
		// From the last row of the page, shown or not (one being created
		// or deleted is not).
		rows = rows[:f.Limit]
		p.Next = Cursor(rows[len(rows)-1].Sandbox)
	}
	p.Sandboxes = make([]rung.Sandbox, 0, len(rows))
	for _, r := range rows {
		if r.State == store.StateCreating || r.State == rung.StateDeleted {
			continue
		}
		p.Sandboxes = append(p.Sandboxes, r.Sandbox)
	}
	return p, nil
}

// Cursor is sb's place in the list, as a ListFilter.After: the list goes
// on after sb.
func Cursor(sb rung.Sandbox) string { return pageCursor(sb.CreatedAt, string(sb.ID)) }

// parseSandboxCursor reads a Cursor.
func parseSandboxCursor(s string) (store.Position, error) {
	t, id, ok := splitCursor(s)
	if !ok || t.UnixNano() < 0 || !rung.SandboxID(id).Valid() {
		return store.Position{}, rung.Errorf(rung.ErrInvalid, "malformed list cursor %q: pass a page's next as it is", clip(s))
	}
	return store.Position{Created: t, ID: rung.SandboxID(id)}, nil
}

// Update changes a sandbox's labels or idle timeout.
func (c *Controller) Update(ctx context.Context, tenant rung.TenantID, ref string, req UpdateRequest) (rung.Sandbox, error) {
	if req.Labels != nil {
		if err := checkLabels(*req.Labels); err != nil {
			return rung.Sandbox{}, err
		}
	}
	if req.IdleTimeout != nil && *req.IdleTimeout < 0 {
		return rung.Sandbox{}, rung.Errorf(rung.ErrInvalid, "idle_timeout must not be negative")
	}
	if req.ExpiresIn != nil && *req.ExpiresIn <= 0 {
		return rung.Sandbox{}, rung.Errorf(rung.ErrInvalid, "timeout must be positive")
	}
	if req.Network != nil {
		p := *req.Network
		if p.Mode == "" {
			p.Mode = rung.NetworkNone
		}
		if err := c.checkNetwork(tenant, p); err != nil {
			return rung.Sandbox{}, err
		}
		req.Network = &p
	}
	a, err := c.acquire(ctx, tenant, ref)
	if err != nil {
		return rung.Sandbox{}, err
	}
	defer c.release(a)
	var out rung.Sandbox
	err = c.do(ctx, a, func() error {
		sb := c.sandbox(a)
		if req.Labels != nil {
			// Room is kept for the labels its TTL may set.
			if n := len(*req.Labels) + len(sb.OnExpiry.Labels); n > maxLabels {
				return rung.Errorf(rung.ErrInvalid, "too many labels with those set on expiry (%d, max %d)", n, maxLabels)
			}
			sb.Labels = *req.Labels
		}
		if req.IdleTimeout != nil {
			sb.IdleTimeout = *req.IdleTimeout
		}
		if req.Network != nil {
			sb.Network = *req.Network
		}
		sb.UpdatedAt = time.Now().UTC()
		if req.ExpiresIn != nil {
			sb.ExpiresAt = sb.UpdatedAt.Add(*req.ExpiresIn)
			sb.TTL = sb.ExpiresAt.Sub(sb.CreatedAt)
			defer c.poke() // after the row is written: the alarm loop reads it
		}
		if err := c.writeRow(ctx, a, sb); err != nil {
			return fmt.Errorf("update sandbox %s: %w", sb.ID, err)
		}
		if req.Labels != nil || req.IdleTimeout != nil || req.ExpiresIn != nil {
			c.journal(ctx, sb.ID, rung.EntrySandboxUpdated, SandboxUpdated{IdleTimeoutMS: sb.IdleTimeout.Milliseconds(), Labels: sb.Labels})
		}
		out = sb.Sandbox
		if req.Network == nil {
			return nil
		}
		p := sb.Network
		c.journal(ctx, sb.ID, rung.EntryNetworkUpdated, NetworkUpdated{Headers: len(p.Headers), Mode: p.Mode, Rules: len(p.Rules)})
		c.fault("network.row") // the row says the new network, the container has the old one
		if c.net != nil {
			if err := c.net.Apply(ctx, sb.Sandbox); err != nil {
				return fmt.Errorf("apply the network policy of sandbox %s: %w", sb.ID, err)
			}
		}
		return nil
	})
	return out, err
}

// Delete removes tenant's sandbox ref: running execs are canceled and
// waited for, the row becomes a tombstone, the subvolume goes, then the
// row and its journal. A crash midway is finished by reconciliation. A
// subvolume the kernel will not remove does not fail the delete: the
// sandbox stays a tombstone, unreachable, and its files are quarantined
// for the next start's reconciliation (see [Controller.quarantine]).
func (c *Controller) Delete(ctx context.Context, tenant rung.TenantID, ref string) error {
	a, err := c.acquire(ctx, tenant, ref)
	if err != nil {
		return err
	}
	defer c.release(a)
	return c.do(ctx, a, func() error { return c.deleteLocked(ctx, a, "deleted by request") })
}

// deleteLocked deletes a's sandbox. It runs on a's goroutine.
func (c *Controller) deleteLocked(ctx context.Context, a *actor, why string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	c.mu.Lock()
	if a.deleted {
		c.mu.Unlock()
		return rung.Errorf(rung.ErrNotFound, "sandbox %s not found", a.id)
	}
	a.deleted = true
	sb := a.sb
	c.mu.Unlock()
	a.execCancel()
	a.execs.Wait()
	// The container bind-mounts the subvolume: it goes first.
	if err := c.stopContainerOf(ctx, sb.ID, "sandbox deleted"); err != nil {
		return fmt.Errorf("delete sandbox %s: %w", sb.ID, err)
	}
	sb.State = rung.StateDeleted
	if err := c.st.UpdateSandbox(ctx, sb); err != nil {
		return fmt.Errorf("delete sandbox %s: %w", sb.ID, err)
	}
	if err := c.pool.Delete(ctx, string(sb.ID)); err != nil && !errors.Is(err, rung.ErrNotFound) {
		// For its tenant the sandbox is gone (a tombstone no request
		// reaches); the files the kernel would not remove stay,
		// quarantined, for the next start to remove.
		if qerr := c.quarantine(ctx, sb, err); qerr != nil {
			return fmt.Errorf("delete sandbox %s: %w", sb.ID, errors.Join(err, qerr))
		}
		c.notify(sb.ID)
		return nil
	}
	if err := c.st.DeleteSandbox(ctx, sb.ID); err != nil {
		return fmt.Errorf("delete sandbox %s: %w", sb.ID, err)
	}
	if c.net != nil {
		c.net.Forget(sb.ID)
	}
	if c.usage != nil {
		c.usage.Forget(sb.ID)
	}
	c.log.InfoContext(ctx, "sandbox deleted", "sandbox", sb.ID, "tenant", sb.Tenant, "reason", why)
	c.notify(sb.ID)
	return nil
}

// journal appends one journal entry, logging (not returning) a failure:
// the operation it records has already happened. data is typ's data type
// (entries.go).
func (c *Controller) journal(ctx context.Context, id rung.SandboxID, typ rung.EntryType, data any) {
	if err := c.appendJournal(ctx, id, typ, data); err != nil {
		c.log.WarnContext(ctx, "journal append", "sandbox", id, "type", typ, "err", err)
	}
}

// appendJournal appends one journal entry and wakes its followers.
func (c *Controller) appendJournal(ctx context.Context, id rung.SandboxID, typ rung.EntryType, data any) error {
	ev, err := c.entry(typ, data)
	if err != nil {
		return err
	}
	if _, err := c.st.AppendEvents(ctx, id, []store.Event{ev}); err != nil {
		return err
	}
	c.notify(id)
	return nil
}

// entry is a journal entry of type typ, now.
func (c *Controller) entry(typ rung.EntryType, data any) (store.Event, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return store.Event{}, err
	}
	return store.Event{Time: time.Now().UTC(), Type: string(typ), Journal: true, Data: b}, nil
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	rest, ok := strings.CutPrefix(p, dir)
	return ok && (rest == "" || rest[0] == '/')
}
