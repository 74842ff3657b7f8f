package container

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/image"
)

// Config configures a [Manager].
type Config struct {
	// StateDir holds one directory per container (bundle, rootfs mount
	// point, agent socket) and the runtime's state. Required.
	StateDir string
	Runtime  Runtime      // Root defaults to StateDir/runtime
	Images   *image.Store // required
	// AgentBinary is a static rung binary (CGO_ENABLED=0) to run as
	// each container's PID 1. Required.
	AgentBinary string
	// StopGrace is how long [Manager.Stop] gives a container's commands
	// to exit after SIGTERM before it kills them; default 5 s. The agent
	// cuts a grace above [agent.DefaultGrace] short.
	StopGrace time.Duration
	Logger    *slog.Logger // nil discards
}

// DefaultStopGrace is [Config.StopGrace]'s default, half of `docker
// stop`'s 10 s: most programs exit within milliseconds of a SIGTERM, and
// a delete or an idle stop should not wait long for the rest.
const DefaultStopGrace = 5 * time.Second

// Manager starts, tracks and stops one container per sandbox. It is safe
// for concurrent use.
type Manager struct {
	cfg      Config
	log      *slog.Logger
	agentDir string // host directory holding the agent binary copy (a tmpfs: mounts.go)
	// bootIDDir holds each container's boot id file, named by its
	// sandbox (a tmpfs: mounts.go).
	bootIDDir string
	// bootIDs: each start gets a boot id of its own (writeBootID). Under
	// runc that takes mountBin, the host's mount(8), which makes the mount
	// in a hook (bootIDMount); crun and runsc take a mount of the spec.
	bootIDs  bool
	mountBin string

	primer cgroupPrimer

	agentMu    sync.Mutex // guards agentReady, bootIDReady and their directories' mounts
	agentReady bool       // the agent binary is copied and its tmpfs mounted
	// bootIDReady: bootIDDir's tmpfs is mounted.
	bootIDReady bool

	mu         sync.Mutex                       // guards the fields below
	containers map[rung.SandboxID]*Container    // running containers
	stopping   map[rung.SandboxID]chan struct{} // closed when the sandbox's Stop is done
}

// Container is one running container and the agent inside it.
type Container struct {
	Sandbox rung.SandboxID
	Image   image.Image
	Started time.Time

	dir    string
	rootfs string
	agent  *agent.Client
	pid    int
	done   chan struct{} // closed when the container's init has exited
	cgroup string        // memory cgroup directory, for OOM accounting
	procs  processOOM    // background processes' OOM accounting (exec.go)
}

// InitPID is the host pid of the container's init (the agent).
func (c *Container) InitPID() int { return c.pid }

// Done is closed when the container's init process exits, whatever the
// cause; the manager learns it from a pidfd, not by polling.
func (c *Container) Done() <-chan struct{} { return c.done }

// NewManager prepares the state directory; the agent binary is copied
// onto a tmpfs there at the first start. It does not touch containers left
// by an earlier process; call [Manager.ReapStale] for that.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.StateDir == "" || cfg.Images == nil || cfg.AgentBinary == "" {
		return nil, errors.New("container manager: StateDir, Images and AgentBinary are required")
	}
	if cfg.Runtime.Root == "" {
		cfg.Runtime.Root = filepath.Join(cfg.StateDir, "runtime")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	agentDir := filepath.Join(cfg.StateDir, "agent-bin")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		return nil, fmt.Errorf("container manager: %w", err)
	}
	if _, err := os.Stat(cfg.AgentBinary); err != nil {
		return nil, fmt.Errorf("container manager: agent binary: %w", err)
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	mountBin := ""
	if cfg.Runtime.Name == "runc" {
		if mountBin, _ = exec.LookPath("mount"); mountBin == "" {
			log.Warn("no mount(8) on the host: containers will show the host's boot id, not one of their own", "runtime", cfg.Runtime.Name)
		}
	}
	return &Manager{cfg: cfg, log: log, agentDir: agentDir, bootIDDir: filepath.Join(cfg.StateDir, "boot-id"),
		bootIDs: cfg.Runtime.Name != "runc" || mountBin != "", mountBin: mountBin,
		containers: map[rung.SandboxID]*Container{}, stopping: map[rung.SandboxID]chan struct{}{}}, nil
}

// RuntimeName is the OCI runtime's name: "runc", "crun" or "runsc".
func (m *Manager) RuntimeName() string { return m.cfg.Runtime.Name }

// RuntimeRoot is the OCI runtime's state directory (its --root).
func (m *Manager) RuntimeRoot() string { return m.cfg.Runtime.Root }

// StartRequest says what to start.
type StartRequest struct {
	Sandbox rung.SandboxID
	// Subvolume is the host path of the sandbox's subvolume (fs/workspace,
	// fs/tmp, rootfs/upper, rootfs/work inside it).
	Subvolume string
	Image     image.Image
	Size      rung.Size
	// NetNS is the path of a network namespace the caller prepared for
	// the container to join (network.Link.NetNS); "" gives it a new one
	// with loopback only. Under runsc the namespace must have its
	// interfaces before the start: gVisor takes them over as it boots
	// (see Runtime.networked).
	NetNS string
	// ResolvConf, when set, is the host path of the file bind-mounted
	// read-only at the container's /etc/resolv.conf. The caller keeps it
	// while the container runs and may rewrite it in place (not replace
	// it: the mount holds the file it was given) when the container's
	// network changes.
	ResolvConf string
	// CABundle, when set, is the container's system certificate store
	// (CABundlePath), bind-mounted read-only: the egress proxy's
	// certificate authority for this sandbox among the host's.
	CABundle []byte
}

// Get returns the sandbox's running container, or nil.
func (m *Manager) Get(id rung.SandboxID) *Container {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.containers[id]
	if c != nil {
		select {
		case <-c.done:
			return nil
		default:
		}
	}
	return c
}

// Start starts the sandbox's container and waits until its agent serves.
// Starting a sandbox that already has a live container is
// rung.ErrConflict; one whose container is stopping waits for the stop.
// On failure nothing is left behind.
func (m *Manager) Start(ctx context.Context, req StartRequest) (_ *Container, err error) {
	if !req.Sandbox.Valid() {
		return nil, rung.Errorf(rung.ErrInvalid, "invalid sandbox id %q", req.Sandbox)
	}
	if err := m.waitStopped(ctx, req.Sandbox); err != nil {
		return nil, err
	}
	if m.Get(req.Sandbox) != nil {
		return nil, rung.Errorf(rung.ErrConflict, "sandbox %s already has a running container", req.Sandbox)
	}
	m.primer.prime() // the runtime's cgroup writes come in a few ms
	dir := filepath.Join(m.cfg.StateDir, string(req.Sandbox))
	c := &Container{
		Sandbox: req.Sandbox, Image: req.Image, Started: time.Now(),
		dir: dir, rootfs: filepath.Join(dir, "rootfs"), done: make(chan struct{}),
	}
	defer func() {
		if err != nil {
			m.teardown(context.WithoutCancel(ctx), c)
		}
	}()
	runDir := filepath.Join(dir, "run")
	for _, d := range []string{c.rootfs, runDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("start container %s: %w", req.Sandbox, err)
		}
	}
	if err := checkBindSources(req.Subvolume); err != nil {
		return nil, fmt.Errorf("start container %s: %w", req.Sandbox, err)
	}
	if err := m.prepareAgentDir(); err != nil {
		return nil, fmt.Errorf("start container %s: %w", req.Sandbox, err)
	}
	if err := m.mountRootfs(req, c); err != nil {
		return nil, fmt.Errorf("start container %s: %w", req.Sandbox, err)
	}
	var listener *os.File // the agent's socket, made here when the runtime can pass it in
	if m.cfg.Runtime.passesFDs() {
		if listener, err = listenAgent(runDir); err != nil {
			return nil, fmt.Errorf("start container %s: %w", req.Sandbox, err)
		}
		// The runtime's child holds its own copy once run returns.
		defer listener.Close()
	} else if err := mountRunDir(runDir); err != nil {
		return nil, fmt.Errorf("start container %s: %w", req.Sandbox, err)
	}
	// Pinned now (runc, crun: the socket exists) or at the first answer
	// (runsc), before any command can run: see agent.Client.
	c.agent = agent.NewClient(runDir)
	env := req.Image.Config.Env
	if len(env) == 0 {
		env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	if req.CABundle != nil {
		if err := os.WriteFile(filepath.Join(dir, "ca-bundle.crt"), req.CABundle, 0o644); err != nil {
			return nil, fmt.Errorf("start container %s: %w", req.Sandbox, err)
		}
	}
	if err := m.writeBootID(req.Sandbox); err != nil {
		return nil, fmt.Errorf("start container %s: %w", req.Sandbox, err)
	}
	if err := writeSpec(dir, m.bundleSpec(req, dir, env, listener != nil)); err != nil {
		return nil, fmt.Errorf("start container %s: %w", req.Sandbox, err)
	}
	pidFile := filepath.Join(dir, "pid")
	rt := m.cfg.Runtime
	if req.NetNS != "" {
		rt = rt.networked()
	}
	if err := rt.run(ctx, string(req.Sandbox), dir, pidFile, filepath.Join(dir, "runtime.log"), listener); err != nil {
		return nil, rung.Errorf(rung.ErrUnavailable, "start container for %s: %v", req.Sandbox, err)
	}
	if listener != nil {
		listener.Close() // now only the agent listens: if it dies, clients see it at once
	}
	pidb, err := os.ReadFile(pidFile)
	if err != nil {
		return nil, fmt.Errorf("start container %s: %w", req.Sandbox, err)
	}
	c.pid, _ = strconv.Atoi(strings.TrimSpace(string(pidb)))
	if err := m.watch(c); err != nil {
		return nil, fmt.Errorf("start container %s: %w", req.Sandbox, err)
	}
	c.cgroup = filepath.Join("/sys/fs/cgroup/memory/rung", string(req.Sandbox))
	if err := waitAgent(ctx, c, runDir, listener == nil); err != nil {
		// The agent's stderr goes to the runtime's log: say why it died.
		if msg, _ := os.ReadFile(filepath.Join(dir, "runtime.log")); len(bytes.TrimSpace(msg)) > 0 {
			err = fmt.Errorf("%w: %s", err, lastLine(msg))
		}
		return nil, fmt.Errorf("start container %s: %w", req.Sandbox, err)
	}
	if err := limitCPU(req.Sandbox, cpuLimits(req.Size)); err != nil {
		return nil, fmt.Errorf("start container %s: %w", req.Sandbox, err)
	}
	m.mu.Lock()
	m.containers[req.Sandbox] = c
	m.mu.Unlock()
	m.log.Info("container started", "sandbox", req.Sandbox, "image", req.Image.Ref(), "runtime", m.cfg.Runtime.Name)
	return c, nil
}

// bundleSpec is the OCI spec of req's container, whose bundle is dir:
// the overlay mounted at dir/rootfs, the agent's socket in dir/run. With
// passedListener the agent serves the listening socket it inherits as
// descriptor 3 instead of making its own.
func (m *Manager) bundleSpec(req StartRequest, dir string, env []string, passedListener bool) *specs.Spec {
	in := specInput{
		ID: req.Sandbox, Rootfs: filepath.Join(dir, "rootfs"), Env: env, Size: req.Size, Hostname: "rung",
		Workspace: filepath.Join(req.Subvolume, "fs", "workspace"),
		Tmp:       filepath.Join(req.Subvolume, "fs", "tmp"),
		AgentBin:  m.agentDir, RunDir: filepath.Join(dir, "run"),
		PassedListener: passedListener,
		NetNS:          req.NetNS,
		ResolvConf:     req.ResolvConf,
	}
	if req.CABundle != nil {
		in.CABundle = filepath.Join(dir, "ca-bundle.crt")
	}
	if m.bootIDs {
		in.BootID, in.MountBin = m.bootIDFile(req.Sandbox), m.mountBin
	}
	if m.cfg.Runtime.SeccompBPF {
		// A profile the compiler cannot express (a test catches that)
		// goes in the spec for the runtime to compile.
		in.SeccompBPF, _ = defaultSeccompBPF()
	}
	return buildSpec(in)
}

// writeBootID gives sandbox's container start a fresh boot id, in the
// boot id tmpfs (mounts.go), read-only; nothing without m.bootIDs.
func (m *Manager) writeBootID(sandbox rung.SandboxID) error {
	if !m.bootIDs {
		return nil
	}
	if err := m.prepareBootIDDir(); err != nil {
		return err
	}
	f := m.bootIDFile(sandbox)
	os.Remove(f) // an earlier start's, which a crash left
	if err := os.WriteFile(f, newBootID(), 0o444); err != nil {
		return fmt.Errorf("boot id: %w", err)
	}
	return nil
}

// bootIDFile is the host path of sandbox's boot id file.
func (m *Manager) bootIDFile(sandbox rung.SandboxID) string {
	return filepath.Join(m.bootIDDir, string(sandbox))
}

// newBootID is a fresh boot id as the kernel prints one: a random
// (version 4) UUID in lower case, and a newline.
func newBootID() []byte {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Appendf(nil, "%x-%x-%x-%x-%x\n", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// writeSpec writes spec as the bundle dir's config.json.
func writeSpec(dir string, spec *specs.Spec) error {
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600)
}

// alreadyGone says whether a runtime's delete failed only because the
// container's state is already gone (runc: "does not exist"; crun: its
// state directory missing).
func alreadyGone(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "not exist") || strings.Contains(msg, "No such file or directory")
}

// listenAgent makes the agent's listening socket in runDir and returns
// it as a file to pass to the runtime (the agent inherits it: see
// bundleSpec). Closing the manager's copies leaves the socket in place.
func listenAgent(runDir string) (*os.File, error) {
	ln, err := agent.Listen(runDir)
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false) // the agent's copy serves on at this path
	defer ln.Close()
	return ln.File()
}

// watch closes c.done when the container's init exits (pidfd readable).
func (m *Manager) watch(c *Container) error {
	fd, err := unix.PidfdOpen(c.pid, 0)
	if err != nil {
		return fmt.Errorf("pidfd_open: %w", err)
	}
	go func() { // ends when the process exits; closes fd
		defer unix.Close(fd)
		defer close(c.done)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != unix.EINTR {
				return
			}
		}
	}()
	return nil
}

// waitAgent waits until c's agent answers on its socket in runDir. The
// agent starts 3-5 ms after the runtime returns (Go's start-up of a large
// binary). When the manager made the socket, the first request waits in
// its backlog and is answered as soon as the agent serves. Otherwise (the
// agent makes it: runsc) an inotify watch on runDir wakes the wait when
// the socket appears, so the first answer is seen at once without polling
// the agent while it starts on a shared CPU. The watch only shortens
// waits: without it (inotify unavailable) the loop still polls with
// backoff. agentMakesSocket says which case this is.
func waitAgent(ctx context.Context, c *Container, runDir string, agentMakesSocket bool) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	watch := -1 // a socket the manager made exists already: no event would come
	if agentMakesSocket {
		watch = watchCreate(runDir)
	}
	if watch >= 0 {
		// Closing an inotify descriptor waits for an SRCU grace period
		// (15-20 ms measured here): do it off the start's path.
		defer func() { go unix.Close(watch) }()
	}
	delay := time.Millisecond
	for {
		if err := c.agent.Health(ctx); err == nil {
			return nil
		}
		select {
		case <-c.done:
			return errors.New("container exited before its agent served")
		case <-ctx.Done():
			return fmt.Errorf("agent did not answer: %w", ctx.Err())
		default:
		}
		if watch < 0 {
			time.Sleep(delay)
		} else if waitReadable(watch, delay) {
			// Created: the agent listens right after it binds.
			drainEvents(watch)
			delay = 100 * time.Microsecond
			continue
		}
		delay = min(max(delay*2, time.Millisecond), 20*time.Millisecond)
	}
}

// watchCreate returns a non-blocking inotify descriptor that becomes
// readable when something is created in dir, or -1 when inotify is
// unavailable.
func watchCreate(dir string) int {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return -1
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		go unix.Close(fd) // off the start's path, as in waitAgent
		return -1
	}
	return fd
}

// waitReadable reports whether fd became readable within d.
func waitReadable(fd int, d time.Duration) bool {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Ppoll(fds, &ts, nil)
	return err == nil && n > 0
}

// drainEvents empties the non-blocking inotify descriptor fd, so the
// next wait blocks until a new event.
func drainEvents(fd int) {
	var buf [4096]byte
	for {
		if n, err := unix.Read(fd, buf[:]); n <= 0 || err != nil {
			return
		}
	}
}

// Stop stops and removes the sandbox's container; its files stay in the
// subvolume. Its commands get a SIGTERM (the agent, its init, forwards it
// to each one's process group) and up to [Config.StopGrace] to exit,
// then whatever is left is killed. Stopping a sandbox with no container
// is a no-op.
func (m *Manager) Stop(ctx context.Context, id rung.SandboxID) error {
	m.mu.Lock()
	c := m.containers[id]
	delete(m.containers, id)
	var stopped chan struct{}
	if c != nil {
		stopped = make(chan struct{})
		m.stopping[id] = stopped
	}
	m.mu.Unlock()
	if c == nil {
		return nil
	}
	defer func() {
		m.mu.Lock()
		delete(m.stopping, id)
		m.mu.Unlock()
		close(stopped)
	}()
	m.terminate(ctx, c)
	return m.teardown(ctx, c)
}

// killWait bounds the wait for a container's init after the second
// signal: the agent kills its commands at once and reports their exits.
const killWait = 2 * time.Second

// terminate signals c's init (the agent) to stop, and waits for it to
// exit: up to the grace, then after a second signal (the agent's cue to
// kill at once) up to killWait. It never fails: teardown's forced delete
// removes whatever is left.
func (m *Manager) terminate(ctx context.Context, c *Container) {
	select {
	case <-c.done:
		return
	default:
	}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := m.cfg.Runtime.kill(kctx, string(c.Sandbox), "SIGTERM"); err != nil {
		return // gone already, or the runtime will not: delete --force decides
	}
	if waitDone(ctx, c, m.cfg.StopGrace) {
		return
	}
	if err := m.cfg.Runtime.kill(kctx, string(c.Sandbox), "SIGTERM"); err != nil {
		return
	}
	waitDone(ctx, c, killWait)
}

// waitDone reports whether c's init exited within d (and before ctx was
// done).
func waitDone(ctx context.Context, c *Container, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// waitStopped waits until a Stop of the sandbox in progress is done: its
// runtime state and rootfs mount must be gone before a start reuses them.
func (m *Manager) waitStopped(ctx context.Context, id rung.SandboxID) error {
	m.mu.Lock()
	stopped := m.stopping[id]
	m.mu.Unlock()
	if stopped == nil {
		return nil
	}
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Manager) teardown(ctx context.Context, c *Container) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if c.agent != nil {
		c.agent.Close()
	}
	var errs []error
	if err := m.cfg.Runtime.delete(ctx, string(c.Sandbox)); err != nil && !alreadyGone(err) {
		errs = append(errs, err)
	}
	// A runtime killed half-way through a start (a daemon crash, a
	// cancelled start) leaves the cgroups it made, which delete ignores.
	if _, err := removeCgroups(rungCgroupDirs(), c.Sandbox, 0); err != nil {
		errs = append(errs, err)
	}
	// The overlay is unmounted like any other mount; runsc's socket
	// directory is a tmpfs (mountRunDir).
	unmounted := true
	for _, dir := range []string{c.rootfs, filepath.Join(c.dir, "run")} {
		if err := unmountAll(dir); err != nil {
			errs = append(errs, err)
			unmounted = false
		}
	}
	if err := os.Remove(m.bootIDFile(c.Sandbox)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	// Never remove through a mount still in place: that would delete the
	// sandbox's own files through its overlay.
	if unmounted {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop container %s: %w", c.Sandbox, err)
	}
	return nil
}

// Close stops every container, side by side: each one's grace runs at
// the same time, then unmounts the agent binary's tmpfs.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	ids := make([]rung.SandboxID, 0, len(m.containers))
	for id := range m.containers {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { errs[i] = m.Stop(ctx, id) }) // ends when the container is removed
	}
	wg.Wait()
	return errors.Join(append(errs, m.releaseAgentDir(), m.releaseBootIDDir())...)
}

// ReapStale removes every container, rootfs mount and state directory an
// earlier daemon left (after a crash) that this manager has not adopted
// ([Manager.Adopt]), and returns the sandboxes whose containers it
// removed; their cgroups go with them. It then sweeps the
// stale cgroups of other sandboxes under /rung, in every hierarchy: those
// that hold no process and have not changed for a minute, whoever made
// them. Other managers and daemons share /rung, but the sweep never
// removes a live container's cgroups: they hold its processes, and a
// runtime's start in progress is younger than a minute.
func (m *Manager) ReapStale(ctx context.Context) ([]rung.SandboxID, error) {
	return m.ReapStaleExcept(ctx, nil)
}

// ReapStaleExcept is [Manager.ReapStale] that also leaves the containers
// of the sandboxes keep reports, for a daemon that will try to adopt them
// but must first clear the rest (before their subvolumes are removed).
func (m *Manager) ReapStaleExcept(ctx context.Context, keep func(rung.SandboxID) bool) ([]rung.SandboxID, error) {
	var reaped []rung.SandboxID
	states, err := m.cfg.Runtime.list(ctx)
	if err != nil {
		m.log.Warn("list stale containers", "err", err)
	}
	seen := map[string]bool{}
	for _, st := range states {
		seen[st.ID] = true
	}
	ents, _ := os.ReadDir(m.cfg.StateDir)
	for _, e := range ents {
		if rung.SandboxID(e.Name()).Valid() {
			seen[e.Name()] = true
		}
	}
	var errs []error
	for id := range seen {
		if m.Get(rung.SandboxID(id)) != nil || (keep != nil && keep(rung.SandboxID(id))) {
			continue // adopted (adopt.go), started since, or kept to adopt
		}
		c := &Container{Sandbox: rung.SandboxID(id), dir: filepath.Join(m.cfg.StateDir, id), rootfs: filepath.Join(m.cfg.StateDir, id, "rootfs")}
		if err := m.teardown(ctx, c); err != nil {
			errs = append(errs, err)
			continue
		}
		reaped = append(reaped, c.Sandbox)
	}
	// The agent binary's tmpfs an earlier daemon left (a crash skips
	// Close); a manager that has started containers keeps its own.
	m.agentMu.Lock()
	if !m.agentReady {
		if err := unmountAll(m.agentDir); err != nil {
			errs = append(errs, err)
		}
	}
	if !m.bootIDReady {
		if err := unmountAll(m.bootIDDir); err != nil {
			errs = append(errs, err)
		}
	}
	m.agentMu.Unlock()
	swept, err := sweepCgroups(func(id rung.SandboxID) bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.containers[id] != nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	if len(swept) > 0 {
		m.log.InfoContext(ctx, "removed stale cgroups", "count", len(swept), "runtime", m.cfg.Runtime.Name)
	}
	return reaped, errors.Join(errs...)
}

// Sandboxes returns the sandboxes whose containers this manager runs.
func (m *Manager) Sandboxes() []rung.SandboxID {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]rung.SandboxID, 0, len(m.containers))
	for id := range m.containers {
		ids = append(ids, id)
	}
	return ids
}

// Agent returns the client of the container's agent.
func (c *Container) Agent() *agent.Client { return c.agent }
