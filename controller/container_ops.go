package controller

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// DefaultIdleTimeout stops a sandbox's container after this long without
// an exec, when the sandbox sets no idle timeout of its own.
const DefaultIdleTimeout = 10 * time.Minute

// containers returns the container tier, or rung.ErrUnavailable when
// the server runs without one.
func (c *Controller) containers() (ContainerTier, error) {
	if c.tier == nil {
		return nil, rung.Errorf(rung.ErrUnavailable, "the container tier is not available on this server")
	}
	return c.tier, nil
}

// containerEvents connects the container tier's lifecycle to the journal
// and the sandbox state. New hands them to the tier it opens.
func (c *Controller) containerEvents() ContainerEvents {
	return ContainerEvents{
		Started:       c.containerStarted,
		Used:          c.containerUsed,
		Exited:        c.containerExited,
		ProcessExited: c.processExited,
	}
}

// containerStarted records a new container: state "running", the idle
// alarm armed, a journal entry.
func (c *Controller) containerStarted(ctx context.Context, sb rung.Sandbox, s ContainerStart) {
	startMS := s.Took.Milliseconds()
	c.observeStart(false, s.Took)
	c.traceStart(ctx, sb.ID, false, s)
	c.journal(c.ctx, sb.ID, rung.EntryContainerStarted, ContainerStarted{
		Image: s.Image, Isolation: sb.Isolation, StartMS: &startMS,
	})
	c.touchContainer(sb.ID, rung.StateRunning)
}

// containerExited records that a container ended; deliberate says rung
// stopped it (idle, request, delete) rather than it dying.
func (c *Controller) containerExited(id rung.SandboxID, deliberate bool, why string) {
	c.mu.Lock()
	delete(c.usedAt, id)
	c.mu.Unlock()
	// State first: whoever sees the journal entry then sees the state.
	c.touchContainer(id, rung.StateReady)
	if deliberate {
		c.journal(c.ctx, id, rung.EntryContainerStopped, ContainerStopped{Reason: why})
	} else {
		c.journal(c.ctx, id, rung.EntryContainerExited, ContainerExited{Reason: why})
	}
}

// touchContainer sets the sandbox's state and re-arms its idle alarm on
// its actor's goroutine, so it never races another update of the row.
func (c *Controller) touchContainer(id rung.SandboxID, state rung.State) {
	c.touchContainerUntil(id, state, time.Time{})
}

// touchContainerUntil is touchContainer with the idle alarm at idleAt
// (zero: a whole idle timeout from now).
func (c *Controller) touchContainerUntil(id rung.SandboxID, state rung.State, idleAt time.Time) {
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	a, err := c.acquire(ctx, "", string(id))
	if err != nil {
		return // deleted meanwhile
	}
	defer c.release(a)
	err = c.do(ctx, a, func() error {
		cur := c.sandbox(a)
		cur.State = state
		cur.IdleAt = time.Time{}
		if state == rung.StateRunning {
			cur.IdleAt = idleAt.UTC()
			if idleAt.IsZero() {
				cur.IdleAt = time.Now().Add(idleTimeout(cur)).UTC()
			}
		}
		cur.UpdatedAt = time.Now().UTC()
		return c.writeRow(ctx, a, cur)
	})
	if err != nil && c.ctx.Err() == nil {
		c.log.Warn("container state", "sandbox", id, "state", state, "err", err)
	}
	c.poke()
}

// containerUsed records that a sandbox's running container was just
// used (an exec's end, a preview's request, a process's exit). The idle
// alarm in the row moves only when it would move by more than
// idleSlack: a busy sandbox writes its row a few times per idle timeout,
// not once per exec (a commit and the alarm goroutine's reads, on every
// container exec's path). The time of the use is kept here, and idle
// looks at it before it stops anything, so a container still never
// stops sooner than an idle timeout after its last use. A restart loses
// the times, and adoption re-arms every alarm from the restart.
func (c *Controller) containerUsed(id rung.SandboxID) {
	now := time.Now()
	c.mu.Lock()
	c.usedAt[id] = now
	armed := false
	if a := c.actors[id]; a != nil && !a.deleted && a.sb.State == rung.StateRunning && !a.sb.IdleAt.IsZero() {
		t := idleTimeout(a.sb)
		armed = now.Add(t).Sub(a.sb.IdleAt) < idleSlack(t)
	}
	c.mu.Unlock()
	if !armed {
		c.touchContainer(id, rung.StateRunning)
	}
}

// idleSlack is how far a running container's idle alarm may lag its
// last use before a use rewrites it: an eighth of the timeout, at most a
// minute.
func idleSlack(timeout time.Duration) time.Duration { return min(timeout/8, time.Minute) }

// lastUsed is when containerUsed last saw the sandbox's container used
// (ok false: not since it started or the daemon did).
func (c *Controller) lastUsed(id rung.SandboxID) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.usedAt[id]
	return t, ok
}

func idleTimeout(sb store.Sandbox) time.Duration {
	if sb.IdleTimeout > 0 {
		return sb.IdleTimeout
	}
	return DefaultIdleTimeout
}

// StartContainer starts tenant's sandbox's container now, rather than on
// the first exec that needs it, and returns the sandbox.
func (c *Controller) StartContainer(ctx context.Context, tenant rung.TenantID, ref string) (rung.Sandbox, error) {
	t, err := c.containers()
	if err != nil {
		return rung.Sandbox{}, err
	}
	a, err := c.acquire(ctx, tenant, ref)
	if err != nil {
		return rung.Sandbox{}, err
	}
	defer c.release(a)
	if err := t.Start(ctx, c.sandbox(a).Sandbox); err != nil {
		return rung.Sandbox{}, err
	}
	return c.sandbox(a).Sandbox, nil
}

// StopContainer stops tenant's sandbox's container; the sandbox and its
// files stay. Stopping a sandbox without a container is a no-op.
func (c *Controller) StopContainer(ctx context.Context, tenant rung.TenantID, ref string) error {
	t, err := c.containers()
	if err != nil {
		return err
	}
	a, err := c.acquire(ctx, tenant, ref)
	if err != nil {
		return err
	}
	defer c.release(a)
	return t.Stop(ctx, a.id, "stopped by request")
}

// stopContainerOf stops a sandbox's container if there is a container
// tier; delete and the idle alarm use it.
func (c *Controller) stopContainerOf(ctx context.Context, id rung.SandboxID, why string) error {
	t, err := c.containers()
	if err != nil {
		return nil
	}
	return t.Stop(ctx, id, why)
}

// running returns the container tier and the id of tenant's sandbox
// ref, for an operation on its running container.
func (c *Controller) running(ctx context.Context, tenant rung.TenantID, ref string) (ContainerTier, rung.SandboxID, error) {
	t, err := c.containers()
	if err != nil {
		return nil, "", err
	}
	a, err := c.acquire(ctx, tenant, ref)
	if err != nil {
		return nil, "", err
	}
	defer c.release(a)
	return t, a.id, nil
}

// ProcessRequest starts a background process in a sandbox's container.
type ProcessRequest struct {
	Command string            // run under the image's shell when Argv is empty
	Argv    []string          // run directly
	Dir     string            // working directory under /workspace or /tmp; default /workspace
	Env     map[string]string // overlaid on the image's and the sandbox's environment
	User    string            // who it runs as; default the sandbox's user
	// PTY runs it on a pseudo-terminal of this size: its output is one
	// stream (stdout), its stdin is typed at the terminal, which has no
	// end of input, and ResizeProcess changes the size.
	PTY *rung.TermSize
}

// ProcessInfo describes a background process.
type ProcessInfo struct {
	ID      string
	Pid     int // in the container's PID namespace
	Argv    []string
	Started time.Time
	Running bool
	Exit    *ProcessExit // nil while it runs
	// FirstSeq is the oldest output frame still kept (older output was
	// dropped to bound memory); LastSeq the newest.
	FirstSeq, LastSeq int64
}

// ProcessExit is how a background process ended.
type ProcessExit struct {
	Code      int    // exit status, or 128+signal
	Signal    string // "SIGKILL" when killed by a signal
	Reason    string // a rung.ExitReason: "exit", "signal", "oom", ...
	Error     string // why it could not start
	Truncated bool   // its output passed the limit
}

// OutputFrame is one chunk of a process's output, or (last) its exit.
type OutputFrame struct {
	Seq    int64
	Stream string // "stdout" or "stderr"
	Data   []byte
	Exit   *ProcessExit // set on the last frame only
}

// StartProcess starts a background process (a dev server, a watcher) in
// the sandbox's container, starting the container if needed, as req.User
// (an unknown user is ErrInvalid). Its environment is the image's,
// overlaid with the user's HOME, USER and LOGNAME, the sandbox's
// variables and then req.Env.
func (c *Controller) StartProcess(ctx context.Context, tenant rung.TenantID, ref string, req ProcessRequest) (ProcessInfo, error) {
	if err := checkProcess(&req); err != nil {
		return ProcessInfo{}, err
	}
	t, sb, who, err := c.processTarget(ctx, tenant, ref, req.User)
	if err != nil {
		return ProcessInfo{}, err
	}
	info, err := t.StartProcess(ctx, sb, TierProcess{
		Argv: req.Argv, Command: req.Command, Dir: req.Dir, User: who, Env: commandEnv(who, c.envOf(sb), req.Env), PTY: req.PTY,
	})
	if err != nil {
		return ProcessInfo{}, err
	}
	c.journal(ctx, sb.ID, rung.EntryProcessStarted, ProcessStarted{Argv: clipArgv(info.Argv), Process: info.ID})
	t.FollowProcess(sb.ID, info)
	return info, nil
}

// processTarget is the container tier, the sandbox and the identity a
// process as user starts with.
func (c *Controller) processTarget(ctx context.Context, tenant rung.TenantID, ref, user string) (ContainerTier, rung.Sandbox, Identity, error) {
	t, err := c.containers()
	if err != nil {
		return nil, rung.Sandbox{}, Identity{}, err
	}
	a, err := c.acquire(ctx, tenant, ref)
	if err != nil {
		return nil, rung.Sandbox{}, Identity{}, err
	}
	defer c.release(a)
	who, err := c.execIdentity(a, user)
	if err != nil {
		return nil, rung.Sandbox{}, Identity{}, err
	}
	return t, c.sandbox(a).Sandbox, who, nil
}

// maxArgv bounds a process's argument count.
const maxArgv = 4096

// checkProcess holds a process request to the rules an exec follows
// (checkExec): a command or argv without NUL bytes and within
// maxCommand, a working directory under /workspace or /tmp (default
// /workspace), and environment entries with valid names and no NUL
// bytes. It fills in the cleaned directory.
func checkProcess(req *ProcessRequest) error {
	if req.Command == "" && len(req.Argv) == 0 {
		return rung.Errorf(rung.ErrInvalid, "process needs a command or argv")
	}
	if len(req.Argv) > maxArgv {
		return rung.Errorf(rung.ErrInvalid, "too many arguments (%d, max %d)", len(req.Argv), maxArgv)
	}
	n := len(req.Command)
	for _, a := range append([]string{req.Command}, req.Argv...) {
		n += len(a)
		if strings.IndexByte(a, 0) >= 0 {
			return rung.Errorf(rung.ErrInvalid, "command contains a NUL byte")
		}
	}
	if n > maxCommand {
		return rung.Errorf(rung.ErrInvalid, "command longer than %d bytes", maxCommand)
	}
	if err := checkEnv(req.Env); err != nil {
		return err
	}
	if req.PTY != nil {
		if err := req.PTY.Check(); err != nil {
			return err
		}
	}
	if req.Dir == "" {
		req.Dir = "/workspace"
		return nil
	}
	p, err := SandboxPath(req.Dir)
	if err != nil {
		return err
	}
	req.Dir = p
	return nil
}

// processExited journals a background process's exit
// ("process.exited"). While the container runs on, the tier then
// reports it used: the idle timeout counts from the last exec or process
// exit (see idle).
func (c *Controller) processExited(id rung.SandboxID, info ProcessInfo, exit ProcessExit) {
	c.journalQuiet(id, rung.EntryProcessExited, ProcessExited{
		Argv: clipArgv(info.Argv), ExitCode: exit.Code, ExitReason: rung.ExitReason(exit.Reason), Process: info.ID, Signal: exit.Signal,
	})
}

// clipArgv bounds an argv for the journal like clipCommand: 4096 bytes
// of arguments at most, the last one cut short with "...".
func clipArgv(argv []string) []string {
	out := make([]string, 0, len(argv))
	room := 4096
	for _, a := range argv {
		if len(a) > room {
			out = append(out, a[:room]+"...")
			break
		}
		out = append(out, a)
		room -= len(a)
	}
	return out
}

// Processes lists the background processes of the sandbox's container;
// an OOM kill is reported as such.
func (c *Controller) Processes(ctx context.Context, tenant rung.TenantID, ref string) ([]ProcessInfo, error) {
	t, id, err := c.running(ctx, tenant, ref)
	if err != nil {
		return nil, err
	}
	return t.Processes(ctx, id)
}

// ProcessOutput streams a process's output frames after seq after to
// onFrame; with follow it waits until the process exits and returns its
// exit, an OOM kill reported as such.
func (c *Controller) ProcessOutput(ctx context.Context, tenant rung.TenantID, ref, id string, after int64, follow bool, onFrame func(OutputFrame)) (*ProcessExit, error) {
	t, sid, err := c.running(ctx, tenant, ref)
	if err != nil {
		return nil, err
	}
	return t.ProcessOutput(ctx, sid, id, after, follow, onFrame)
}

// SignalProcess sends a signal ("SIGTERM", "SIGINT", ...) to a process.
func (c *Controller) SignalProcess(ctx context.Context, tenant rung.TenantID, ref, id, signal string) error {
	t, sid, err := c.running(ctx, tenant, ref)
	if err != nil {
		return err
	}
	return t.SignalProcess(ctx, sid, id, signal)
}

// ResizeProcess sets the terminal size of a process started with a PTY.
// Errors: ErrInvalid (a size outside 1..rung.MaxTermSide, a process
// without a terminal), ErrNotFound, ErrConflict (it has exited).
func (c *Controller) ResizeProcess(ctx context.Context, tenant rung.TenantID, ref, id string, size rung.TermSize) error {
	if err := size.Check(); err != nil {
		return err
	}
	t, sid, err := c.running(ctx, tenant, ref)
	if err != nil {
		return err
	}
	return t.ResizeProcess(ctx, sid, id, size)
}

// WriteProcessStdin writes to a process's stdin, closing it after when
// closeAfter is set.
func (c *Controller) WriteProcessStdin(ctx context.Context, tenant rung.TenantID, ref, id string, data []byte, closeAfter bool) error {
	t, sid, err := c.running(ctx, tenant, ref)
	if err != nil {
		return err
	}
	return t.WriteProcessStdin(ctx, sid, id, data, closeAfter)
}

// WaitPort waits until a TCP port inside the sandbox's container accepts
// connections (readiness, distinct from "running"), or timeout passes
// (rung.ErrTimeout).
func (c *Controller) WaitPort(ctx context.Context, tenant rung.TenantID, ref string, port int, timeout time.Duration) error {
	if port <= 0 || port > 65535 {
		return rung.Errorf(rung.ErrInvalid, "port %d out of range", port)
	}
	t, id, err := c.running(ctx, tenant, ref)
	if err != nil {
		return err
	}
	return t.WaitPort(ctx, id, port, timeout)
}

// DialPort connects to a TCP port inside the sandbox's running container
// (the ports API and preview URLs): the connection is the caller's to
// close. A sandbox without a running container is rung.ErrConflict;
// nothing listening on the port is rung.ErrUnavailable.
func (c *Controller) DialPort(ctx context.Context, tenant rung.TenantID, ref string, port int) (net.Conn, error) {
	if port <= 0 || port > 65535 {
		return nil, rung.Errorf(rung.ErrInvalid, "port %d out of range", port)
	}
	t, id, err := c.running(ctx, tenant, ref)
	if err != nil {
		return nil, err
	}
	return t.DialPort(ctx, id, port)
}

// WaitCommand runs command in the sandbox's running container every
// interval until it exits 0 (readiness, distinct from "running"), or
// timeout passes: rung.ErrTimeout, naming the attempts and the last one's
// exit code and stderr. Each attempt is an ordinary container exec:
// journaled, counted against the exec limits, in the sandbox's
// environment, and cut off at the deadline.
func (c *Controller) WaitCommand(ctx context.Context, tenant rung.TenantID, ref, command string, interval, timeout time.Duration) error {
	if interval < minReadyInterval || interval > maxReadyInterval {
		return rung.Errorf(rung.ErrInvalid, "interval must be between %s and %s", minReadyInterval, maxReadyInterval)
	}
	t, id, err := c.running(ctx, tenant, ref)
	if err != nil {
		return err
	}
	if !t.Running(id) {
		return rung.Errorf(rung.ErrConflict, "sandbox %s has no running container", id)
	}
	deadline := time.Now().Add(timeout)
	var last *rung.ExecResult // the last attempt that ended on its own
	for attempt := 1; ; attempt++ {
		res, err := c.Exec(ctx, tenant, ref, rung.ExecRequest{
			Command: command, Backend: rung.BackendContainer,
			Timeout: min(max(time.Until(deadline), time.Millisecond), c.lim.MaxExecTimeout),
		}, ExecOptions{})
		if err != nil {
			return err
		}
		if res.ExitCode == 0 {
			return nil
		}
		cutOff := res.ExitCode == rung.ExitLimit && !time.Now().Before(deadline)
		if last == nil || !cutOff {
			last = &res
		}
		wait := min(interval, time.Until(deadline))
		if wait <= 0 {
			return rung.Errorf(rung.ErrTimeout, "not ready after %s: %d attempts, the last to finish exited %d: %s",
				timeout, attempt, last.ExitCode, clip(string(bytes.TrimSpace(last.Stderr))))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// The bounds of WaitCommand's interval: often enough for a service that
// starts in milliseconds, never a busy loop of execs.
const (
	minReadyInterval = 10 * time.Millisecond
	maxReadyInterval = time.Minute
)

// journalQuiet is journal for entries that can race the sandbox's
// deletion (a process ending as its container is stopped for a delete):
// a sandbox gone meanwhile, or a controller closing, is not worth a
// warning.
func (c *Controller) journalQuiet(id rung.SandboxID, typ rung.EntryType, data any) {
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	err := c.appendJournal(ctx, id, typ, data)
	if err != nil && !errors.Is(err, rung.ErrNotFound) && c.ctx.Err() == nil {
		c.log.Warn("journal append", "sandbox", id, "type", typ, "err", err)
	}
}
