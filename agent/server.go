package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ServerConfig configures [Serve].
type ServerConfig struct {
	// SocketDir is the directory shared with the host; the agent listens
	// on SocketDir/agent.sock. Required unless Listener is set.
	SocketDir string
	// Listener, when set, is a socket the host made and already listens
	// on (passed to the container's init); the agent serves it instead of
	// creating SocketDir/agent.sock. Connections made before the agent
	// runs wait in its backlog.
	Listener net.Listener
	// Grace is how long commands get to exit after the agent forwards
	// them a SIGTERM or SIGINT, before it kills them; default
	// [DefaultGrace]. A second signal ends the grace at once: the host
	// stops a container with one signal, and sends another when its own
	// grace is over.
	Grace time.Duration
	// DetachStdio points the agent's own stdin, stdout and stderr at
	// /dev/null once it is about to serve. In a container they are a host
	// file (the runtime's log), which commands could open through /proc/1/fd
	// under gVisor, where not being dumpable does not shield the agent:
	// they could grow it past every quota, or forge the lines the daemon
	// quotes when a start fails. What the agent says before it serves
	// still reaches the log.
	DetachStdio bool
	Logger      *slog.Logger // nil discards
}

// DefaultGrace is [ServerConfig.Grace]'s default: a backstop, longer than
// the host's own grace, which ends it with a second signal.
const DefaultGrace = 30 * time.Second

// Serve runs the agent until ctx is done or the process gets SIGTERM or
// SIGINT. Then it stops taking commands (503), forwards the signal (SIGTERM
// when ctx is done) to every command's process group and waits for them
// to exit, up to [ServerConfig.Grace] or a second signal, and kills what
// is left. Every command's exit is still reported, to its exec and to
// followers of a background process's output, before Serve returns. A
// ctx canceled by the signal itself (signal.NotifyContext, as cmd/rung's
// is) counts with it as one. It reaps every child of the process, so it
// must be the only code in the process that waits for children (it is
// meant to run as PID 1).
func Serve(ctx context.Context, cfg ServerConfig) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Commands run as root beside the agent, without CAP_SYS_PTRACE: a
	// process that is not dumpable cannot be traced by them, so none can
	// take over the agent to forge results or read other commands' output.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	ln := cfg.Listener
	if ln == nil {
		l, err := Listen(cfg.SocketDir)
		if err != nil {
			return err
		}
		ln = l
	}
	// os probes pidfd support once, forking a child, on the first process
	// start; do it now, while the host is still setting up, rather than
	// in the first exec.
	go func() {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Release()
		}
	}()

	s := &server{reaper: newReaper(), log: log, groups: map[int]struct{}{}, procs: map[string]*process{}}
	stop := make(chan struct{})
	go s.reaper.run(stop) // stops when stop is closed; Serve waits on s.reaper.done

	sigs := make(chan os.Signal, 2) // the first signal and the one that ends the grace
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT)
	defer signal.Stop(sigs)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("POST /v1/exec", s.handleExec)
	mux.HandleFunc("POST /v1/processes", s.handleStartProcess)
	mux.HandleFunc("GET /v1/processes", s.handleListProcesses)
	mux.HandleFunc("GET /v1/processes/{id}/output", s.handleOutput)
	mux.HandleFunc("POST /v1/processes/{id}/stdin", s.handleStdin)
	mux.HandleFunc("POST /v1/processes/{id}/signal", s.handleSignal)
	mux.HandleFunc("POST /v1/processes/{id}/resize", s.handleResize)
	mux.HandleFunc("GET /v1/ready", s.handleReady)
	mux.HandleFunc("GET /v1/tunnel", s.handleTunnel)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if cfg.DetachStdio {
		if err := detachStdio(); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }() // stops on srv.Close below

	grace := cfg.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	var err error
	select {
	case <-ctx.Done():
		// Most likely canceled by the SIGTERM that is also on its way to
		// sigs: drain counts that one as this one.
		log.Info("agent stopping", "cause", context.Cause(ctx).Error())
		s.drain(unix.SIGTERM, sigs, 0, grace)
	case sig := <-sigs:
		log.Info("agent stopping", "signal", sig.String())
		s.drain(sig.(unix.Signal), sigs, 1, grace)
	case err = <-serveErr:
		s.stopTaking(unix.SIGKILL)
	}
	s.signalAll(unix.SIGKILL)
	s.running.Wait()
	// The server stays up until every command's exit is out: a follower
	// of a process's output gets its exit frame. Shutdown waits for those
	// handlers; a readiness wait is cut off.
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	srv.Shutdown(sctx)
	cancel()
	srv.Close()
	close(stop)
	<-s.reaper.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

type server struct {
	reaper  *reaper
	log     *slog.Logger
	running sync.WaitGroup // commands in flight; Add only through begin

	mu       sync.Mutex          // guards the fields below
	groups   map[int]struct{}    // process groups of running commands
	procs    map[string]*process // background processes by id
	stopping unix.Signal         // non-zero once the agent takes no more commands: the signal they got
}

func (s *server) signalAll(sig unix.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pgid := range s.groups {
		unix.Kill(-pgid, sig)
	}
}

// errStopping refuses a command once the agent is stopping.
var errStopping = errors.New("agent stopping")

// begin counts one command in flight, or refuses it with errStopping
// once the agent is stopping, so that running.Wait never races an Add.
func (s *server) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping != 0 {
		return errStopping
	}
	s.running.Add(1)
	return nil
}

// stopTaking makes begin refuse from now on; a command that began but is
// not yet spawned gets sig as it is (see spawn).
func (s *server) stopTaking(sig unix.Signal) {
	s.mu.Lock()
	s.stopping = sig
	s.mu.Unlock()
}

// drain forwards sig to every command and waits until they have all
// exited, grace has passed, or a second signal arrives: seen is how many
// signals Serve has taken from sigs already (0 when ctx, not a signal,
// started the stop).
func (s *server) drain(sig unix.Signal, sigs <-chan os.Signal, seen int, grace time.Duration) {
	s.stopTaking(sig)
	s.signalAll(sig)
	idle := make(chan struct{})
	go func() { // ends once every command has ended, which Serve's SIGKILL guarantees
		s.running.Wait()
		close(idle)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	for {
		select {
		case <-idle:
			return
		case <-t.C:
			s.log.Info("agent grace over", "grace", grace.String())
			return
		case again := <-sigs:
			if seen++; seen >= 2 {
				s.log.Info("agent stopping now", "signal", again.String())
				return
			}
		}
	}
}

func (s *server) handleExec(w http.ResponseWriter, r *http.Request) {
	// Full duplex from the start: a streamed stdin is read while output
	// is written, and a refusal must not first wait for the end of a body
	// that is still streaming (the server otherwise drains it).
	rc := http.NewResponseController(w)
	if err := rc.EnableFullDuplex(); err != nil {
		http.Error(w, "exec: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var req ExecRequest
	head := &io.LimitedReader{R: r.Body, N: maxExecRequest} // the JSON object; a streamed stdin follows
	dec := json.NewDecoder(head)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "bad exec request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if req.PTY != nil {
		if err := req.PTY.check(); err != nil {
			http.Error(w, "bad exec request: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	var stdin io.Reader = bytes.NewReader(req.Stdin)
	var stream io.Reader // a PTY's streamed input messages
	stopStdin := func() {}
	if req.StdinStream {
		if len(req.Stdin) > 0 && req.PTY == nil {
			http.Error(w, "bad exec request: stdin and stdin_stream both set", http.StatusBadRequest)
			return
		}
		stdin = io.MultiReader(dec.Buffered(), r.Body)
		stream = stdin
		// Once the command is over, a stdin copier blocked reading the
		// body must return before the handler does.
		stopStdin = func() { rc.SetReadDeadline(time.Now()) }
	}
	if err := s.begin(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer s.running.Done()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	out := &frameWriter{w: w, enc: json.NewEncoder(w)}
	if f, ok := w.(http.Flusher); ok {
		out.flush = f.Flush
		if req.StdinStream {
			// The headers now, not with the first frame: the client's
			// round trip is then over, and its end (or the host's) no
			// longer waits on a request body that is still streaming.
			f.Flush()
		}
	}
	var exit Exit
	if req.PTY != nil {
		exit = s.runPTY(r.Context(), req, stream, stopStdin, out)
	} else {
		exit = s.run(r.Context(), req, stdin, stopStdin, out)
	}
	out.send(Frame{Exit: &exit})
}

// maxExecRequest bounds an exec request's JSON (inline stdin included);
// a streamed stdin after it is not bounded.
const maxExecRequest = 64 << 20

// frameWriter serialises frames from the stdout and stderr copiers.
type frameWriter struct {
	mu    sync.Mutex // guards the fields below and writes to w
	w     io.Writer
	enc   *json.Encoder
	flush func()
	seq   int64
	bytes int64
	limit int64
	over  bool // output limit reached
	dead  bool // client gone
}

func (f *frameWriter) send(fr Frame) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sendLocked(fr)
}

func (f *frameWriter) sendLocked(fr Frame) {
	if f.dead {
		return
	}
	f.seq++
	fr.Seq = f.seq
	if err := f.enc.Encode(fr); err != nil {
		f.dead = true
		return
	}
	if f.flush != nil {
		f.flush()
	}
}

// chunk sends data from stream, cutting it at the output limit. It
// reports false once the limit is reached.
func (f *frameWriter) chunk(stream string, data []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.over {
		return false
	}
	if room := f.limit - f.bytes; int64(len(data)) > room {
		data = data[:room]
		f.over = true
	}
	f.bytes += int64(len(data))
	if len(data) > 0 {
		f.sendLocked(Frame{Stream: stream, Data: append([]byte(nil), data...)})
	}
	return !f.over
}

// run runs req with stdin as its standard input. Once the command has
// exited, stopStdin is called and run waits for the stdin copier.
func (s *server) run(ctx context.Context, req ExecRequest, stdin io.Reader, stopStdin func(), out *frameWriter) Exit {
	out.limit = req.MaxOutput
	if out.limit <= 0 {
		out.limit = DefaultMaxOutput
	}
	sp, err := s.spawn(command{argv: req.Argv, command: req.Command, shell: req.Shell, dir: req.Dir, env: req.Env, user: req.User})
	if err != nil {
		code := 126
		if _, lookErr := lookPath(firstArg(req), req.Env); lookErr != nil {
			code = 127
		}
		return Exit{Code: code, Reason: "start_failed", Error: startError(err)}
	}
	pid := sp.pid
	defer s.forget(pid)
	stdinW, outR, errR, status := sp.stdin, sp.stdout, sp.stderr, sp.status

	stdinDone := make(chan struct{})
	go func() { // ends at stdin's end, when the command closes stdin or exits, or at stopStdin
		defer close(stdinDone)
		io.Copy(stdinW, stdin)
		stdinW.Close()
	}()
	var copiers sync.WaitGroup
	limitHit := make(chan struct{}, 2) // one send per copier at most
	copyStream := func(name string, r *os.File) {
		defer copiers.Done()
		defer r.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 && !out.chunk(name, buf[:n]) {
				limitHit <- struct{}{}
				io.Copy(io.Discard, r) // drain so the command is not stuck
				return
			}
			if err != nil {
				return
			}
		}
	}
	copiers.Add(2)
	go copyStream("stdout", outR) // ends at EOF: every writer closed or killed
	go copyStream("stderr", errR)
	drained := make(chan struct{})
	go func() { // ends when both copiers have
		copiers.Wait()
		close(drained)
	}()

	start := time.Now()
	ws, reason := waitCommand(ctx, status, req.TimeoutMS, limitHit, func() { unix.Kill(-pid, unix.SIGKILL) })
	if reason == "" {
		// What the command left running may still hold its output open:
		// a process substitution's reader (`echo hi > >(tr a-z A-Z)`)
		// writes after the shell has exited, and a shell's caller reading
		// to the end of the output sees it. It gets drainGrace to finish
		// (within the exec's timeout); then the command's whole process
		// group goes, so a long-lived background child (`server &`) cannot
		// hold the exec open.
		grace := drainGrace
		if req.TimeoutMS > 0 {
			grace = min(grace, time.Duration(req.TimeoutMS)*time.Millisecond-time.Since(start))
		}
		waitDrained(ctx, drained, grace)
	}
	unix.Kill(-pid, unix.SIGKILL)
	copiers.Wait()
	stopStdin()
	<-stdinDone
	return commandExit(ws, reason, out)
}

// drainGrace is how long an exec's output may stay open after its
// command exited, for what the command left running to finish writing.
const drainGrace = 200 * time.Millisecond

// waitDrained waits until drained closes, grace passes or ctx ends.
func waitDrained(ctx context.Context, drained <-chan struct{}, grace time.Duration) {
	if grace <= 0 {
		return
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
	case <-ctx.Done():
	}
}

// waitCommand waits for a command's exit status. A timeout (timeoutMS > 0),
// the output limit (limitHit) or ctx's end kills it (once for each) and
// names the reason, which the status's own then yields to; "" when the
// command ended by itself.
func waitCommand(ctx context.Context, status <-chan unix.WaitStatus, timeoutMS int64, limitHit <-chan struct{}, kill func()) (unix.WaitStatus, string) {
	var timeout <-chan time.Time
	if timeoutMS > 0 {
		t := time.NewTimer(time.Duration(timeoutMS) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	reason := ""
	for {
		select {
		case ws := <-status:
			return ws, reason
		case <-timeout:
			reason, timeout = "timeout", nil
			kill()
		case <-limitHit:
			if reason == "" {
				reason = "output_limit"
			}
			kill()
		case <-ctx.Done():
			reason = "canceled"
			kill()
			ctx = context.Background() // fire once
		}
	}
}

// commandExit is how a command ended, as its exit frame reports it.
func commandExit(ws unix.WaitStatus, reason string, out *frameWriter) Exit {
	exit := exitOf(ws)
	if reason != "" {
		exit.Reason = reason
	}
	out.mu.Lock()
	exit.Truncated = out.over
	out.mu.Unlock()
	return exit
}

func startError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
}

// firstArg is the program an exec request names.
func firstArg(req ExecRequest) string {
	if len(req.Argv) > 0 {
		return req.Argv[0]
	}
	if req.Shell != "" {
		return req.Shell
	}
	return "/bin/sh"
}

// lookPath finds file in the PATH of env (not the agent's own).
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found", file)
}

// detachStdio points descriptors 0, 1 and 2 at /dev/null (see
// [ServerConfig.DetachStdio]).
func detachStdio() error {
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("detach stdio: %w", err)
	}
	defer unix.Close(null)
	for fd := range 3 {
		if err := unix.Dup3(null, fd, 0); err != nil {
			return fmt.Errorf("detach stdio: %w", err)
		}
	}
	return nil
}
