package containers

import (
	"context"
	"errors"
	"net"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
	"rung.dev/rung/controller"
)

// credential is who as the agent takes it: nil for root with no
// supplementary groups, which is the agent's own identity.
func credential(who controller.Identity) *agent.Credential {
	if who.UID == 0 && who.GID == 0 && len(who.Groups) == 0 {
		return nil
	}
	return &agent.Credential{UID: who.UID, GID: who.GID, Groups: who.Groups}
}

// processInfo is the agent's p as the controller sees it.
func processInfo(p agent.ProcessInfo) controller.ProcessInfo {
	return controller.ProcessInfo{ID: p.ID, Pid: p.Pid, Argv: p.Argv, Started: p.Started, Running: p.Running,
		Exit: processExit(p.Exit), FirstSeq: p.FirstSeq, LastSeq: p.LastSeq}
}

// processExit is the agent's e as the controller sees it; nil for nil.
func processExit(e *agent.Exit) *controller.ProcessExit {
	if e == nil {
		return nil
	}
	return &controller.ProcessExit{Code: e.Code, Signal: e.Signal, Reason: e.Reason, Error: e.Error, Truncated: e.Truncated}
}

// live returns the sandbox's running container or rung.ErrConflict.
func (t *Tier) live(id rung.SandboxID) (*container.Container, error) {
	if ctr := t.current(id); ctr != nil {
		return ctr, nil
	}
	return nil, rung.Errorf(rung.ErrConflict, "sandbox %s has no running container", id)
}

// StartProcess implements [controller.ContainerProcesses]. Its
// environment is the image's, overlaid with req.Env.
func (t *Tier) StartProcess(ctx context.Context, sb rung.Sandbox, req controller.TierProcess) (controller.ProcessInfo, error) {
	ctr, err := t.ensure(ctx, sb)
	if err != nil {
		return controller.ProcessInfo{}, err
	}
	info, err := ctr.StartProcess(ctx, agent.ProcessRequest{
		Argv: req.Argv, Command: req.Command, Dir: req.Dir, User: credential(req.User),
		Env: execEnv(ctr.Image.Config.Env, req.Env), Shell: ctr.Image.Config.Shell, PTY: agentSize(req.PTY),
	})
	if err != nil {
		return controller.ProcessInfo{}, agentError(err)
	}
	return processInfo(info), nil
}

// FollowProcess implements [controller.ContainerProcesses].
func (t *Tier) FollowProcess(id rung.SandboxID, info controller.ProcessInfo) {
	if ctr := t.current(id); ctr != nil {
		t.follow(id, ctr, info)
	}
}

// Processes implements [controller.ContainerProcesses]; an OOM kill is
// reported as such (see [container.Container.ProcessExit]).
func (t *Tier) Processes(ctx context.Context, id rung.SandboxID) ([]controller.ProcessInfo, error) {
	ctr, err := t.live(id)
	if err != nil {
		return nil, err
	}
	list, err := ctr.Agent().Processes(ctx)
	out := make([]controller.ProcessInfo, len(list))
	for i, p := range list {
		if p.Exit != nil {
			e := ctr.ProcessExit(p.ID, *p.Exit)
			p.Exit = &e
		}
		out[i] = processInfo(p)
	}
	if list == nil {
		out = nil
	}
	return out, agentError(err)
}

// ProcessOutput implements [controller.ContainerProcesses].
func (t *Tier) ProcessOutput(ctx context.Context, id rung.SandboxID, pid string, after int64, follow bool, onFrame func(controller.OutputFrame)) (*controller.ProcessExit, error) {
	ctr, err := t.live(id)
	if err != nil {
		return nil, err
	}
	exit, err := ctr.Agent().Output(ctx, pid, after, follow, func(f agent.Frame) {
		onFrame(controller.OutputFrame{Seq: f.Seq, Stream: f.Stream, Data: f.Data, Exit: processExit(f.Exit)})
	})
	if exit != nil {
		e := ctr.ProcessExit(pid, *exit)
		exit = &e
	}
	return processExit(exit), agentError(err)
}

// SignalProcess implements [controller.ContainerProcesses].
func (t *Tier) SignalProcess(ctx context.Context, id rung.SandboxID, pid, signal string) error {
	ctr, err := t.live(id)
	if err != nil {
		return err
	}
	return agentError(ctr.Agent().Signal(ctx, pid, signal))
}

// WriteProcessStdin implements [controller.ContainerProcesses].
func (t *Tier) WriteProcessStdin(ctx context.Context, id rung.SandboxID, pid string, data []byte, closeAfter bool) error {
	ctr, err := t.live(id)
	if err != nil {
		return err
	}
	return agentError(ctr.Agent().WriteStdin(ctx, pid, data, closeAfter))
}

// ResizeProcess implements [controller.ContainerProcesses].
func (t *Tier) ResizeProcess(ctx context.Context, id rung.SandboxID, pid string, size rung.TermSize) error {
	ctr, err := t.live(id)
	if err != nil {
		return err
	}
	return agentError(ctr.Agent().ResizeProcess(ctx, pid, *agentSize(&size)))
}

// agentSize is a checked terminal size as the agent takes it; nil for nil.
func agentSize(s *rung.TermSize) *agent.TermSize {
	if s == nil {
		return nil
	}
	return &agent.TermSize{Cols: uint16(s.Cols), Rows: uint16(s.Rows)}
}

// WaitPort implements [controller.ContainerProcesses].
func (t *Tier) WaitPort(ctx context.Context, id rung.SandboxID, port int, timeout time.Duration) error {
	ctr, err := t.live(id)
	if err != nil {
		return err
	}
	if err := ctr.Agent().WaitPort(ctx, port, timeout); err != nil {
		if se, ok := err.(*agent.StatusError); ok && se.Code == 504 {
			return rung.Errorf(rung.ErrTimeout, "port %d not accepting connections after %s", port, timeout)
		}
		return agentError(err)
	}
	return nil
}

// DialPort implements [controller.ContainerProcesses].
func (t *Tier) DialPort(ctx context.Context, id rung.SandboxID, port int) (net.Conn, error) {
	ctr, err := t.live(id)
	if err != nil {
		return nil, err
	}
	conn, err := ctr.Agent().DialPort(ctx, port)
	if se, ok := err.(*agent.StatusError); ok && se.Code == 502 {
		return nil, rung.Errorf(rung.ErrUnavailable, "nothing accepts connections on port %d in sandbox %s", port, id)
	}
	if err != nil {
		return nil, agentError(err)
	}
	if t.ev.Used != nil {
		t.ev.Used(id) // a preview in use keeps the sandbox from idling out
	}
	return conn, nil
}

// agentError classifies an agent's refusal.
func agentError(err error) error {
	se, ok := err.(*agent.StatusError)
	if !ok {
		if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		// No answer at all (the agent's socket gone, the container
		// dying): the server's condition, not a bug; the transport's
		// text names host descriptors, so it stays out of the message.
		return rung.Errorf(rung.ErrUnavailable, "the sandbox's container does not answer")
	}
	switch se.Code {
	case 404:
		return rung.Errorf(rung.ErrNotFound, "process not found")
	case 400:
		return rung.Errorf(rung.ErrInvalid, "%s", se.Msg)
	case 422:
		return rung.Errorf(rung.ErrInvalid, "cannot start: %s", se.Msg)
	case 429:
		return rung.Errorf(rung.ErrLimit, "%s", se.Msg)
	case 409:
		return rung.Errorf(rung.ErrConflict, "%s", se.Msg)
	case 503:
		return rung.Errorf(rung.ErrUnavailable, "the sandbox's container is stopping")
	}
	return err
}
