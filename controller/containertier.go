package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
	"rung.dev/rung/image"
	"rung.dev/rung/storage"
)

// Containers is the container tier as the controller uses it: it starts
// a sandbox's container on the first exec that needs one (runc, or runsc
// for isolation "gvisor"), runs execs through its agent, and stops it on
// request. It is safe for concurrent use.
type Containers struct {
	Runc   *container.Manager // required
	GVisor *container.Manager // nil: isolation "gvisor" is unavailable
	Images *image.Store       // required
	Pool   *storage.Pool      // required
	// DefaultImage is started for sandboxes created without one;
	// default "lite".
	DefaultImage string

	// onStart and onUse are set once by the controller before use.
	onStart func(rung.Sandbox, *container.Container)
	onUse   func(rung.SandboxID) // after each exec: re-arms the idle alarm

	paths lookPaths // the images' PATH lookups, for the isolate tier's check

	mu     sync.Mutex // guards the fields below
	onExit func(id rung.SandboxID, deliberate bool, why string)
	// onProcessExit receives each followed background process's exit,
	// once, before its container's onExit.
	onProcessExit func(id rung.SandboxID, info agent.ProcessInfo, exit agent.Exit)
	starting      map[rung.SandboxID]*sync.Mutex         // one start at a time per sandbox
	stopping      map[rung.SandboxID]string              // why rung is stopping a container
	followers     map[*container.Container]*processWatch // per watched container, until it exits
	watchers      sync.WaitGroup                         // one per started container, until it exits or Detach
	detach        chan struct{}                          // closed by Detach: watchers let go; made by watch
}

// processWatch is the followers of one container's background
// processes; its watcher waits for them before reporting the exit.
type processWatch struct {
	ctx    context.Context // canceled when the container exits
	cancel context.CancelFunc
	wg     sync.WaitGroup // followers; Add only under Containers.mu while listed
}

var _ ContainerTier = (*Containers)(nil)

func (t *Containers) manager(sb rung.Sandbox) (*container.Manager, error) {
	if sb.Isolation == rung.IsolationGVisor {
		if t.GVisor == nil {
			return nil, rung.Errorf(rung.ErrUnavailable, "isolation gvisor is not available on this server (runsc not installed)")
		}
		return t.GVisor, nil
	}
	return t.Runc, nil
}

// defaultImage is the image of sandboxes created without one.
func (t *Containers) defaultImage() string {
	if t.DefaultImage == "" {
		return "lite"
	}
	return t.DefaultImage
}

// ensure returns the sandbox's running container, starting it if needed.
func (t *Containers) ensure(ctx context.Context, sb rung.Sandbox) (*container.Container, error) {
	m, err := t.manager(sb)
	if err != nil {
		return nil, err
	}
	if c := m.Get(sb.ID); c != nil {
		return c, nil
	}
	t.mu.Lock()
	if t.starting == nil {
		t.starting = map[rung.SandboxID]*sync.Mutex{}
	}
	lock := t.starting[sb.ID]
	if lock == nil {
		lock = &sync.Mutex{}
		t.starting[sb.ID] = lock
	}
	t.mu.Unlock()
	lock.Lock()
	defer lock.Unlock()
	if c := m.Get(sb.ID); c != nil {
		return c, nil
	}
	// A container that died (crash, OOM under gVisor) is cleaned up
	// before the restart.
	m.Stop(context.WithoutCancel(ctx), sb.ID)
	ref := sb.Image
	if ref == "" {
		ref = t.defaultImage()
	}
	im, err := t.Images.Get(ref)
	if err != nil {
		return nil, fmt.Errorf("container image: %w", err)
	}
	ctr, err := m.Start(ctx, container.StartRequest{Sandbox: sb.ID, Subvolume: t.Pool.Path(string(sb.ID)), Image: im, Size: sb.Size})
	if err != nil {
		return nil, err
	}
	if t.onStart != nil {
		t.onStart(sb, ctr)
	}
	t.watch(sb.ID, ctr)
	return ctr, nil
}

// watch reports ctr's exit, deliberate or not, to onExit. Every
// container that serves a sandbox has one watcher: ensure starts it for
// a cold start, a warm claim when it hands a spare to its sandbox.
func (t *Containers) watch(id rung.SandboxID, ctr *container.Container) {
	pw := &processWatch{}
	pw.ctx, pw.cancel = context.WithCancel(context.Background())
	t.mu.Lock()
	if t.followers == nil {
		t.followers = map[*container.Container]*processWatch{}
	}
	if t.detach == nil {
		t.detach = make(chan struct{})
	}
	detach := t.detach
	t.followers[ctr] = pw
	t.mu.Unlock()
	t.watchers.Go(func() { // ends when the container exits, deliberately or not, and its followers have; or at Detach
		select {
		case <-ctr.Done():
		case <-detach:
			// Live restore: the container runs on for the next daemon,
			// which follows its processes again.
			pw.cancel()
			pw.wg.Wait()
			return
		}
		t.mu.Lock()
		delete(t.followers, ctr) // no follower joins once unlisted
		t.mu.Unlock()
		// Process exits go to the journal before the container's. The
		// agent sends every exit before it exits, so the followers' streams
		// hold them and then end: let them read to the end rather than
		// cancel them now (a follower not yet scheduled when the init
		// died lost its process's exit under load). The bound only covers
		// a stream that never ends.
		followed := make(chan struct{})
		go func() { pw.wg.Wait(); close(followed) }() // ends when the followers have
		select {
		case <-followed:
		case <-time.After(followerDrain):
			pw.cancel()
			<-followed
		}
		pw.cancel()
		t.mu.Lock()
		why, deliberate := t.stopping[id]
		delete(t.stopping, id)
		onExit := t.onExit
		t.mu.Unlock()
		if !deliberate {
			why = "the container's init exited"
		}
		if onExit != nil {
			onExit(id, deliberate, why)
		}
	})
}

// followerDrain bounds how long a container's watcher waits, after the
// container's init exited, for its followers to read the exits already
// sent to them.
const followerDrain = 5 * time.Second

// followFrom is the output sequence number a follower asks for frames
// after: beyond any real one, so it is sent only the exit.
const followFrom = 1 << 62

// follow reports background process info's exit, classified by
// [container.Container.ProcessExit], to onProcessExit once it exits. Its
// goroutine ends at the exit or when the container exits, and the
// container's watcher waits for it. A container without a watcher is
// not followed.
func (t *Containers) follow(id rung.SandboxID, ctr *container.Container, info agent.ProcessInfo) {
	t.mu.Lock()
	pw := t.followers[ctr]
	if pw != nil {
		pw.wg.Add(1)
	}
	t.mu.Unlock()
	if pw == nil {
		return
	}
	go func() { // ends when the process or the container exits; the watcher waits for it
		defer pw.wg.Done()
		exit, err := ctr.Agent().Output(pw.ctx, info.ID, followFrom, true, func(agent.Frame) {})
		if err != nil || exit == nil {
			return // the container went first: its own exit is journaled
		}
		e := ctr.ProcessExit(info.ID, *exit)
		t.mu.Lock()
		fn := t.onProcessExit
		t.mu.Unlock()
		if fn != nil {
			fn(id, info, e)
		}
	}()
}

// current returns the sandbox's live container, or nil.
func (t *Containers) current(id rung.SandboxID) *container.Container {
	if c := t.Runc.Get(id); c != nil {
		return c
	}
	if t.GVisor != nil {
		return t.GVisor.Get(id)
	}
	return nil
}

// Exec implements [ContainerTier].
func (t *Containers) Exec(ctx context.Context, sb rung.Sandbox, req TierRequest) (TierExit, error) {
	c, err := t.ensure(ctx, sb)
	if err != nil {
		return TierExit{}, err
	}
	// A stdin of known length (the API's inline stdin) goes in the
	// request; any other (a WebSocket's) is streamed while the command
	// runs, so an interactive command answers before its stdin ends.
	var inline []byte
	stream := req.Stdin
	if br, ok := req.Stdin.(*bytes.Reader); ok {
		if inline, err = io.ReadAll(br); err != nil {
			return TierExit{}, err
		}
		stream = nil
	}
	// The environment goes with every exec, never only at start: a warm
	// spare's container was started before its sandbox (and env) existed.
	areq := agent.ExecRequest{Command: req.Command, Env: execEnv(c.Image.Config.Env, req.Env), Dir: req.Dir,
		User: req.User.credential(), Stdin: inline, MaxOutput: req.MaxOutput}
	if dl, ok := ctx.Deadline(); ok {
		areq.TimeoutMS = max(time.Until(dl).Milliseconds(), 1)
	}
	var werr error
	exit, err := c.ExecStream(ctx, areq, stream, func(f agent.Frame) {
		w := req.Stdout
		if f.Stream == "stderr" {
			w = req.Stderr
		}
		if w != nil && werr == nil {
			_, werr = w.Write(f.Data)
		}
	})
	if t.onUse != nil {
		t.onUse(sb.ID)
	}
	if err != nil {
		return TierExit{}, err
	}
	if exit.Truncated {
		return TierExit{Code: rung.ExitLimit, Reason: rung.ExitReasonOutputLimit}, errOutputLimit
	}
	reason := rung.ExitReason(exit.Reason)
	if reason == rung.ExitReasonStartFailed && req.Stderr != nil {
		fmt.Fprintf(req.Stderr, "%s\n", exit.Error)
	}
	if reason == rung.ExitReasonOOM && req.Stderr != nil {
		fmt.Fprintf(req.Stderr, "rung: killed: out of memory (sandbox memory limit %d bytes)\n", sb.Size.MemoryBytes)
	}
	return TierExit{Code: exit.Code, Reason: reason, Signal: exit.Signal}, nil
}

// Stop stops the sandbox's container if it has one; its files stay.
func (t *Containers) Stop(ctx context.Context, id rung.SandboxID) error {
	return t.stop(ctx, id, "stopped")
}

func (t *Containers) stop(ctx context.Context, id rung.SandboxID, why string) error {
	t.mu.Lock()
	if t.stopping == nil {
		t.stopping = map[rung.SandboxID]string{}
	}
	if t.current(id) != nil {
		t.stopping[id] = why
	}
	t.mu.Unlock()
	err := t.Runc.Stop(ctx, id)
	if t.GVisor != nil {
		if gerr := t.GVisor.Stop(ctx, id); err == nil {
			err = gerr
		}
	}
	t.mu.Lock()
	delete(t.starting, id)
	t.mu.Unlock()
	return err
}

// Running reports whether the sandbox has a live container.
func (t *Containers) Running(id rung.SandboxID) bool {
	if t.Runc.Get(id) != nil {
		return true
	}
	return t.GVisor != nil && t.GVisor.Get(id) != nil
}

// Adopt takes over the running containers an earlier daemon left for
// sbs (live restore, see container/adopt.go): each adopted container is
// watched like one started here, and its running background processes
// are followed again. It returns, for each adopted sandbox, its
// processes as the agent lists them (an exit that happened while no
// daemon ran is classified, OOM included), and for each one it could not
// adopt, why. Call [Containers.ReapStale] after it.
func (t *Containers) Adopt(ctx context.Context, sbs []rung.Sandbox) (map[rung.SandboxID][]agent.ProcessInfo, map[rung.SandboxID]error) {
	adopted := map[rung.SandboxID][]agent.ProcessInfo{}
	failed := map[rung.SandboxID]error{}
	byManager := map[*container.Manager][]container.StartRequest{}
	for _, sb := range sbs {
		m, err := t.manager(sb)
		if err != nil {
			failed[sb.ID] = err
			continue
		}
		ref := sb.Image
		if ref == "" {
			ref = t.defaultImage()
		}
		im, err := t.Images.Get(ref)
		if err != nil {
			failed[sb.ID] = fmt.Errorf("container image: %w", err)
			continue
		}
		byManager[m] = append(byManager[m], container.StartRequest{Sandbox: sb.ID, Subvolume: t.Pool.Path(string(sb.ID)), Image: im, Size: sb.Size})
	}
	for m, reqs := range byManager {
		ctrs, errs := m.Adopt(ctx, reqs)
		for id, err := range errs {
			failed[id] = err
		}
		for _, ctr := range ctrs {
			t.watch(ctr.Sandbox, ctr)
			procs, err := ctr.Agent().Processes(ctx)
			if err != nil {
				// Adopted, but its processes are unknown: its running
				// ones are not followed, and say so.
				failed[ctr.Sandbox] = fmt.Errorf("list processes: %w", err)
				m.Stop(context.WithoutCancel(ctx), ctr.Sandbox)
				continue
			}
			for i, p := range procs {
				if p.Running {
					t.follow(ctr.Sandbox, ctr, p)
				} else if p.Exit != nil {
					e := ctr.ProcessExit(p.ID, *p.Exit)
					procs[i].Exit = &e
				}
			}
			adopted[ctr.Sandbox] = procs
		}
	}
	return adopted, failed
}

// ReapStale removes what an earlier daemon left that was not adopted,
// except the containers of the sandboxes keep reports (nil: none):
// containers, mounts, state, cgroups (see [container.Manager.ReapStale]).
// It returns the sandboxes whose containers it removed.
func (t *Containers) ReapStale(ctx context.Context, keep func(rung.SandboxID) bool) ([]rung.SandboxID, error) {
	reaped, err := t.Runc.ReapStaleExcept(ctx, keep)
	if t.GVisor != nil {
		more, gerr := t.GVisor.ReapStaleExcept(ctx, keep)
		reaped = append(reaped, more...)
		err = errors.Join(err, gerr)
	}
	return reaped, err
}

// Detach lets go of every container without stopping it, for a daemon
// that stops and leaves them to the next one (live restore): watchers and
// followers end, nothing is journaled, and the next daemon adopts the
// containers. Warm spares are the controller's to destroy before.
func (t *Containers) Detach() {
	t.mu.Lock()
	t.onExit = nil
	t.onProcessExit = nil
	if t.detach == nil {
		t.detach = make(chan struct{})
	}
	select {
	case <-t.detach:
	default:
		close(t.detach)
	}
	t.mu.Unlock()
	t.watchers.Wait()
	t.Runc.Detach()
	if t.GVisor != nil {
		t.GVisor.Detach()
	}
}

// StopAll stops every running container side by side, for a daemon that
// stops without live restore, while the controller still journals: each
// one's processes get their process.exited and the container its
// container.stopped with reason why, and its sandbox becomes ready. It
// returns when every watcher has.
func (t *Containers) StopAll(ctx context.Context, why string) error {
	ids := t.Runc.Sandboxes()
	if t.GVisor != nil {
		ids = append(ids, t.GVisor.Sandboxes()...)
	}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { errs[i] = t.stop(ctx, id, why) })
	}
	wg.Wait()
	// A container an exec still in flight started after the listing
	// keeps its watcher: ctx bounds the wait for it.
	watched := make(chan struct{})
	go func() { t.watchers.Wait(); close(watched) }() // ends with the last watcher
	select {
	case <-watched:
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// Close stops every container and waits for their watchers.
func (t *Containers) Close(ctx context.Context) error {
	t.mu.Lock()
	t.onExit = nil // the controller is going away; nothing to record
	t.onProcessExit = nil
	t.mu.Unlock()
	err := t.Runc.Close(ctx)
	if t.GVisor != nil {
		if gerr := t.GVisor.Close(ctx); err == nil {
			err = gerr
		}
	}
	t.watchers.Wait()
	return err
}

// execEnv is base ("NAME=value" entries, the image's environment)
// overlaid with extra (the sandbox's and the request's variables), one
// entry per name: a sandbox's PATH replaces the image's rather than
// sitting beside it, where which one wins would be up to the program.
func execEnv(base []string, extra map[string]string) []string {
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := extra[name]; !ok {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}
