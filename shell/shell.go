package shell

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"mvdan.cc/sh/v3/syntax"
	"rung.dev/rung/storage"
)

// Config configures a [Shell]. Only FS is required.
type Config struct {
	FS       storage.FS      // the sandbox's file view; required
	Tools    map[string]Tool // commands beyond the builtins; nil means builtins only
	Limits   Limits          // zero fields take the defaults documented on Limits
	Hostname string          // $HOSTNAME; default "rung"
	User     string          // $USER; default "root"
	// Seed seeds $RANDOM; zero means a fixed default, so runs are
	// reproducible.
	Seed uint64
	// Memory caps the bytes all the execs sharing it hold together (the
	// daemon's); nil means no cap beyond each exec's Limits.MemoryBytes.
	Memory *MemoryPool
	// RootInfo, when the view does not hold the container's root file
	// system, answers a stat of / (cd /, ls -la in /workspace lists ..)
	// with what the container's commands would see; an error refuses the
	// path at run time, so the exec goes to the container. Nil (no
	// container tier) answers with the view's own root.
	RootInfo func() (fs.FileInfo, error)
	// RootFile, when the view does not hold the container's root file
	// system, reads one of the files of it that tools consult (the
	// account files /etc/passwd and /etc/group, which ls -l, stat and
	// find -printf name owners from) as the container's commands would
	// see it; an error refuses the path at run time, so the exec goes to
	// the container. Nil refuses them as any path outside /workspace and
	// /tmp.
	RootFile func(name string) ([]byte, error)
	// Sched shares CPU between the execs of every Shell using it; nil
	// means one scheduler shared by the whole process, with a run slot
	// per GOMAXPROCS.
	Sched *Scheduler
}

// Limits bound one exec. A breach ends the exec with exit status 126 and a
// message on stderr naming the limit. Zero fields mean the default.
type Limits struct {
	Commands       int64 // simple commands executed; default 1,000,000
	LoopIterations int64 // loop iterations in all loops together; default 1,000,000
	OutputBytes    int64 // stdout plus stderr bytes; default 16 MiB
	StringBytes    int64 // longest variable value or expansion; default 16 MiB
	ArrayElems     int64 // largest array; default 1,000,000
	Depth          int   // function, source and eval nesting; default 1,000
	WriteBytes     int64 // bytes written to files through the exec; default 1 GiB
	// MemoryBytes bounds the bytes the interpreter and its tools hold for
	// the exec at once: variables, command substitution output, here
	// documents, tools' buffers (see [Call.Reserve]); default 256 MiB.
	// sort writes sorted runs to the sandbox's /tmp rather than pass it.
	MemoryBytes int64
	// CPUTime bounds the time the exec's goroutines hold a run slot of
	// the scheduler (see [Scheduler]): CPU time, as close as Go can tell;
	// waiting for a slot, a pipe or input does not count. Default 60 s.
	CPUTime time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.Commands <= 0 {
		l.Commands = 1_000_000
	}
	if l.LoopIterations <= 0 {
		l.LoopIterations = 1_000_000
	}
	if l.OutputBytes <= 0 {
		l.OutputBytes = 16 << 20
	}
	if l.StringBytes <= 0 {
		l.StringBytes = 16 << 20
	}
	if l.ArrayElems <= 0 {
		l.ArrayElems = 1_000_000
	}
	if l.Depth <= 0 {
		l.Depth = 1000
	}
	if l.WriteBytes <= 0 {
		l.WriteBytes = 1 << 30
	}
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = 256 << 20
	}
	if l.CPUTime <= 0 {
		l.CPUTime = time.Minute
	}
	return l
}

// Request is one command line to run.
type Request struct {
	Script string
	Dir    string            // working directory, an absolute sandbox path; default /workspace
	Env    map[string]string // exported on top of the default environment
	Stdin  io.Reader         // nil means empty
	Stdout io.Writer         // nil means discard
	Stderr io.Writer         // nil means discard
	// Lease is memory admitted for this exec by [Shell.Admit]; Run takes
	// it over and gives it back when it returns. Nil: Run admits the exec
	// itself, and ends it at once with limit daemon_memory_bytes when the
	// pool (Config.Memory) has no room.
	Lease *Lease
	// Tenant and Sandbox name who runs the exec, for fair sharing of CPU
	// between tenants, then sandboxes (see [Scheduler]). "" is one
	// anonymous tenant or sandbox.
	Tenant, Sandbox string
	// Program, when set, is Script as [Shell.CheckProgram] admitted it:
	// Run runs it without parsing it again (Script is ignored), and
	// checks the text of each script file it reads (bash x.sh, . x,
	// ./x) the same way before running it, refusing one it does not
	// admit (Result.Unsupported).
	Program *Program
	// ShellName is $0 of the exec's shell, which bash also names itself
	// by in its messages ("/bin/bash: line 1: ..." when the container
	// runs /bin/bash -c); default "bash".
	ShellName string
	// StopUnsupported ends the exec at the first thing this tier cannot
	// do faithfully, with exit status [ExitUnsupported] and
	// Result.Unsupported set, instead of going on as bash would after
	// "command not found": nothing after the refusal runs, so the
	// caller can tell from Result.Changed and the output it received
	// whether the exec had any effect, and run it elsewhere if not.
	StopUnsupported bool
	// Login, when set, runs Program as a login shell (bash -l -c) would:
	// after the startup files, which are checked as the run reaches
	// them, and checked again against the PATH they leave (see [Login]).
	// It needs Program; what the tier cannot follow refuses the exec
	// (Result.Unsupported) before it has any effect of its own.
	Login *Login
	// BeforeChange, when set, is called before the exec's first change
	// to a file, and the change waits for it; an error fails the change
	// (EIO) and every one after it. The controller makes the exec's
	// journal entry durable there, so that an exec that changed nothing
	// need not wait for it before running.
	BeforeChange func() error
}

// Result is how an exec ended. A non-zero ExitCode is not an error.
type Result struct {
	ExitCode int
	// Unsupported is non-nil (wrapping ErrUnsupported) when the exec
	// reached something this tier cannot do faithfully.
	Unsupported error
	// Limit names the limit that ended the exec ("wall_time",
	// "output_bytes", ...), "canceled" when the caller's context was
	// cancelled (not a deadline), or "" when none did. Unless "", ExitCode
	// is 126.
	Limit string
	// Changed reports whether the exec created, wrote, removed, renamed
	// or changed the mode or times of a file through the file view (a
	// change that failed does not count).
	Changed bool
	// Stopped reports that the exec ended at a refusal
	// (Request.StopUnsupported): ExitCode is [ExitUnsupported].
	Stopped bool
}

// Shell runs scripts against one sandbox's file view. It is safe for
// concurrent use: each Run has its own interpreter state.
type Shell struct {
	cfg Config
	// base is the initial variables of the last exec, shared read-only
	// (see scope). The next exec with the same environment and directory
	// starts from them, and from the environment list derived from them,
	// instead of building both again; its first change copies them.
	// A pointer, because each exec runs on a copy of the Shell.
	base *atomic.Pointer[baseVars]
	// login is what the last login exec's startup files left, for the
	// next one to start from (loginstate.go). A pointer, as base.
	login *atomic.Pointer[loginOutcome]
	// noSched runs execs outside any scheduler, with no CPU budget: only
	// for benchmarks of the scheduler's own cost (export_test.go).
	noSched bool
}

// baseVars is one exec's initial variables and what they were built from.
type baseVars struct {
	dir    string
	env    map[string]string // a copy of the request's
	vars   map[string]*variable
	frozen *frozenVars
}

// New returns a Shell for cfg.
func New(cfg Config) *Shell {
	return &Shell{cfg: cfg, base: new(atomic.Pointer[baseVars]), login: new(atomic.Pointer[loginOutcome])}
}

// Run runs req.Script to completion, or until ctx is done (then the
// result's Limit is "wall_time" at a deadline, "canceled" otherwise). It
// never panics on any input: a panic in the interpreter or a tool is
// recovered and reported as exit status 126 with a message on stderr.
//
// Background jobs (cmd &) run concurrently in goroutines, each with a
// copy of the shell's state; Run waits for all of them before it returns
// (a job still running at the end is waited for, as if the script ended
// with wait). $$ is 1; subshells and jobs get increasing $BASHPID values.
func (s *Shell) Run(ctx context.Context, req Request) (res Result) {
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Every use of the file view goes through r.sh.sh.cfg.FS, so a copy
	// of s carries the exec's own (one allocation for all of it): a
	// trackFS, over the exec's view of the root when the view is a
	// storage.Root, whose stat cache reads pending change events once per
	// exec rather than before every lookup (see storage.ExecView).
	es := &execShell{Shell: *s}
	es.track.FS = s.cfg.FS
	if root, ok := s.cfg.FS.(*storage.Root); ok {
		es.view.Root = root
		es.track.FS = &es.view
	}
	es.cfg.FS = &es.track
	s = &es.Shell
	sh := &shared{sh: s, limits: s.cfg.Limits.withDefaults(), cancel: cancel, start: time.Now(),
		stopUnsupported: req.StopUnsupported, track: &es.track, beforeChange: req.BeforeChange}
	es.track.sh = sh
	if req.Login != nil {
		es.track.login = newLoginFiles(req.Login)
		sh.tainted, sh.taintedBodies = map[string]bool{}, map[*syntax.Stmt]string{}
	}
	sh.pids.Store(1)
	defer s.admit(cctx, sh, req)()
	stdout := req.Stdout
	if stdout == nil {
		stdout = io.Discard
	}
	stderr := req.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	stdin := req.Stdin
	switch stdin.(type) {
	case nil:
		stdin = strings.NewReader("")
	case *strings.Reader, *bytes.Reader:
	default:
		// A read may wait for the client: not with a run slot held.
		stdin = blockingReader{r: stdin, x: sh.cpu, ctx: cctx}
	}
	out := &outWriter{w: stdout, sh: sh}
	errw := out
	if stderr != stdout {
		errw = &outWriter{w: stderr, sh: sh}
	}
	r := s.newRunner(cctx, sh, req)
	r.recountAt = min(minRecount, sh.limits.MemoryBytes)
	r.fds = map[int]*fdesc{
		0: {r: stdin, isStdin: true},
		1: {w: out},
		2: {w: errw},
	}
	status := 0
	func() {
		defer func() {
			if p := recover(); p != nil {
				fmt.Fprintf(errw, "bash: internal error: %v\n", p)
				sh.panics(p, nil)
				status = 126
				return
			}
		}()
		switch {
		case req.Login != nil:
			sh.program = req.Program
			status = r.runProtected(func(r *runner) { r.loginExec(req.Program, req.Script, req.Env) })
		case req.Program != nil:
			sh.program = req.Program
			status = r.runProtected(func(r *runner) { r.program(req.Program) })
		default:
			status = r.runProtected(func(r *runner) { r.script(req.Script) })
		}
	}()
	if sh.njobs.Load() > 0 {
		// Only a job still running is worth the slot: taking it back may
		// mean waiting a slice.
		released := sh.cpu.block()
		sh.jobs.Wait()
		sh.cpu.unblock(cctx, released)
	}
	sh.mu.Lock()
	for _, c := range sh.closers {
		c.Close()
	}
	sh.closers = nil
	res.Unsupported = sh.unsupported
	limit := sh.limit
	sh.mu.Unlock()
	res.ExitCode = status
	res.Changed = es.track.changed.Load()
	if errors.Is(context.Cause(cctx), errRefused) && ctx.Err() == nil {
		res.Stopped, res.ExitCode = true, ExitUnsupported
		return res
	}
	if limit == "" && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		limit = "wall_time"
		fmt.Fprintf(errw.w, "bash: limit exceeded: wall_time (%s)\n", ctx.Err())
	} else if limit == "" && ctx.Err() != nil {
		// Not a limit: the caller went away (or the sandbox is deleted).
		limit = "canceled"
		fmt.Fprintf(errw.w, "bash: canceled\n")
	} else if limit != "" {
		var le *limitError
		if errors.As(context.Cause(cctx), &le) {
			fmt.Fprintf(errw.w, "bash: limit exceeded: %s (max %s)\n", le.name, le.shown())
		}
	}
	if limit != "" {
		res.Limit = limit
		res.ExitCode = 126
	}
	return res
}

// admit gives the exec its memory budget, with room in the daemon's
// pool (the request's lease, or one taken now: a full pool ends the exec
// with daemon_memory_bytes before it runs anything), and then its share of
// the scheduler and a first run slot (waiting for it is wall time, not CPU
// time; a context that ends first ends the exec as usual). The function it
// returns gives both back.
func (s *Shell) admit(ctx context.Context, sh *shared, req Request) (done func()) {
	sh.mem = memBudget{max: sh.limits.MemoryBytes, lease: req.Lease, sh: sh}
	if sh.mem.lease == nil && s.cfg.Memory != nil {
		l, err := s.cfg.Memory.Admit(ctx)
		if err != nil {
			sh.breach("daemon_memory_bytes", s.cfg.Memory.max)
		}
		sh.mem.lease = l
	}
	if !s.noSched {
		sched := s.cfg.Sched
		if sched == nil {
			sched = defaultScheduler()
		}
		sh.cpu = &sh.cpuState
		_ = sched.start(ctx, sh.cpu, req.Tenant, req.Sandbox, sh.limits.CPUTime, sh)
	}
	sh.rootCtx, sh.toolCtx = ctx, schedCtx{ctx, sh.cpu}
	return func() {
		sh.cpu.finish()
		sh.mem.lease.Release()
	}
}

// Admit takes room in the shell's memory pool (Config.Memory) for an exec
// about to run, waiting briefly when the pool is full; pass the lease in
// the exec's [Request]. It fails with a *rung.LimitError for
// "daemon_memory_bytes" (rung.ErrLimit) when the pool stays full. Without
// a pool it returns a nil lease. The caller releases the lease when it
// does not run the exec after all.
func (s *Shell) Admit(ctx context.Context) (*Lease, error) {
	return s.cfg.Memory.Admit(ctx)
}

// execShell is a Shell whose file view is one exec's: a trackFS over
// the Shell's view, or over an exec's view of it when it is a Root.
type execShell struct {
	Shell
	track trackFS
	view  storage.ExecView
}

// panics records a recovered panic; the exec ends with status 126.
func (s *shared) panics(p any, stack []byte) {
	_ = stack
	s.setUnsupported(fmt.Errorf("internal error: %v: %w", p, ErrUnsupported))
}

func (s *Shell) newRunner(ctx context.Context, sh *shared, req Request) *runner {
	dir := req.Dir
	if dir == "" {
		dir = "/workspace"
	}
	seed := s.cfg.Seed
	if seed == 0 {
		seed = 0x5eed
	}
	r := &runner{
		ctx:     ctx,
		sh:      sh,
		scopes:  []*scope{nil},
		funcs:   map[string]*syntax.Stmt{},
		alias:   map[string]string{},
		traps:   map[string]string{},
		dir:     dir,
		shopts:  map[string]bool{"globskipdots": true, "patsub_replacement": true, "sourcepath": true},
		bashpid: 1,
		arg0:    cmp.Or(req.ShellName, "bash"),
		rand:    rand.NewPCG(seed, seed^0x9e3779b97f4a7c15),
		optind:  1,
		umask:   0o022,
		hashall: true,
	}
	if b := s.base.Load(); b != nil && b.dir == dir && maps.Equal(b.env, req.Env) {
		b.frozen.refs.Add(1)
		r.scopes[0] = &scope{vars: b.vars, frozen: b.frozen}
		return r
	}
	host := s.cfg.Hostname
	if host == "" {
		host = "rung"
	}
	user := s.cfg.User
	if user == "" {
		user = "root"
	}
	r.scopes[0] = &scope{vars: make(map[string]*variable, len(req.Env)+len(shellVars)+12)}
	// The initial variables are carved from one slice: one allocation per
	// exec instead of one per variable.
	vars := r.scopes[0].vars
	pool := make([]variable, 0, 10+len(req.Env)+len(shellVars))
	newVar := func(v variable) *variable {
		pool = append(pool, v)
		return &pool[len(pool)-1]
	}
	for _, kv := range [...][2]string{
		{"HOME", "/workspace"}, {"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"USER", user},
		{"LOGNAME", user}, {"HOSTNAME", host}, {"SHELL", "/bin/bash"}, {"PWD", dir},
		{"SHLVL", "1"}, {"LANG", "C.UTF-8"}, {"TERM", "dumb"},
	} {
		if _, ok := req.Env[kv[0]]; !ok {
			vars[kv[0]] = newVar(variable{set: true, str: kv[1], exported: true})
		}
	}
	for k, v := range req.Env {
		if validName(k) {
			vars[k] = newVar(variable{set: true, str: v, exported: true})
		}
	}
	for _, kv := range shellVars {
		if _, ok := vars[kv[0]]; !ok {
			vars[kv[0]] = newVar(variable{set: true, str: kv[1]})
		}
	}
	r.scopes[0].vars["BASH_VERSINFO"] = &variable{kind: kindIndexed, set: true, readonly: true,
		arr: arrayOf("5", "2", "15", "1", "release", "x86_64-pc-linux-gnu")}
	first := r.scopes[0]
	first.share()
	first.frozen.refs.Add(1) // the base's share, never given back
	s.base.Store(&baseVars{dir: dir, env: maps.Clone(req.Env), vars: first.vars, frozen: first.frozen})
	return r
}

// shellVars are the unexported variables every exec starts with, unless
// the request's environment sets them.
var shellVars = [...][2]string{
	{"IFS", " \t\n"}, {"PS4", "+ "}, {"OPTIND", "1"}, {"PPID", "0"}, {"UID", "0"}, {"EUID", "0"},
	{"BASH", "/bin/bash"}, {"BASH_VERSION", "5.2.15(1)-release"}, {"HOSTTYPE", "x86_64"},
	{"OSTYPE", "linux-gnu"}, {"MACHTYPE", "x86_64-pc-linux-gnu"}, {"OPTERR", "1"},
}

// script parses and runs src one line (complete command) at a time, as
// bash -c does: a syntax error stops it with status 2 after the lines
// before it ran.
func (r *runner) script(src string) {
	p, _ := parsers.Get().(*syntax.Parser)
	if p == nil {
		p = syntax.NewParser(syntax.Variant(syntax.LangBash))
	}
	if !strings.HasSuffix(src, "\n") {
		src += "\n"
	}
	// The loop never breaks: stopping the parser's iterator early, or on
	// an error, trips a range-over-func check inside it (found by FuzzRun).
	// A parse error that reparse can work around parses the rewritten
	// source again, skipping the lines that already ran.
	var err error
	done := uint(0) // the offset where the statements already run end
	for try := 0; ; try++ {
		for stmts, perr := range p.InteractiveSeq(strings.NewReader(src)) {
			if perr != nil {
				if err == nil {
					err = perr
				}
				continue
			}
			for len(stmts) > 0 && stmts[0].Pos().Offset() < done {
				stmts = stmts[1:]
			}
			if len(stmts) == 0 || err != nil || r.exiting || r.ctx.Err() != nil {
				continue
			}
			if !r.shopts["extglob"] {
				if perr := extglobOff(src, stmts); perr != nil {
					err = perr
					continue
				}
			}
			done = stmts[len(stmts)-1].End().Offset()
			r.src = src
			r.lineAliases = nil
			r.stmts(stmts)
			if r.breakN > 0 || r.contN > 0 {
				r.breakN, r.contN = 0, 0
			}
		}
		if err == nil || try == reparseMax || r.exiting || r.ctx.Err() != nil {
			break
		}
		fixed, ok := r.reparseWarn(src, err)
		if !ok {
			break
		}
		src, err = fixed, nil
	}
	// Only a parser that finished normally goes back: one unwound by a
	// panic (exit) may be mid-statement.
	parsers.Put(p)
	if err != nil && !r.exiting && r.ctx.Err() == nil {
		r.syntaxError(src, err)
	}
}

// reparseWarn is reparse for a script the runner parses: the
// warning bash would print while parsing goes to stderr.
func (r *runner) reparseWarn(src string, err error) (fixed string, ok bool) {
	fixed, warn, ok := reparse(src, err)
	if warn != "" {
		fmt.Fprintln(r.stderr(), warn)
	}
	return fixed, ok
}

// parsers keeps bash-variant parsers between scripts: a parser resets
// itself at the start of each parse and is 2 KiB of buffers to allocate.
var parsers sync.Pool

// syntaxError reports a parse error as bash does and ends the shell with
// status 2.
func (r *runner) syntaxError(src string, err error) {
	msg := err.Error()
	line := r.lineno
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		if bs, ok := translateSyntax(r.arg0, r.scriptFile, src, pe); ok {
			for _, l := range bs.lines {
				fmt.Fprintln(r.stderr(), l)
			}
			r.exiting = true
			r.exitCode = bs.status
			return
		}
		line = int(pe.Pos.Line())
		msg = pe.Text
	}
	if r.scriptFile {
		fmt.Fprintf(r.stderr(), "%s: line %d: syntax error: %s\n", r.arg0, line, msg)
	} else {
		fmt.Fprintf(r.stderr(), "%s: -c: line %d: syntax error: %s\n", r.arg0, line, msg)
	}
	r.exiting = true
	r.exitCode = 2
	if expansionSyntax(msg) {
		// bash parses these and fails when it expands them: status 1.
		r.exitCode = 1
	}
}

// expansionSyntax reports whether a parse error of mvdan/sh is one that
// bash only detects at expansion time (bad substitution, arithmetic).
func expansionSyntax(msg string) bool {
	for _, s := range []string{"parameter expansion", "arithmetic", "must be followed by an expression", "invalid parameter name", "reached ) without matching"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// evalString parses and runs src in the current shell (eval, traps).
func (r *runner) evalString(src, name string) int {
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	f, err := p.Parse(strings.NewReader(src), "")
	for try := 0; err != nil && try < reparseMax; try++ {
		fixed, ok := r.reparseWarn(src, err)
		if !ok {
			break
		}
		src = fixed
		f, err = p.Parse(strings.NewReader(src), "")
	}
	if err != nil {
		msg := err.Error()
		var pe syntax.ParseError
		if errors.As(err, &pe) {
			msg = pe.Text
		}
		fmt.Fprintf(r.stderr(), "%s: %s: line %d: syntax error: %s\n", r.arg0, name, r.lineno, msg)
		return 2
	}
	line := r.lineno
	saved := r.lineAliases
	r.lineAliases = nil // eval reads its text now: every alias so far applies
	savedSrc := r.src
	r.src = src
	r.stmts(f.Stmts)
	r.src = savedSrc
	if len(r.lineAliases) > 0 {
		// Aliases eval defined are still not in effect on this line.
		m := maps.Clone(saved)
		if m == nil {
			m = map[string]bool{}
		}
		maps.Copy(m, r.lineAliases)
		saved = m
	}
	r.lineAliases = saved
	r.lineno = line
	return r.status
}
