package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/agent"
)

// Live restore: a daemon that restarts (after a crash, or a graceful stop
// that left its containers running, as Docker's live-restore does) takes
// over the containers an earlier daemon started instead of reaping them.
// Everything a container needs lives outside the daemon's process: the
// runtime's state, the overlay mounted at <state>/<id>/rootfs, the agent's
// socket in <state>/<id>/run, the cgroups; and the agent keeps each
// background process running with its output and sequence numbers. So a
// container is adopted by finding its init in the runtime's list, watching
// it with a pidfd again and pinning its agent's socket again.
//
// Under runc and crun the socket directory is the host's alone, so the
// socket found there is the one the host made. Under runsc it is shared
// with the container (a small tmpfs), so a command could have replaced the
// socket while no daemon held it pinned; the daemon then talks to a socket
// of that sandbox's own making, which can lie about its own commands and
// reach nothing else (a symlink is refused: agent.Client).

// overlayMagic is OVERLAYFS_SUPER_MAGIC.
const overlayMagic = 0x794c7630

// Adopt takes over the running containers of reqs that an earlier process
// started with this manager's runtime and state directory, as [Start]
// would have left them: init running, root filesystem mounted, agent
// answering. It lists the runtime's containers once. It returns the
// containers it adopted and, for each request it could not adopt, why
// (rung.ErrNotFound when no such container runs). What is not adopted is
// left for [Manager.ReapStale].
func (m *Manager) Adopt(ctx context.Context, reqs []StartRequest) ([]*Container, map[rung.SandboxID]error) {
	failed := map[rung.SandboxID]error{}
	if len(reqs) == 0 {
		return nil, failed
	}
	states, err := m.cfg.Runtime.list(ctx)
	if err != nil {
		for _, r := range reqs {
			failed[r.Sandbox] = fmt.Errorf("list containers: %w", err)
		}
		return nil, failed
	}
	byID := map[string]containerState{}
	for _, st := range states {
		byID[st.ID] = st
	}
	// Side by side: each adoption waits on its agent's answer.
	results := make([]*Container, len(reqs))
	errs := make([]error, len(reqs))
	sem := make(chan struct{}, adoptParallel)
	var wg sync.WaitGroup
	for i, req := range reqs {
		st, ok := byID[string(req.Sandbox)]
		if !ok {
			errs[i] = rung.Errorf(rung.ErrNotFound, "no container of sandbox %s is running", req.Sandbox)
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i], errs[i] = m.adoptOne(ctx, req, st)
		})
	}
	wg.Wait()
	var adopted []*Container
	for i, req := range reqs {
		if errs[i] != nil {
			failed[req.Sandbox] = errs[i]
			continue
		}
		adopted = append(adopted, results[i])
	}
	return adopted, failed
}

// adoptParallel bounds the adoptions in flight at once.
const adoptParallel = 16

// adoptTimeout bounds one container's adoption: the agent's health answer.
const adoptTimeout = 3 * time.Second

func (m *Manager) adoptOne(ctx context.Context, req StartRequest, st containerState) (*Container, error) {
	if !req.Sandbox.Valid() {
		return nil, rung.Errorf(rung.ErrInvalid, "invalid sandbox id %q", req.Sandbox)
	}
	if st.Status != "running" || st.Pid <= 0 {
		return nil, fmt.Errorf("container of sandbox %s is %s", req.Sandbox, st.Status)
	}
	if m.Get(req.Sandbox) != nil {
		return nil, rung.Errorf(rung.ErrConflict, "sandbox %s already has a running container", req.Sandbox)
	}
	dir := filepath.Join(m.cfg.StateDir, string(req.Sandbox))
	c := &Container{
		Sandbox: req.Sandbox, Image: req.Image, Started: st.Created,
		dir: dir, rootfs: filepath.Join(dir, "rootfs"), done: make(chan struct{}),
		pid: st.Pid, cgroup: filepath.Join("/sys/fs/cgroup/memory/rung", string(req.Sandbox)),
	}
	if c.Started.IsZero() {
		c.Started = time.Now()
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(c.rootfs, &fs); err != nil || fs.Type != overlayMagic {
		return nil, fmt.Errorf("container of sandbox %s has no root filesystem mounted", req.Sandbox)
	}
	if err := m.watch(c); err != nil {
		return nil, fmt.Errorf("adopt container of %s: %w", req.Sandbox, err)
	}
	c.agent = agent.NewClient(filepath.Join(dir, "run"))
	hctx, cancel := context.WithTimeout(ctx, adoptTimeout)
	defer cancel()
	if err := c.agent.Health(hctx); err != nil {
		c.agent.Close()
		return nil, fmt.Errorf("the agent of sandbox %s does not answer: %w", req.Sandbox, err)
	}
	select {
	case <-c.done:
		c.agent.Close()
		return nil, errors.New("container exited while being adopted")
	default:
	}
	m.mu.Lock()
	m.containers[req.Sandbox] = c
	m.mu.Unlock()
	m.log.InfoContext(ctx, "container adopted", "sandbox", req.Sandbox, "runtime", m.cfg.Runtime.Name)
	return c, nil
}

// Detach lets go of every container without stopping it, for a daemon
// that stops and leaves its containers to the next one (live restore):
// the agents' connections close and the containers are forgotten. Their
// Done channels stay open. The agent binary's tmpfs stays mounted: the
// containers run it.
func (m *Manager) Detach() {
	m.mu.Lock()
	cs := m.containers
	m.containers = map[rung.SandboxID]*Container{}
	m.mu.Unlock()
	for _, c := range cs {
		c.agent.Close()
	}
}

// Left reports whether this manager's state directory holds a
// sandbox's container state: an earlier daemon's container, to adopt or
// reap. It reads the directory only (no runtime call, which costs a
// process start per container it lists).
func (m *Manager) Left() bool {
	ents, err := os.ReadDir(m.cfg.StateDir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.IsDir() && rung.SandboxID(e.Name()).Valid() {
			return true
		}
	}
	return false
}
