// Package containers is the container tier as the controller uses it: it
// implements [controller.ContainerTier] over the OCI runtimes (package
// container), the image store and the in-container agent. It starts a
// sandbox's container on the first exec that needs one, runs execs and
// background processes through its agent, watches it and reports its
// lifecycle to the controller's [controller.ContainerEvents], keeps the
// warm pool, and adopts or reaps what an earlier daemon left.
package containers

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
	"rung.dev/rung/controller"
	"rung.dev/rung/image"
	"rung.dev/rung/storage"
)

// Config is what a [Tier] runs on.
type Config struct {
	Runc   *container.Manager // required
	GVisor *container.Manager // nil: isolation "gvisor" is unavailable
	Images *image.Store       // required
	Pool   *storage.Pool      // required
	// DefaultImage is started for sandboxes created without one;
	// default "lite".
	DefaultImage string
	// Network gives containers their network; nil: loopback only.
	Network Network
	Logger  *slog.Logger // nil discards
}

// Tier is the container tier: it starts a sandbox's container on the
// first exec that needs one (runc, or runsc for isolation "gvisor"), runs
// execs through its agent, and stops it on request. It is safe for
// concurrent use.
type Tier struct {
	cfg Config
	ev  controller.ContainerEvents // the controller's; fixed at New
	log *slog.Logger

	paths lookPaths // the images' PATH lookups, for the isolate tier's check
	// pinned caches the images of pinned references (name@sha256:…),
	// which never change, for the methods an exec calls (Tier.image).
	pinned pinnedImages

	mu sync.Mutex // guards the fields below
	// quiet is set by Detach and Close: the controller is going away,
	// and nothing more is reported to ev.Exited or ev.ProcessExited.
	quiet     bool
	starting  map[rung.SandboxID]*sync.Mutex         // one start at a time per sandbox
	stopping  map[rung.SandboxID]string              // why rung is stopping a container
	followers map[*container.Container]*processWatch // per watched container, until it exits
	watchers  sync.WaitGroup                         // one per started container, until it exits or Detach
	detach    chan struct{}                          // closed by Detach: watchers let go; made by watch
}

// processWatch is the followers of one container's background
// processes; its watcher waits for them before reporting the exit.
type processWatch struct {
	ctx    context.Context // canceled when the container exits
	cancel context.CancelFunc
	wg     sync.WaitGroup // followers; Add only under Tier.mu while listed
}

var _ controller.ContainerTier = (*Tier)(nil)

// New returns the tier over cfg, reporting to ev (a nil func: not
// reported). [controller.Config].Container calls it with the
// controller's events.
func New(cfg Config, ev controller.ContainerEvents) *Tier {
	t := &Tier{cfg: cfg, ev: ev, log: cfg.Logger}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	return t
}

// Config returns what the tier runs on.
func (t *Tier) Config() Config { return t.cfg }

func (t *Tier) manager(sb rung.Sandbox) (*container.Manager, error) {
	if sb.Isolation == rung.IsolationGVisor {
		if t.cfg.GVisor == nil {
			return nil, rung.Errorf(rung.ErrUnavailable, "isolation gvisor is not available on this server (runsc not installed)")
		}
		return t.cfg.GVisor, nil
	}
	return t.cfg.Runc, nil
}

// defaultImage is the image of sandboxes created without one.
func (t *Tier) defaultImage() string {
	if t.cfg.DefaultImage == "" {
		return "lite"
	}
	return t.cfg.DefaultImage
}

// ensure returns the sandbox's running container, starting it if needed.
func (t *Tier) ensure(ctx context.Context, sb rung.Sandbox) (*container.Container, error) {
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
	im, err := t.cfg.Images.Get(ref)
	if err != nil {
		return nil, fmt.Errorf("container image: %w", err)
	}
	netns, resolv, bundle, err := t.prepareNetwork(ctx, sb)
	if err != nil {
		return nil, fmt.Errorf("network of sandbox %s: %w", sb.ID, err)
	}
	ctr, err := m.Start(ctx, container.StartRequest{Sandbox: sb.ID, Subvolume: t.cfg.Pool.Path(string(sb.ID)), Image: im, Size: sb.Size,
		NetNS: netns, ResolvConf: resolv, CABundle: bundle})
	if err != nil {
		if t.cfg.Network != nil {
			t.cfg.Network.Stopped(sb.ID)
		}
		return nil, err
	}
	if t.cfg.Network != nil {
		t.cfg.Network.Started(sb.ID, ctr.InitPID())
	}
	if t.ev.Started != nil {
		t.ev.Started(ctx, sb, controller.ContainerStart{Image: ctr.Image.Ref(), Digest: ctr.Image.Digest, Runtime: m.RuntimeName(), Took: time.Since(ctr.Started)})
	}
	t.watch(sb.ID, ctr)
	return ctr, nil
}

// watch reports ctr's exit, deliberate or not, to ev.Exited. Every
// container that serves a sandbox has one watcher: ensure starts it for
// a cold start, a warm claim when it hands a spare to its sandbox.
func (t *Tier) watch(id rung.SandboxID, ctr *container.Container) {
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
		quiet := t.quiet
		t.mu.Unlock()
		if !deliberate {
			why = "the container's init exited"
		}
		if t.cfg.Network != nil {
			t.cfg.Network.Stopped(id)
		}
		if !quiet && t.ev.Exited != nil {
			t.ev.Exited(id, deliberate, why)
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
// [container.Container.ProcessExit], to ev.ProcessExited once it exits,
// then, while the container runs on, reports it used to ev.Used. Its
// goroutine ends at the exit or when the container exits, and the
// container's watcher waits for it. A container without a watcher is
// not followed.
func (t *Tier) follow(id rung.SandboxID, ctr *container.Container, info controller.ProcessInfo) {
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
		quiet := t.quiet
		t.mu.Unlock()
		if quiet || t.ev.ProcessExited == nil {
			return
		}
		t.ev.ProcessExited(id, info, *processExit(&e))
		t.mu.Lock()
		_, stopping := t.stopping[id]
		t.mu.Unlock()
		if !stopping && t.Running(id) && t.ev.Used != nil {
			t.ev.Used(id)
		}
	}()
}

// current returns the sandbox's live container, or nil.
func (t *Tier) current(id rung.SandboxID) *container.Container {
	if c := t.cfg.Runc.Get(id); c != nil {
		return c
	}
	if t.cfg.GVisor != nil {
		return t.cfg.GVisor.Get(id)
	}
	return nil
}

// Exec implements [controller.ContainerRunner].
func (t *Tier) Exec(ctx context.Context, sb rung.Sandbox, req controller.TierRequest) (controller.TierExit, error) {
	c, err := t.ensure(ctx, sb)
	if err != nil {
		return controller.TierExit{}, err
	}
	// A stdin of known length (the API's inline stdin) goes in the
	// request; any other (a WebSocket's) is streamed while the command
	// runs, so an interactive command answers before its stdin ends.
	var inline []byte
	stream := req.Stdin
	if br, ok := req.Stdin.(*bytes.Reader); ok {
		if inline, err = io.ReadAll(br); err != nil {
			return controller.TierExit{}, err
		}
		stream = nil
	}
	// The environment goes with every exec, never only at start: a warm
	// spare's container was started before its sandbox (and env) existed.
	areq := agent.ExecRequest{Command: req.Command, Env: execEnv(c.Image.Config.Env, req.Env), Dir: req.Dir,
		User: credential(req.User), Stdin: inline, MaxOutput: req.MaxOutput}
	if req.Login {
		// The image's shell as a login shell: it reads /etc/profile and
		// ~/.profile first.
		areq.Argv, areq.Command = []string{cmp.Or(c.Image.Config.Shell, "/bin/sh"), "-l", "-c", req.Command}, ""
	}
	if dl, ok := ctx.Deadline(); ok {
		areq.TimeoutMS = max(time.Until(dl).Milliseconds(), 1)
	}
	var werr error
	onFrame := func(f agent.Frame) {
		w := req.Stdout
		if f.Stream == "stderr" {
			w = req.Stderr
		}
		if w != nil && werr == nil {
			_, werr = w.Write(f.Data)
		}
	}
	var exit agent.Exit
	if req.PTY != nil {
		areq.PTY = agentSize(req.PTY)
		exit, err = c.ExecPTY(ctx, areq, termInput(ctx, req.Input), onFrame)
	} else {
		exit, err = c.ExecStream(ctx, areq, stream, onFrame)
	}
	if t.ev.Used != nil {
		t.ev.Used(sb.ID)
	}
	if err != nil {
		return controller.TierExit{}, err
	}
	if exit.Truncated {
		return controller.TierExit{Code: rung.ExitLimit, Reason: rung.ExitReasonOutputLimit}, controller.ErrOutputLimit
	}
	reason := rung.ExitReason(exit.Reason)
	if reason == rung.ExitReasonStartFailed && req.Stderr != nil {
		fmt.Fprintf(req.Stderr, "%s\n", exit.Error)
	}
	if reason == rung.ExitReasonOOM && req.Stderr != nil {
		fmt.Fprintf(req.Stderr, "rung: killed: out of memory (sandbox memory limit %d bytes)\n", sb.Size.MemoryBytes)
	}
	return controller.TierExit{Code: exit.Code, Reason: reason, Signal: exit.Signal}, nil
}

// termInput turns a PTY exec's input into the agent's messages, in order,
// until in closes or ctx ends; a size outside rung's bounds is dropped.
// It returns nil for a nil in.
func termInput(ctx context.Context, in <-chan controller.TermInput) <-chan agent.Input {
	if in == nil {
		return nil
	}
	out := make(chan agent.Input)
	go func() { // ends when in closes or ctx ends (the exec is over)
		defer close(out)
		for {
			var m controller.TermInput
			var ok bool
			select {
			case m, ok = <-in:
				if !ok {
					return
				}
			case <-ctx.Done():
				return
			}
			am := agent.Input{Data: m.Data}
			if r := m.Resize; r != nil && r.Check() == nil {
				am.Resize = &agent.TermSize{Cols: uint16(r.Cols), Rows: uint16(r.Rows)}
			}
			select {
			case out <- am:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// Stop implements [controller.ContainerRunner].
func (t *Tier) Stop(ctx context.Context, id rung.SandboxID, why string) error {
	t.mu.Lock()
	if t.stopping == nil {
		t.stopping = map[rung.SandboxID]string{}
	}
	if t.current(id) != nil {
		t.stopping[id] = why
	}
	t.mu.Unlock()
	err := t.cfg.Runc.Stop(ctx, id)
	if t.cfg.GVisor != nil {
		if gerr := t.cfg.GVisor.Stop(ctx, id); err == nil {
			err = gerr
		}
	}
	t.mu.Lock()
	delete(t.starting, id)
	t.mu.Unlock()
	return err
}

// Start implements [controller.ContainerRunner].
func (t *Tier) Start(ctx context.Context, sb rung.Sandbox) error {
	_, err := t.ensure(ctx, sb)
	return err
}

// Freeze implements [controller.ContainerRunner].
func (t *Tier) Freeze(ctx context.Context, id rung.SandboxID) (thaw func() error, err error) {
	ctr := t.current(id)
	if ctr == nil {
		return nil, nil
	}
	return ctr.Freeze(ctx)
}

// Running implements [controller.ContainerRunner].
func (t *Tier) Running(id rung.SandboxID) bool {
	if t.cfg.Runc.Get(id) != nil {
		return true
	}
	return t.cfg.GVisor != nil && t.cfg.GVisor.Get(id) != nil
}

// Adopt takes over the running containers an earlier daemon left for
// sbs (live restore, see container/adopt.go): each adopted container is
// watched like one started here, and its running background processes
// are followed again. It returns, for each adopted sandbox, its
// processes as the agent lists them (an exit that happened while no
// daemon ran is classified, OOM included), and for each one it could not
// adopt, why. Call [Tier.ReapStale] after it.
func (t *Tier) Adopt(ctx context.Context, sbs []rung.Sandbox) (map[rung.SandboxID][]controller.ProcessInfo, map[rung.SandboxID]error) {
	adopted := map[rung.SandboxID][]controller.ProcessInfo{}
	failed := map[rung.SandboxID]error{}
	byManager := map[*container.Manager][]container.StartRequest{}
	byID := map[rung.SandboxID]rung.Sandbox{}
	for _, sb := range sbs {
		byID[sb.ID] = sb
		m, err := t.manager(sb)
		if err != nil {
			failed[sb.ID] = err
			continue
		}
		ref := sb.Image
		if ref == "" {
			ref = t.defaultImage()
		}
		im, err := t.cfg.Images.Get(ref)
		if err != nil {
			failed[sb.ID] = fmt.Errorf("container image: %w", err)
			continue
		}
		byManager[m] = append(byManager[m], container.StartRequest{Sandbox: sb.ID, Subvolume: t.cfg.Pool.Path(string(sb.ID)), Image: im, Size: sb.Size})
	}
	for m, reqs := range byManager {
		ctrs, errs := m.Adopt(ctx, reqs)
		for id, err := range errs {
			failed[id] = err
		}
		for _, ctr := range ctrs {
			t.watch(ctr.Sandbox, ctr)
			if t.cfg.Network != nil {
				// Without its network the container keeps running: its
				// connections are refused at once (nothing serves its
				// redirected ports) until its next start.
				if err := t.cfg.Network.Adopted(ctx, byID[ctr.Sandbox], ctr.InitPID()); err != nil {
					t.log.Warn("network not restored for an adopted container", "sandbox", ctr.Sandbox, "err", err)
				}
			}
			procs, err := ctr.Agent().Processes(ctx)
			if err != nil {
				// Adopted, but its processes are unknown: its running
				// ones are not followed, and say so.
				failed[ctr.Sandbox] = fmt.Errorf("list processes: %w", err)
				m.Stop(context.WithoutCancel(ctx), ctr.Sandbox)
				continue
			}
			infos := make([]controller.ProcessInfo, len(procs))
			for i, p := range procs {
				if p.Exit != nil && !p.Running {
					e := ctr.ProcessExit(p.ID, *p.Exit)
					p.Exit = &e
				}
				infos[i] = processInfo(p)
				if p.Running {
					t.follow(ctr.Sandbox, ctr, infos[i])
				}
			}
			adopted[ctr.Sandbox] = infos
		}
	}
	return adopted, failed
}

// ReapStale removes what an earlier daemon left that was not adopted,
// except the containers of the sandboxes keep reports (nil: none):
// containers, mounts, state, cgroups (see [container.Manager.ReapStale]).
// It returns the sandboxes whose containers it removed.
func (t *Tier) ReapStale(ctx context.Context, keep func(rung.SandboxID) bool) ([]rung.SandboxID, error) {
	reaped, err := t.cfg.Runc.ReapStaleExcept(ctx, keep)
	if t.cfg.GVisor != nil {
		more, gerr := t.cfg.GVisor.ReapStaleExcept(ctx, keep)
		reaped = append(reaped, more...)
		err = errors.Join(err, gerr)
	}
	return reaped, err
}

// Detach lets go of every container without stopping it, for a daemon
// that stops and leaves them to the next one (live restore): watchers and
// followers end, nothing is reported, and the next daemon adopts the
// containers. Warm spares are destroyed before, when the controller
// closes (see [controller.Spares].Run).
func (t *Tier) Detach() {
	t.mu.Lock()
	t.quiet = true
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
	t.cfg.Runc.Detach()
	if t.cfg.GVisor != nil {
		t.cfg.GVisor.Detach()
	}
}

// StopAll stops every running container side by side, for a daemon that
// stops without live restore, while the controller still journals: each
// one's processes get their process.exited and the container its
// container.stopped with reason why, and its sandbox becomes ready. It
// returns when every watcher has.
func (t *Tier) StopAll(ctx context.Context, why string) error {
	ids := t.cfg.Runc.Sandboxes()
	if t.cfg.GVisor != nil {
		ids = append(ids, t.cfg.GVisor.Sandboxes()...)
	}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { errs[i] = t.Stop(ctx, id, why) })
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
func (t *Tier) Close(ctx context.Context) error {
	t.mu.Lock()
	t.quiet = true // the controller is going away; nothing to record
	t.mu.Unlock()
	err := t.cfg.Runc.Close(ctx)
	if t.cfg.GVisor != nil {
		if gerr := t.cfg.GVisor.Close(ctx); err == nil {
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
