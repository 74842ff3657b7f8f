package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/router"
	"rung.dev/rung/shell"
	"rung.dev/rung/store"
)

// ExecOptions are the parts of an exec that are not data.
type ExecOptions struct {
	// Stdin, when set, replaces the request's Stdin bytes.
	Stdin io.Reader
	// LiveStdin says Stdin is typed while the exec runs by someone who
	// reads its output meanwhile (the E2B SDK's stdin commands): auto
	// then runs it in the container when there is one (router.Request's
	// LiveStdin).
	LiveStdin bool
	// Stream, when set, receives the output chunks in order from one
	// goroutine while the exec runs, and the result's Stdout and Stderr
	// stay empty. A slow Stream never slows the exec: chunks queue (within
	// the output limit).
	Stream func(Chunk)
	// Input is a PTY exec's input (the request's PTY is set), in order:
	// bytes typed at the terminal and new sizes, each checked as
	// rung.TermSize.Check does (a bad one is dropped). The exec stops
	// receiving when it ends; the sender closes it, or just stops. A PTY
	// exec takes no Stdin: the request's Stdin bytes are typed first.
	Input <-chan TermInput
}

// TermInput is one message of a PTY exec's input: Data typed at the
// terminal, then, when set, a new size.
type TermInput struct {
	Data   []byte
	Resize *rung.TermSize
}

// startDurableAfter is how long an isolate exec may run before its start
// entry is committed even though it has changed nothing (see Exec). An
// exec that outlives it costs two writes, the second waited for; at 5 ms,
// 50 clients on 2 cores (where an `echo hi` waits about 10 ms for CPU)
// sent many execs that way: p99 44-57 ms against 39-47 at 50 ms
// (docs/decisions/api.md).
const startDurableAfter = 50 * time.Millisecond

// maxCommand is the longest command line accepted.
const maxCommand = 1 << 20

// Exec runs req in tenant's sandbox ref and returns its result. The exec
// is journaled as started before it runs and as ended after, with its
// exit code and reason, backend, duration and byte counts; output chunks become
// events. A non-zero exit status is a result. Errors: ErrNotFound,
// ErrInvalid, ErrLimit (too many concurrent execs), ErrUnavailable (no
// faithful tier on this server), ErrConflict (sandbox not usable).
func (c *Controller) Exec(ctx context.Context, tenant rung.TenantID, ref string, req rung.ExecRequest, opt ExecOptions) (_ rung.ExecResult, err error) {
	ctx, sp := c.startSpan(ctx, SpanExec)
	if sp != nil {
		defer func() { sp.End(err) }()
	}
	if err := c.checkExec(&req); err != nil {
		return rung.ExecResult{}, err
	}
	if req.PTY == nil && opt.Input != nil {
		return rung.ExecResult{}, rung.Errorf(rung.ErrInvalid, "terminal input for an exec without a PTY")
	}
	if req.PTY != nil && opt.Stdin != nil {
		return rung.ExecResult{}, rung.Errorf(rung.ErrInvalid, "a PTY exec takes terminal input, not a stdin stream")
	}
	a, err := c.acquire(ctx, tenant, ref)
	if err != nil {
		return rung.ExecResult{}, err
	}
	defer c.release(a)
	if sp != nil {
		sp.Set(slog.String(AttrTenant, string(tenant)), slog.String(AttrSandbox, string(a.id)))
	}
	sb, err := c.startSlot(a)
	if err != nil {
		return rung.ExecResult{}, err
	}
	defer c.endSlot(a, sb.Tenant)

	d, err := c.route(a, req, opt.Stdin != nil && opt.LiveStdin)
	if err != nil {
		return rung.ExecResult{}, err
	}
	if d.Err != nil {
		if sp != nil {
			sp.Set(slog.String(AttrBackend, string(d.Backend)), slog.String(AttrReason, d.Reason), slog.String(AttrReasonClass, d.Class))
		}
		return rung.ExecResult{Backend: d.Backend, Reason: d.Reason}, d.Err
	}
	var lease *shell.Lease
	if d.Backend != rung.BackendContainer {
		// The isolate execs of the daemon share its memory pool: a full
		// pool refuses the exec before it starts (ErrLimit, 429).
		if lease, err = a.sh.Admit(ctx); err != nil {
			return rung.ExecResult{Backend: d.Backend, Reason: d.Reason}, err
		}
		defer lease.Release() // Run gives it back; this covers not running
	}
	start := time.Now()
	e := store.Exec{ID: rung.NewExecID(), Sandbox: sb.ID, Command: req.Command, Backend: d.Backend, StartedAt: start.UTC()}
	started, _ := json.Marshal(ExecStarted{Backend: d.Backend, Command: clipCommand(req.Command), Exec: e.ID, Reason: d.Reason, PTY: req.PTY})
	// The exec's start is journaled before it can have an effect. A
	// container exec waits for that here. An isolate exec runs while its
	// entry is queued, and waits for it before its first file change
	// (shell.Request.BeforeChange), before it falls through to the
	// container, and once it has run for startDurableAfter: so one that
	// changes nothing and ends at once is recorded whole when it ends,
	// one write instead of two, and a crash can lose only the entry of an
	// exec that had no effect and lasted less than that.
	queued := c.st.QueueStartExec(ctx, e, store.Event{Time: e.StartedAt, Type: string(rung.EntryExecStarted), Journal: true, Data: started})
	gate := func() error {
		if _, err := queued.Wait(); err != nil {
			return fmt.Errorf("exec in sandbox %s: %w", sb.ID, err)
		}
		return nil
	}
	if d.Backend == rung.BackendContainer {
		if err := gate(); err != nil {
			return rung.ExecResult{}, err
		}
	} else {
		durable := time.AfterFunc(startDurableAfter, func() { queued.Wait() })
		defer durable.Stop()
	}

	out := newOutput(e.ID, c.lim.OutputBytes, opt.Stream == nil)
	pumped := make(chan struct{})
	if opt.Stream != nil {
		go func() { // stops when out.close is called below and the queue is drained
			defer close(pumped)
			out.pump(opt.Stream)
		}()
	} else {
		close(pumped)
	}
	stdin := opt.Stdin
	if stdin == nil {
		stdin = bytes.NewReader(req.Stdin)
	}
	rctx, cancel := context.WithTimeout(ctx, req.Timeout)
	stop := context.AfterFunc(a.execCtx, cancel) // a delete or shutdown cancels the exec
	var o outcome
	var runErr error
	if req.PTY != nil {
		// The router sent it to the container tier: no other has terminals.
		o, runErr = c.runContainer(rctx, a, sb, req, containerIO{stdin: stdin, input: opt.Input}, out)
	} else {
		o, runErr = c.run(rctx, a, sb, &d, req, stdin, out, lease, opt.Stdin != nil, gate)
	}
	stop()
	cancel()
	out.close()
	<-pumped
	dur := time.Since(start)

	e.ExitCode, e.EndedAt, e.Bytes, e.Backend = o.Code, time.Now().UTC(), out.nout+out.nerr, d.Backend
	ended := ExecEnded{Backend: d.Backend, DurationMS: dur.Milliseconds(), Exec: e.ID, ExitCode: o.Code,
		ExitReason: o.Reason, Limit: o.limit, Signal: o.Signal, StderrBytes: out.nerr, StdoutBytes: out.nout, Reason: o.rerouted}
	if runErr != nil {
		ended.Error = rung.Code(runErr)
	}
	c.observeExec(d, o, runErr, dur)
	if sp != nil {
		traceExecEnd(sp, e.ID, d, o)
	}
	endData, _ := json.Marshal(ended)
	evs := append(out.storeEvents(), store.Event{Time: e.EndedAt, Type: string(rung.EntryExecEnded), Journal: true, Data: endData})
	ectx, ecancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	// A start not committed yet is recorded with the end, in one write.
	err = queued.End(ectx, e, evs)
	ecancel()
	c.notify(sb.ID)
	if err != nil {
		return rung.ExecResult{}, fmt.Errorf("record end of exec %s: %w", e.ID, err)
	}
	c.countExec(a, e.Backend)
	if runErr != nil {
		return rung.ExecResult{}, runErr
	}
	return rung.ExecResult{
		ExecID: e.ID, ExitCode: o.Code, ExitReason: o.Reason, Signal: o.Signal, Limit: o.limit,
		Stdout: out.stdout.Bytes(), Stderr: out.stderr.Bytes(),
		Backend: d.Backend, Reason: d.Reason, Duration: dur, Truncated: out.truncated,
	}, nil
}

// outcome is how an exec ended, as its result and journal report it:
// the tier's exit (Signal only for reasons signal and oom) and the rung
// limit that ended it, or "".
type outcome struct {
	TierExit
	limit rung.Limit
	// rerouted is why the exec ran in another tier than the one chosen
	// when it started (the isolate tier refused it at run time), or "".
	rerouted string
}

// run runs one exec on the tier d chose. It returns how the exec ended,
// and an error only when there is no result. An exec auto sent to the
// isolate tier that the tier refuses at run time before it had any
// effect runs again in the container (see runChecked), and d then says
// so. streamedStdin says stdin comes from the client as the exec runs
// (it cannot be read twice).
func (c *Controller) run(ctx context.Context, a *actor, sb store.Sandbox, d *router.Decision, req rung.ExecRequest, stdin io.Reader, out *output, lease *shell.Lease, streamedStdin bool, gate func() error) (outcome, error) {
	if d.Backend != rung.BackendContainer {
		if d.Program != nil {
			return c.runChecked(ctx, a, sb, d, req, checkedRun{stdin: stdin, out: out, lease: lease, streamedStdin: streamedStdin, gate: gate})
		}
		stdout, stderr := streamWriter{out, "stdout"}, streamWriter{out, "stderr"}
		ctx, sp := c.startTierSpan(ctx, rung.BackendIsolate)
		res := a.sh.Run(ctx, shell.Request{Script: req.Command, Dir: req.Dir, Env: isolateEnv(c.envOf(sb.Sandbox), req.Env), Stdin: stdin, Stdout: stdout, Stderr: stderr,
			Lease: lease, Tenant: string(sb.Tenant), Sandbox: string(sb.ID), ShellName: c.isolateShellName(a), BeforeChange: gate})
		o := isolateOutcome(res)
		endTierSpan(sp, o, nil)
		return o, nil
	}
	return c.runContainer(ctx, a, sb, req, containerIO{stdin: stdin}, out)
}

// containerIO is a container exec's input: stdin, or for a PTY exec the
// request's Stdin bytes (as stdin) and then the terminal input.
type containerIO struct {
	stdin io.Reader
	input <-chan TermInput
}

// isolateOutcome is how an isolate exec ended, as the result reports it.
func isolateOutcome(res shell.Result) outcome {
	o := outcome{TierExit: TierExit{Code: res.ExitCode, Reason: rung.ExitReasonExit}, limit: rung.Limit(res.Limit)}
	switch o.limit {
	case rung.LimitWallTime:
		o.Reason = rung.ExitReasonTimeout
	case "canceled": // not a rung limit: shell.Result's word for the caller gone
		o.Reason, o.limit = rung.ExitReasonCanceled, ""
	case rung.LimitOutputBytes:
		o.Reason = rung.ExitReasonOutputLimit
	}
	return o
}

// runContainer runs one exec in the sandbox's container.
func (c *Controller) runContainer(ctx context.Context, a *actor, sb store.Sandbox, req rung.ExecRequest, in containerIO, out *output) (o outcome, err error) {
	ctx, sp := c.startTierSpan(ctx, rung.BackendContainer)
	if sp != nil {
		defer func() { endTierSpan(sp, o, err) }()
	}
	stdout, stderr := streamWriter{out, "stdout"}, streamWriter{out, "stderr"}
	who, err := c.execIdentity(a, req.User)
	if err != nil {
		return outcome{}, err
	}
	x, err := c.tier.Exec(ctx, sb.Sandbox, TierRequest{Command: req.Command, Dir: req.Dir, Env: commandEnv(who, c.envOf(sb.Sandbox), req.Env), User: who,
		Stdin: in.stdin, Stdout: stdout, Stderr: stderr, MaxOutput: c.lim.OutputBytes, PTY: req.PTY, Input: in.input, Login: req.Login})
	switch {
	case errors.Is(err, ErrOutputLimit):
		out.limitReached(fmt.Sprintf("rung: exec ended: output limit (%d bytes) reached\n", c.lim.OutputBytes))
		return outcome{TierExit: TierExit{Code: rung.ExitLimit, Reason: rung.ExitReasonOutputLimit}, limit: rung.LimitOutputBytes}, nil
	case err == nil && x.Reason == rung.ExitReasonTimeout,
		err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		// The agent kills at the deadline too; whichever side saw it
		// first, it is the wall-time limit.
		fmt.Fprintf(stderr, "rung: exec ended: wall time limit (%s) reached\n", req.Timeout)
		return outcome{TierExit: TierExit{Code: rung.ExitLimit, Reason: rung.ExitReasonTimeout}, limit: rung.LimitWallTime}, nil
	case err != nil && ctx.Err() != nil:
		fmt.Fprintf(stderr, "rung: exec ended: canceled\n")
		return outcome{TierExit: TierExit{Code: rung.ExitLimit, Reason: rung.ExitReasonCanceled}}, nil
	case err != nil:
		return outcome{}, err
	}
	if x.Reason != rung.ExitReasonSignal && x.Reason != rung.ExitReasonOOM {
		x.Signal = ""
	}
	return outcome{TierExit: x}, nil
}

func (c *Controller) checkExec(req *rung.ExecRequest) error {
	switch {
	case req.Command == "":
		return rung.Errorf(rung.ErrInvalid, "command is empty")
	case len(req.Command) > maxCommand:
		return rung.Errorf(rung.ErrInvalid, "command longer than %d bytes", maxCommand)
	case bytes.IndexByte([]byte(req.Command), 0) >= 0:
		return rung.Errorf(rung.ErrInvalid, "command contains a NUL byte")
	case req.Timeout < 0:
		return rung.Errorf(rung.ErrInvalid, "timeout must not be negative")
	case req.Timeout > c.lim.MaxExecTimeout:
		return rung.Errorf(rung.ErrInvalid, "timeout %s is above the maximum %s", req.Timeout, c.lim.MaxExecTimeout)
	}
	if req.Timeout == 0 {
		req.Timeout = c.lim.ExecTimeout
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
	} else {
		p, err := SandboxPath(req.Dir)
		if err != nil {
			return err
		}
		req.Dir = p
	}
	switch req.Backend {
	case "", rung.BackendAuto, rung.BackendIsolate, rung.BackendContainer:
	default:
		return rung.Errorf(rung.ErrInvalid, "unknown backend %q (want auto, isolate or container)", clip(string(req.Backend)))
	}
	return nil
}

// startSlot counts one running exec against a's and its tenant's limits.
func (c *Controller) startSlot(a *actor) (store.Sandbox, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sb := a.sb
	switch {
	case a.deleted:
		return sb, rung.Errorf(rung.ErrNotFound, "sandbox %s not found", a.id)
	case a.retired:
		return sb, rung.Errorf(rung.ErrConflict, "sandbox %s was rolled back as this exec started; run it again", a.id)
	case sb.State != rung.StateReady && sb.State != rung.StateRunning:
		return sb, rung.Errorf(rung.ErrConflict, "sandbox %s is %s", a.id, sb.State)
	case a.running >= c.lim.ExecsPerSandbox:
		return sb, &rung.LimitError{Limit: "concurrent_execs_per_sandbox", Max: int64(c.lim.ExecsPerSandbox)}
	case c.tenantExecs[sb.Tenant] >= c.lim.ExecsPerTenant:
		return sb, &rung.LimitError{Limit: "concurrent_execs_per_tenant", Max: int64(c.lim.ExecsPerTenant)}
	}
	a.running++
	c.tenantExecs[sb.Tenant]++
	a.execs.Add(1)
	return sb, nil
}

func (c *Controller) endSlot(a *actor, tenant rung.TenantID) {
	c.mu.Lock()
	a.running--
	if c.tenantExecs[tenant]--; c.tenantExecs[tenant] <= 0 {
		delete(c.tenantExecs, tenant)
	}
	c.mu.Unlock()
	a.execs.Done()
}

func clipCommand(s string) string {
	if len(s) > 4096 {
		return s[:4096] + "..."
	}
	return s
}
