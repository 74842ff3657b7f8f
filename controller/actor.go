package controller

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
	"rung.dev/rung/store"
)

// actor is an active sandbox: its cached row, open file view and shell,
// and the goroutine that runs its conflicting operations one at a time.
// It exists only while the sandbox is in use (plus IdleGrace).
type actor struct {
	id   rung.SandboxID
	mbox chan func() // bounded by Limits.Mailbox; full is ErrLimit

	// Set once by init before any use; read-only afterwards.
	initOnce sync.Once
	initErr  error
	root     *storage.Root
	sh       *shell.Shell
	ident    Identity // who the sandbox's commands run as (identity.go)
	identErr error    // why ident could not be resolved; execs then try again

	execCtx    context.Context // parent of every exec's context; canceled by delete
	execCancel context.CancelFunc
	execs      sync.WaitGroup // running execs; Add only under c.mu while !deleted

	// Guarded by Controller.mu.
	sb       store.Sandbox // cached row; the store is the source of truth
	refs     int           // callers using the actor now
	running  int           // execs running now
	deleted  bool          // a delete started: no new users
	retired  bool          // a rollback replaced its files: new users get a new actor
	lastUsed time.Time
}

// acquire returns the actor of tenant's sandbox ref (an ID or a name),
// creating it when the sandbox is idle. The caller must call release.
// Another tenant's sandbox is ErrNotFound, like a missing one.
func (c *Controller) acquire(ctx context.Context, tenant rung.TenantID, ref string) (*actor, error) {
	id := rung.SandboxID(ref)
	if !id.Valid() {
		if !rung.ValidName(ref) {
			return nil, rung.Errorf(rung.ErrInvalid, "invalid sandbox id or name %q", clip(ref))
		}
		sb, err := c.st.SandboxByName(ctx, tenant, ref)
		if err != nil {
			return nil, notFound(err, ref)
		}
		id = sb.ID
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, rung.Errorf(rung.ErrUnavailable, "server is shutting down")
	}
	a := c.actors[id]
	if a != nil {
		if a.deleted || (tenant != "" && a.sb.Tenant != tenant) {
			c.mu.Unlock()
			return nil, rung.Errorf(rung.ErrNotFound, "sandbox %s not found", clip(ref))
		}
		a.refs++
		c.mu.Unlock()
		return a, a.init(c)
	}
	swap := c.snaps.swapping(id)
	c.mu.Unlock()
	if swap != nil {
		// A rollback is replacing its files: wait for the new ones.
		select {
		case <-swap:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return c.acquire(ctx, tenant, ref)
	}

	sb, err := c.st.GetSandbox(ctx, tenant, id)
	if err != nil {
		return nil, notFound(err, ref)
	}
	if sb.State == store.StateCreating || sb.State == rung.StateDeleted {
		return nil, rung.Errorf(rung.ErrNotFound, "sandbox %s not found", clip(ref))
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, rung.Errorf(rung.ErrUnavailable, "server is shutting down")
	}
	if c.snaps.swapping(id) != nil { // a rollback started meanwhile
		c.mu.Unlock()
		return c.acquire(ctx, tenant, ref)
	}
	if a = c.actors[id]; a == nil { // no one activated it meanwhile
		a = c.activateLocked(sb)
	}
	if a.deleted {
		c.mu.Unlock()
		return nil, rung.Errorf(rung.ErrNotFound, "sandbox %s not found", clip(ref))
	}
	a.refs++
	c.mu.Unlock()
	return a, a.init(c)
}

// activateLocked makes sb's actor, which no one holds yet; c.mu is held.
func (c *Controller) activateLocked(sb store.Sandbox) *actor {
	a := &actor{id: sb.ID, sb: sb, mbox: make(chan func(), c.lim.Mailbox), lastUsed: time.Now()}
	a.execCtx, a.execCancel = context.WithCancel(c.ctx)
	c.actors[sb.ID] = a
	c.wg.Go(func() { c.runActor(a) }) // stops when idle or when Close cancels c.ctx
	return a
}

// activate makes the actor of sb, a sandbox just created, from the row
// in hand, so that its first use (an agent's create is followed by its
// first command at once) reads no row. Unused, it retires after
// IdleGrace like any other.
func (c *Controller) activate(sb store.Sandbox) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.actors[sb.ID] != nil {
		return
	}
	c.activateLocked(sb)
}

// rootInfo answers the isolate tier's stat of / for sandbox id with what
// its container's commands see there: the overlay's root shows its upper
// directory (rootfs/upper in the sandbox's subvolume). Until a container
// has run, the upper directory lacks the mount points a start makes in
// it (the agent's directory, /.rung, is one in every image), so the stat
// is refused and the exec goes to the container.
func (c *Controller) rootInfo(id rung.SandboxID) func() (fs.FileInfo, error) {
	if c.tier == nil {
		return nil
	}
	upper := filepath.Join(c.pool.Path(string(id)), "rootfs", "upper")
	return func() (fs.FileInfo, error) {
		if _, err := os.Lstat(filepath.Join(upper, agentMountPoint)); err != nil {
			return nil, fs.ErrNotExist
		}
		return os.Lstat(upper)
	}
}

// agentMountPoint is the directory of the root, outside every image,
// that a container's start makes for the agent's binary (container.AgentDir).
const agentMountPoint = ".rung"

// rootFile reads /etc/passwd and /etc/group for the isolate tier of a's
// sandbox (shell.Config.RootFile, owner names in ls -l, stat, find) as
// its container sees them: the overlay's upper directory's copy when the
// container changed one, else the image's.
func (c *Controller) rootFile(a *actor) func(string) ([]byte, error) {
	if c.tier == nil {
		return nil
	}
	upper := filepath.Join(c.pool.Path(string(a.id)), "rootfs", "upper")
	return func(name string) ([]byte, error) {
		return c.tier.AccountFile(c.sandbox(a).Image, upper, strings.TrimPrefix(name, "/"))
	}
}

// init opens the sandbox's file view and shell once.
func (a *actor) init(c *Controller) error {
	a.initOnce.Do(func() {
		root, err := c.pool.Root(string(a.id))
		if err != nil {
			a.initErr = err
			return
		}
		a.root = root
		a.ownFiles(c)
		a.sh = shell.New(shell.Config{FS: root, Tools: c.tools, Memory: c.mem, User: a.ident.User, RootInfo: c.rootInfo(a.id), RootFile: c.rootFile(a),
			Limits: shell.Limits{OutputBytes: c.lim.OutputBytes, CPUTime: c.lim.ExecCPUTime, MemoryBytes: c.lim.ExecMemoryBytes}})
	})
	if a.initErr != nil {
		c.release(a)
		return a.initErr
	}
	return nil
}

// release ends one use of a.
func (c *Controller) release(a *actor) {
	c.mu.Lock()
	a.refs--
	a.lastUsed = time.Now()
	c.mu.Unlock()
}

// writeRow stores sb as a's row, then as its cached copy. The copy keeps
// its exec counts: the store keeps them apart from the fields a row's
// update writes, and countExec may have counted an exec since sb was read.
func (c *Controller) writeRow(ctx context.Context, a *actor, sb store.Sandbox) error {
	if err := c.st.UpdateSandbox(ctx, sb); err != nil {
		return err
	}
	c.mu.Lock()
	sb.Execs = a.sb.Execs
	a.sb = sb
	c.mu.Unlock()
	return nil
}

// countExec counts an exec that ended in backend in a's cached row, as
// the store counted it in the row (EndExec).
func (c *Controller) countExec(a *actor, backend rung.Backend) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch backend {
	case rung.BackendIsolate:
		a.sb.Execs.Isolate++
	case rung.BackendContainer:
		a.sb.Execs.Container++
	}
}

// sandbox returns a's cached row.
func (c *Controller) sandbox(a *actor) store.Sandbox {
	c.mu.Lock()
	defer c.mu.Unlock()
	return a.sb
}

// do runs op on a's goroutine, after the operations queued before it,
// and returns its error. A full mailbox is ErrLimit.
func (c *Controller) do(ctx context.Context, a *actor, op func() error) error {
	done := make(chan error, 1) // op's reply; buffered so the actor never blocks on a gone caller
	select {
	case a.mbox <- func() { done <- op() }:
	default:
		return &rung.LimitError{Limit: "queued_operations", Max: int64(cap(a.mbox))}
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runActor is a's goroutine. It exits when a has been unused for
// IdleGrace (or was deleted) with an empty mailbox, or when the controller
// closes.
func (c *Controller) runActor(a *actor) {
	t := time.NewTimer(c.cfg.IdleGrace)
	defer t.Stop()
	defer func() {
		a.execCancel()
		a.execs.Wait()
		if a.root != nil {
			a.root.Close()
		}
	}()
	for {
		select {
		case op := <-a.mbox:
			op()
		case <-t.C:
			wait, done := c.retire(a)
			if done {
				return
			}
			t.Reset(wait)
		case <-c.ctx.Done():
			c.mu.Lock()
			if c.actors[a.id] == a { // a retired actor's successor may hold the id
				delete(c.actors, a.id)
			}
			c.mu.Unlock()
			for len(a.mbox) > 0 { // answer queued callers rather than strand them
				(<-a.mbox)()
			}
			return
		}
	}
}

// retire removes a from the active set if nobody has used it for
// IdleGrace; otherwise it says how long to wait before asking again.
func (c *Controller) retire(a *actor) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a.refs > 0 || len(a.mbox) > 0 {
		return c.cfg.IdleGrace, false
	}
	if idle := time.Since(a.lastUsed); !a.deleted && !a.retired && idle < c.cfg.IdleGrace {
		return c.cfg.IdleGrace - idle, false
	}
	if c.actors[a.id] == a { // a retired actor's successor may hold the id
		delete(c.actors, a.id)
	}
	return 0, true
}

// notFound turns a store lookup error into the caller's not-found error
// without saying whether the sandbox exists for another tenant.
func notFound(err error, ref string) error {
	if errors.Is(err, rung.ErrNotFound) {
		return rung.Errorf(rung.ErrNotFound, "sandbox %s not found", clip(ref))
	}
	return err
}

// clip shortens untrusted input for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
