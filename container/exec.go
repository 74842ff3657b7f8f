package container

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
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
	if req.Shell == "" {
		req.Shell = c.Image.Config.Shell
	}
	if len(req.Env) == 0 {
		req.Env = c.Image.Config.Env
	}
	before := c.oomKills()
	exit, err := c.agent.ExecStream(ctx, req, stdin, onFrame)
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
			return exit, err
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
