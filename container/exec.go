package container

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/agent"
)

// Exec runs one command in the container through its agent, calling
// onFrame for each output chunk. An exit by SIGKILL that raised the
// container's OOM-kill counter is reported with Reason "oom". If the
// container dies during the exec, the error wraps rung.ErrUnavailable.
func (c *Container) Exec(ctx context.Context, req agent.ExecRequest, onFrame func(agent.Frame)) (agent.Exit, error) {
	return c.ExecStream(ctx, req, nil, onFrame)
}

// ExecStream is Exec with the command's stdin streamed from stdin (see
// [agent.Client.ExecStream]); nil means req.Stdin.
func (c *Container) ExecStream(ctx context.Context, req agent.ExecRequest, stdin io.Reader, onFrame func(agent.Frame)) (agent.Exit, error) {
	return c.exec(ctx, req, func(req agent.ExecRequest) (agent.Exit, error) {
		return c.agent.ExecStream(ctx, req, stdin, onFrame)
	})
}

// ExecPTY is Exec on a pseudo-terminal of size req.PTY, with the
// terminal's input from in (see [agent.Client.ExecPTY]).
func (c *Container) ExecPTY(ctx context.Context, req agent.ExecRequest, in <-chan agent.Input, onFrame func(agent.Frame)) (agent.Exit, error) {
	return c.exec(ctx, req, func(req agent.ExecRequest) (agent.Exit, error) {
		return c.agent.ExecPTY(ctx, req, in, onFrame)
	})
}

// exec fills in req's defaults from the image, runs it, and tells a dying
// container and an OOM kill from other ends.
func (c *Container) exec(ctx context.Context, req agent.ExecRequest, run func(agent.ExecRequest) (agent.Exit, error)) (agent.Exit, error) {
	if req.Shell == "" {
		req.Shell = c.Image.Config.Shell
	}
	if len(req.Env) == 0 {
		req.Env = c.Image.Config.Env
	}
	before := c.oomKills()
	exit, err := run(req)
	if err != nil {
		if ctx.Err() != nil {
			return exit, ctx.Err()
		}
		// A dying container drops the connection a moment before its
		// init is reaped (gVisor's sentry takes longest); give the
		// pidfd watcher that moment.
		timer := time.NewTimer(5 * time.Second)
		defer timer.Stop()
		select {
		case <-timer.C:
			// Alive but not answering (its socket gone, the agent
			// wedged): a server-side condition, not the caller's fault.
			return exit, rung.Errorf(rung.ErrUnavailable, "the container of sandbox %s does not answer", c.Sandbox)
		case <-ctx.Done():
			return exit, ctx.Err()
		case <-c.done:
		}
		if c.oomKills() > before {
			// Under gVisor the memory cgroup holds the sentry too, so an
			// OOM kill ends the whole container: still this exec's OOM.
			return agent.Exit{Code: 137, Signal: "SIGKILL", Reason: "oom"}, nil
		}
		return exit, rung.Errorf(rung.ErrUnavailable, "container of sandbox %s exited during the exec", c.Sandbox)
	}
	if exit.Signal == "SIGKILL" && exit.Reason == "signal" && c.oomKills() > before {
		exit.Reason = "oom"
	}
	return exit, nil
}

// oomKills reads the cgroup v1 memory controller's OOM-kill counter.
func (c *Container) oomKills() int64 {
	b, err := os.ReadFile(filepath.Join(c.cgroup, "memory.oom_control"))
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("oom_kill ")); ok {
			n, _ := strconv.ParseInt(string(v), 10, 64)
			return n
		}
	}
	return 0
}

// processOOM tells a background process's OOM kill from another SIGKILL:
// it keeps the container's OOM-kill count from when each process started
// and, once a process was killed by SIGKILL, the verdict, so that a later
// OOM kill of another command does not change it.
type processOOM struct {
	mu     sync.Mutex             // guards the fields below
	byID   map[string]*processMem // running, and SIGKILLed ones with a verdict
	killed []string               // ids with a verdict, oldest first
}

type processMem struct {
	before  int64 // the OOM-kill count when the process started
	decided bool
	oom     bool
}

// maxKilledVerdicts bounds the verdicts kept; the agent itself lists at
// most 64 exited processes.
const maxKilledVerdicts = 256

// StartProcess starts a background process through the agent (see
// [agent.Client.StartProcess]), noting the container's OOM-kill count
// first for [Container.ProcessExit].
func (c *Container) StartProcess(ctx context.Context, req agent.ProcessRequest) (agent.ProcessInfo, error) {
	before := c.oomKills()
	info, err := c.agent.StartProcess(ctx, req)
	if err != nil {
		return info, err
	}
	p := &c.procs
	p.mu.Lock()
	if p.byID == nil {
		p.byID = map[string]*processMem{}
	}
	p.byID[info.ID] = &processMem{before: before}
	p.mu.Unlock()
	return info, nil
}

// ProcessExit returns e, the exit the agent reports for background
// process id, with Reason "oom" when a SIGKILL ended it and the
// container's OOM-kill counter rose since it started: the kernel counts
// the kill before the signal lands, so the first look after the exit
// decides, and later looks give the same answer. It is safe for
// concurrent use.
func (c *Container) ProcessExit(id string, e agent.Exit) agent.Exit {
	p := &c.procs
	if e.Reason != "signal" || e.Signal != "SIGKILL" {
		p.mu.Lock()
		delete(p.byID, id) // nothing to decide
		p.mu.Unlock()
		return e
	}
	now := c.oomKills()
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.byID[id]
	if m == nil {
		return e // not started by StartProcess, or its verdict was dropped
	}
	if !m.decided {
		m.decided, m.oom = true, now > m.before
		p.killed = append(p.killed, id)
		if len(p.killed) > maxKilledVerdicts {
			delete(p.byID, p.killed[0])
			p.killed = p.killed[1:]
		}
	}
	if m.oom {
		e.Reason = "oom"
	}
	return e
}
