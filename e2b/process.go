package e2b

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	pb "rung.dev/rung/e2b/envdpb/process"
	"rung.dev/rung/e2b/envdpb/process/processconnect"
)

// processService is envd's process.Process over the controller. A command
// Start receives is one controller exec, so rung's router picks its tier
// (echo and cat in-process, python3 in the container), and its output
// chunks become data events as they come.
type processService struct {
	processconnect.UnimplementedProcessHandler // StreamInput
	s                                          *Server
}

// defaultProcessTimeout bounds a command when the request carries no
// Connect-Timeout-Ms, as envd's SDK default does.
const defaultProcessTimeout = 60 * time.Second

// commandLine turns E2B's process config into one shell command line.
// The SDK runs commands as /bin/bash -l -c CMD: that is CMD, which the
// router reads, run as a login shell's (login); anything else is its
// argv, quoted.
func commandLine(cfg *pb.ProcessConfig) (line string, login bool, err error) {
	cmd, args := cfg.GetCmd(), cfg.GetArgs()
	if cmd == "" {
		return "", false, rung.Errorf(rung.ErrInvalid, "process has no cmd")
	}
	if cmd == "/bin/bash" || cmd == "bash" {
		switch {
		case len(args) == 3 && args[0] == "-l" && args[1] == "-c", len(args) == 2 && args[0] == "-lc":
			return args[len(args)-1], true, nil
		case len(args) == 2 && args[0] == "-c":
			return args[1], false, nil
		}
	}
	parts := []string{shellQuote(cmd)}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " "), false, nil
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (p *processService) Start(ctx context.Context, req *connect.Request[pb.StartRequest], stream *connect.ServerStream[pb.StartResponse]) error {
	s := p.s
	c, err := s.envdCaller(ctx, req.Header())
	if err != nil {
		return s.rpcError(ctx, err)
	}
	cfg := req.Msg.GetProcess()
	line, login, err := commandLine(cfg)
	if err != nil {
		return s.rpcError(ctx, err)
	}
	// The SDK names the user (commands.run's `user`) in a Basic
	// Authorization header; without one, envd's default user: the
	// sandbox's. Another user's command runs in the container, and root
	// starts in /root, as envd starts each user in its home.
	user := envdUser(req.Header())
	ereq := rung.ExecRequest{Command: line, Env: maps.Clone(cfg.GetEnvs()), Dir: workspace, User: user, Login: login}
	if user == "root" {
		ereq.Dir = "/root"
	}
	if cfg.Cwd != nil {
		ereq.Dir = userPath(cfg.GetCwd(), user)
	}
	if !inView(ereq.Dir) {
		// An exec's directory is in /workspace or /tmp; another (root's
		// home, a cwd elsewhere) is entered by the command itself, in the
		// container (the isolate tier refuses a cd outside them).
		ereq.Command = "cd -- " + shellQuote(ereq.Dir) + " && " + line
		ereq.Dir = workspace
	}
	// Commands start in the home, /home/user, a link to /workspace: with
	// PWD naming the directory by its E2B path, bash's pwd prints
	// /home/user as envd's does (the isolate tier leaves pwd and cd .. to
	// the container then).
	if p := e2bPath(ereq.Dir); p != ereq.Dir {
		if _, set := ereq.Env["PWD"]; !set {
			if ereq.Env == nil {
				ereq.Env = map[string]string{}
			}
			ereq.Env["PWD"] = p
		}
	}
	// The process outlives the request, as envd's does: a client that
	// goes away does not end it; the deadline (Connect-Timeout-Ms, which
	// connect-go put on ctx) and SendSignal do.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultProcessTimeout)
	}
	spec := startSpec{cfg: cfg, tag: req.Msg.Tag, deadline: deadline}
	opt := controller.ExecOptions{}
	var input chan controller.TermInput
	switch {
	case req.Msg.Pty != nil:
		// On a terminal (envd's pty.create: bash -i -l), always in the
		// container; SendInput's pty bytes and Update's sizes come in
		// through one queue, in order.
		size, err := termSize(req.Msg.Pty)
		if err != nil {
			return s.rpcError(ctx, err)
		}
		ereq.PTY = &size
		spec.term = newTermQueue()
		input = make(chan controller.TermInput)
		opt.Input = input
	case req.Msg.GetStdin():
		spec.stdin = newStdinPipe()
		opt.Stdin, opt.LiveStdin = spec.stdin, true // SendInput types while the SDK reads
	}
	pr := s.procs.start(c.sandbox, spec, func(pctx context.Context, pr *proc) {
		opt.Stream = func(ch controller.Chunk) {
			d := &pb.ProcessEvent_DataEvent{}
			switch {
			case pr.term != nil:
				d.Output = &pb.ProcessEvent_DataEvent_Pty{Pty: ch.Data}
			case ch.Stream == "stderr":
				d.Output = &pb.ProcessEvent_DataEvent_Stderr{Stderr: ch.Data}
			default:
				d.Output = &pb.ProcessEvent_DataEvent_Stdout{Stdout: ch.Data}
			}
			pr.add(&pb.ProcessEvent{Event: &pb.ProcessEvent_Data{Data: d}})
		}
		var feeding sync.WaitGroup
		fctx, stopFeeding := context.WithCancel(pctx)
		if pr.term != nil {
			feeding.Go(func() { pr.term.feed(fctx, input) }) // ends at stopFeeding below
		}
		res, err := s.ctrl.Exec(pctx, c.tenant, c.sandbox, ereq, opt)
		stopFeeding()
		feeding.Wait()
		// A command its sandbox's kill or end of life ended has no end
		// event: envd goes with its VM, and the SDK sees the stream cut
		// (then a failed health check: "the sandbox was killed").
		dctx, cancel := context.WithTimeout(context.WithoutCancel(pctx), 10*time.Second)
		gone := s.ctrl.Deleting(dctx, c.tenant, rung.SandboxID(c.sandbox))
		cancel()
		if gone {
			pr.cutStream()
			return
		}
		pr.add(&pb.ProcessEvent{Event: &pb.ProcessEvent_End{End: endEvent(res, err, pr.signaled())}})
	})
	return abortIfCut(follow(ctx, s.stopping, pr, 0, func(ev *pb.ProcessEvent) error { return stream.Send(&pb.StartResponse{Event: ev}) }))
}

// errStreamCut is follow's answer for a process whose sandbox went
// away under it.
var errStreamCut = errors.New("the sandbox went away")

// abortIfCut cuts the response, as a killed VM's connection is cut
// (net/http closes it without ending the stream), when err is
// errStreamCut, and returns err otherwise.
func abortIfCut(err error) error {
	if errors.Is(err, errStreamCut) {
		panic(http.ErrAbortHandler)
	}
	return err
}

// endEvent is E2B's end event for an exec's result or error.
func endEvent(res rung.ExecResult, err error, signaled bool) *pb.ProcessEvent_EndEvent {
	switch {
	case signaled:
		return &pb.ProcessEvent_EndEvent{ExitCode: -1, Status: "signal: killed"}
	case err != nil:
		msg := message(err)
		if errors.Is(err, context.DeadlineExceeded) {
			msg = "deadline exceeded"
		}
		return &pb.ProcessEvent_EndEvent{ExitCode: -1, Status: "error", Error: &msg}
	case res.ExitReason == rung.ExitReasonSignal:
		return &pb.ProcessEvent_EndEvent{ExitCode: -1, Status: "signal: " + strings.ToLower(strings.TrimPrefix(res.Signal, "SIG"))}
	}
	return &pb.ProcessEvent_EndEvent{ExitCode: int32(res.ExitCode), Exited: true, Status: fmt.Sprintf("exit status %d", res.ExitCode)}
}

// follow sends pr's start event, then its events from index from on,
// until its end event, until ctx ends (the client went away: the
// process runs on) or until stopping does (the daemon stops);
// errStreamCut when the process ended with its sandbox, without an end
// event.
func follow(ctx, stopping context.Context, pr *proc, from int, send func(*pb.ProcessEvent) error) error {
	if err := send(&pb.ProcessEvent{Event: &pb.ProcessEvent_Start{Start: &pb.ProcessEvent_StartEvent{Pid: pr.pid}}}); err != nil {
		return err
	}
	for i := from; ; {
		evs, done, changed := pr.since(i)
		for _, ev := range evs {
			if err := send(ev); err != nil {
				return err
			}
		}
		i += len(evs)
		if done && len(evs) == 0 {
			if pr.wasCut() {
				return errStreamCut
			}
			return nil
		}
		if len(evs) > 0 {
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return connect.NewError(connect.CodeDeadlineExceeded, errors.New("stream ended; the process runs on"))
		case <-stopping.Done():
			return errStopping
		}
	}
}

func (p *processService) Connect(ctx context.Context, req *connect.Request[pb.ConnectRequest], stream *connect.ServerStream[pb.ConnectResponse]) error {
	c, err := p.s.envdCaller(ctx, req.Header())
	if err != nil {
		return p.s.rpcError(ctx, err)
	}
	pr, err := p.s.procs.find(c.sandbox, req.Msg.GetProcess())
	if err != nil {
		return p.s.rpcError(ctx, err)
	}
	// Live events only, as envd: from now on; an exited process gets
	// its end event.
	from := pr.liveFrom()
	return abortIfCut(follow(ctx, p.s.stopping, pr, from, func(ev *pb.ProcessEvent) error { return stream.Send(&pb.ConnectResponse{Event: ev}) }))
}

func (p *processService) List(ctx context.Context, req *connect.Request[pb.ListRequest]) (*connect.Response[pb.ListResponse], error) {
	c, err := p.s.envdCaller(ctx, req.Header())
	if err != nil {
		return nil, p.s.rpcError(ctx, err)
	}
	out := &pb.ListResponse{}
	for _, pr := range p.s.procs.running(c.sandbox) {
		out.Processes = append(out.Processes, &pb.ProcessInfo{Pid: pr.pid, Tag: pr.tag, Config: pr.cfg})
	}
	return connect.NewResponse(out), nil
}

func (p *processService) SendSignal(ctx context.Context, req *connect.Request[pb.SendSignalRequest]) (*connect.Response[pb.SendSignalResponse], error) {
	c, err := p.s.envdCaller(ctx, req.Header())
	if err != nil {
		return nil, p.s.rpcError(ctx, err)
	}
	switch req.Msg.GetSignal() {
	case pb.Signal_SIGNAL_SIGKILL, pb.Signal_SIGNAL_SIGTERM:
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("signal must be SIGNAL_SIGKILL or SIGNAL_SIGTERM"))
	}
	pr, err := p.s.procs.find(c.sandbox, req.Msg.GetProcess())
	if err != nil {
		return nil, p.s.rpcError(ctx, err)
	}
	// Both end the exec: rung cancels it, which kills what it runs.
	pr.kill()
	return connect.NewResponse(&pb.SendSignalResponse{}), nil
}

// processTable holds the commands Start began, by sandbox, so that List,
// Connect and SendSignal find them by pid. A process leaves it when its
// sandbox is killed or when it has ended and maxEnded newer ones have.
type processTable struct {
	mu    sync.Mutex // guards the fields below
	next  uint32
	procs map[string][]*proc // by sandbox id, oldest first
	wg    sync.WaitGroup     // the processes' goroutines
}

// maxEnded bounds the ended processes kept per sandbox for a late Connect.
const maxEnded = 64

func newProcessTable() *processTable {
	return &processTable{next: 1000, procs: map[string][]*proc{}}
}

// proc is one command. Its events are kept, in order, until it leaves the
// table; readers follow them by index and wait on changed, so the
// producer never waits for a reader.
type proc struct {
	pid    uint32
	tag    *string
	cfg    *pb.ProcessConfig
	cancel context.CancelFunc
	stdin  *stdinPipe // nil when Start asked for none
	term   *termQueue // a PTY's input; nil without a PTY

	mu      sync.Mutex // guards the fields below
	events  []*pb.ProcessEvent
	done    bool
	killed  bool
	cut     bool          // ended with its sandbox: no end event, streams are cut
	changed chan struct{} // closed and replaced at each change
}

// startSpec is what the table keeps of a process Start began.
type startSpec struct {
	cfg      *pb.ProcessConfig
	tag      *string
	deadline time.Time  // the process is killed then
	stdin    *stdinPipe // nil: none; closed when the process ends
	term     *termQueue // nil: no PTY; closed when the process ends
}

// start runs fn in a goroutine of the table's under a context that ends
// at spec.deadline or at kill, and returns the process.
func (t *processTable) start(sandbox string, spec startSpec, fn func(context.Context, *proc)) *proc {
	ctx, cancel := context.WithDeadline(context.Background(), spec.deadline)
	t.mu.Lock()
	t.next++
	pr := &proc{pid: t.next, tag: spec.tag, cfg: spec.cfg, cancel: cancel, stdin: spec.stdin, term: spec.term, changed: make(chan struct{})}
	list := append(t.procs[sandbox], pr)
	if n := len(list); n > maxEnded {
		// Drop the oldest ended processes beyond the bound.
		kept := list[:0]
		for i, q := range list {
			if q.ended() && len(list)-i > maxEnded {
				continue
			}
			kept = append(kept, q)
		}
		list = kept
	}
	t.procs[sandbox] = list
	t.mu.Unlock()
	t.wg.Go(func() { // ends when the exec returns: at its end, deadline or kill
		defer cancel()
		fn(ctx, pr)
		if pr.stdin != nil {
			pr.stdin.close() // a reader still waiting for input gets EOF
		}
		if pr.term != nil {
			pr.term.close()
		}
		pr.finish()
	})
	return pr
}

func (t *processTable) find(sandbox string, sel *pb.ProcessSelector) (*proc, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, pr := range t.procs[sandbox] {
		switch s := sel.GetSelector().(type) {
		case *pb.ProcessSelector_Pid:
			if pr.pid == s.Pid {
				return pr, nil
			}
		case *pb.ProcessSelector_Tag:
			if pr.tag != nil && *pr.tag == s.Tag {
				return pr, nil
			}
		}
	}
	return nil, rung.Errorf(rung.ErrNotFound, "process not found")
}

func (t *processTable) running(sandbox string) []*proc {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(t.procs[sandbox]), (*proc).ended)
}

// dropSandbox kills a sandbox's processes and forgets them.
func (t *processTable) dropSandbox(sandbox string) {
	t.mu.Lock()
	list := t.procs[sandbox]
	delete(t.procs, sandbox)
	t.mu.Unlock()
	for _, pr := range list {
		pr.kill()
	}
}

func (t *processTable) close() {
	t.mu.Lock()
	var all []*proc
	for _, l := range t.procs {
		all = append(all, l...)
	}
	t.mu.Unlock()
	for _, pr := range all {
		pr.kill()
	}
	t.wg.Wait()
}

func (pr *proc) add(ev *pb.ProcessEvent) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.events = append(pr.events, ev)
	close(pr.changed)
	pr.changed = make(chan struct{})
}

func (pr *proc) finish() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.done = true
	close(pr.changed)
	pr.changed = make(chan struct{})
}

// since returns the events from index i, whether the process is done,
// and a channel closed at the next change.
func (pr *proc) since(i int) ([]*pb.ProcessEvent, bool, <-chan struct{}) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.events[min(i, len(pr.events)):], pr.done, pr.changed
}

// liveFrom is where a Connect starts: now, or at the end event of a
// process that has ended.
func (pr *proc) liveFrom() int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.done {
		return len(pr.events) - 1
	}
	return len(pr.events)
}

func (pr *proc) ended() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.done
}

func (pr *proc) kill() {
	pr.mu.Lock()
	pr.killed = true
	pr.mu.Unlock()
	pr.cancel()
}

// cutStream marks pr as ended with its sandbox (see follow).
func (pr *proc) cutStream() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.cut = true
}

func (pr *proc) wasCut() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.cut
}

func (pr *proc) signaled() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.killed
}
