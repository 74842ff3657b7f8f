package shell

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"mvdan.cc/sh/v3/syntax"
)

// call runs a simple command: assignments, expansion, lookup, execution.
func (r *runner) call(c *syntax.CallExpr, redirs []*syntax.Redirect) int {
	if !r.tick() {
		return 1
	}
	r.substStatus = -1
	nproc := len(r.procs)
	defer r.closeProcs(nproc)
	if len(c.Args) == 0 {
		return r.assignOnly(c.Assigns)
	}
	if r.shopts["expand_aliases"] && len(c.Assigns) == 0 {
		if name := c.Args[0].Lit(); name != "" && !r.expandingAlias[name] && !r.lineAliases[name] {
			if val, ok := r.alias[name]; ok {
				return r.runAlias(name, val, c.Args[1:], redirs)
			}
		}
	}
	fields := r.fields(c.Args...)
	if len(fields) == 0 {
		st := r.assignOnly(c.Assigns)
		if r.substStatus >= 0 {
			return r.substStatus
		}
		return st
	}
	if len(c.Assigns) > 0 {
		tmp := &scope{vars: map[string]*variable{}, temp: true}
		r.scopes = append(r.scopes, tmp)
		defer func() {
			for i := len(r.scopes) - 1; i >= 0; i-- {
				if r.scopes[i] == tmp {
					r.scopes = append(r.scopes[:i], r.scopes[i+1:]...)
					break
				}
			}
		}()
		for _, as := range c.Assigns {
			name := as.Name.Value
			val := r.assignValue(as)
			if old := r.lookupVar(name); old != nil && old.readonly {
				r.errorf("%s: readonly variable", name)
				continue
			}
			if r.xtrace {
				r.trace(name + "=" + quoteTrace(val))
			}
			tmp.mine()[name] = &variable{set: true, str: val, exported: true}
		}
	}
	if r.xtrace {
		r.trace(strings.Join(quoteFields(fields), " "))
	}
	r.lastArg = fields[len(fields)-1]
	if len(redirs) > 0 {
		return r.withRedirs(redirs, func() int { return r.exec(fields, true) })
	}
	return r.exec(fields, true)
}

// runAlias runs a command whose first word is an alias: the alias text
// followed by the remaining words, parsed again, as bash does.
func (r *runner) runAlias(name, val string, rest []*syntax.Word, redirs []*syntax.Redirect) int {
	var sb strings.Builder
	sb.WriteString(val)
	p := syntax.NewPrinter()
	for _, w := range rest {
		sb.WriteByte(' ')
		_ = p.Print(&sb, w)
	}
	if r.expandingAlias == nil {
		r.expandingAlias = map[string]bool{}
	}
	r.expandingAlias[name] = true
	defer delete(r.expandingAlias, name)
	return r.withRedirs(redirs, func() int { return r.evalString(sb.String(), "alias") })
}

// assignOnly runs a command made only of assignments.
func (r *runner) assignOnly(assigns []*syntax.Assign) int {
	for _, as := range assigns {
		if err := r.doAssign(as, false); err != nil {
			r.errorf("%s", err)
			if _, ok := err.(readonlyErr); ok {
				r.exiting = true
				r.exitCode = 1
			}
			return 1
		}
	}
	if r.substStatus >= 0 {
		return r.substStatus
	}
	return 0
}

// doAssign performs name=value, name+=value, name[i]=value or name=(...).
func (r *runner) doAssign(as *syntax.Assign, local bool) error {
	name := as.Name.Value
	if as.Array != nil {
		return r.assignArray(name, as, nil)
	}
	var index *string
	if as.Index != nil {
		s := r.subscript(name, as.Index)
		index = &s
	}
	val := r.assignValue(as)
	if r.xtrace {
		lhs := name
		if index != nil {
			lhs += "[" + *index + "]"
		}
		op := "="
		if as.Append {
			op = "+="
		}
		r.trace(lhs + op + quoteTrace(val))
	}
	return r.assign(name, index, val, as.Append)
}

func (r *runner) assignValue(as *syntax.Assign) string {
	if as.Value == nil {
		return ""
	}
	return r.assignWord(as.Value)
}

// exec runs an expanded argv: function, builtin or tool.
func (r *runner) exec(args []string, funcs bool) int {
	name := args[0]
	if funcs {
		if body, ok := r.funcs[name]; ok {
			if r.sh.tainted != nil && r.taintedFunc(name, body) {
				return ExitUnsupported
			}
			return r.callFunc(name, body, args)
		}
	}
	if r.sh.startup {
		if rec := r.sh.track.rec; rec != nil && !startupCmds[name] {
			rec.spoil() // its effect is not the shell's state alone
		}
		if name == "id" {
			return r.loginID(args)
		}
	}
	if b, ok := builtins[name]; ok {
		return b(r, args)
	}
	return r.runTool(args)
}

// callFunc runs a shell function with its own positional parameters and
// local scope.
func (r *runner) callFunc(name string, body *syntax.Stmt, args []string) int {
	if r.depth >= r.sh.limits.Depth {
		r.sh.breach("depth", int64(r.sh.limits.Depth))
		return 126
	}
	r.depth++
	savedParams := r.params
	r.params = args[1:]
	r.scopes = append(r.scopes, &scope{vars: map[string]*variable{}})
	r.funcNames = append(r.funcNames, name)
	r.callLines = append(r.callLines, r.lineno)
	// Errors inside the body name the file the function was defined in.
	src, _ := r.sh.funcSrc.Load(body)
	name0, _ := src.(string)
	if name0 == "" {
		name0 = "environment"
	}
	r.sources = append(r.sources, name0)
	r.inFunc++
	defer func() {
		r.inFunc--
		r.sources = r.sources[:len(r.sources)-1]
		r.funcNames = r.funcNames[:len(r.funcNames)-1]
		r.callLines = r.callLines[:len(r.callLines)-1]
		r.scopes = r.scopes[:len(r.scopes)-1]
		r.params = savedParams
		r.depth--
	}()
	// The RETURN trap is not inherited unless functrace is on: the body
	// starts without it, and one the body sets runs when it returns
	// (and stays set, as in bash).
	outer, hadOuter := r.traps["RETURN"]
	if hadOuter && !r.optionOn("functrace") {
		delete(r.trapsW(), "RETURN")
	}
	r.stmt(body)
	if m, ok := r.savedOpts[len(r.funcNames)]; ok {
		for name, on := range m {
			r.setOption(name, on)
		}
		r.savedOpts = maps.Clone(r.savedOpts)
		delete(r.savedOpts, len(r.funcNames))
	}
	returned := r.returning
	if r.returning {
		r.returning = false
	}
	if cmd, ok := r.traps["RETURN"]; ok && cmd != "" && !r.exiting && !r.inTrap {
		saved := r.status
		if returned {
			r.status = r.retBefore // return N sets $? after the trap
		}
		r.inTrap = true
		r.evalString(cmd, "trap")
		r.inTrap = false
		r.returning = false
		r.status = saved
	} else if !ok && hadOuter {
		r.trapsW()["RETURN"] = outer
	}
	return r.status
}

// toolFor returns the tool for a command name (a bare name, or an
// absolute /usr/bin/NAME, /bin/NAME, /usr/local/bin/NAME).
func (r *runner) toolFor(name string) (Tool, bool) {
	tools := r.sh.sh.cfg.Tools
	if strings.Contains(name, "/") {
		dir, base := path.Split(name)
		switch dir {
		case "/usr/bin/", "/bin/", "/usr/local/bin/", "/usr/sbin/", "/sbin/":
			if t, ok := tools[base]; ok && t.Run != nil {
				return t, true
			}
			if f, ok := extraCommands[base]; ok {
				return Tool{Run: func(ctx context.Context, c *Call) int { return f(r, append([]string{base}, c.Args[1:]...)) }}, true
			}
			if _, ok := builtins[base]; ok && base != "cd" {
				return Tool{Run: func(ctx context.Context, c *Call) int {
					return builtinTool(r, c)
				}}, true
			}
		}
		return Tool{}, false
	}
	if t, ok := tools[name]; ok && t.Run != nil {
		return t, true
	}
	if f, ok := extraCommands[name]; ok {
		return Tool{Run: func(ctx context.Context, c *Call) int {
			sub := r.copyState()
			sub.fds = map[int]*fdesc{0: {r: c.Stdin}, 1: {w: c.Stdout}, 2: {w: c.Stderr}}
			for n, d := range r.fds {
				if n > 2 {
					sub.fds[n] = d
				}
			}
			defer sub.release()
			return f(sub, c.Args)
		}}, true
	}
	return Tool{}, false
}

// runTool runs a tool from cfg.Tools, or reports command not found.
func (r *runner) runTool(args []string) (status int) {
	name := args[0]
	t, ok := r.toolFor(name)
	if !ok {
		if strings.Contains(name, "/") {
			if st, ok := r.runScriptFile(args); ok {
				return st
			}
			if fi, err := r.sh.sh.cfg.FS.Stat(r.abs(name)); err == nil && fi.IsDir() {
				r.errorf("%s: Is a directory", name)
				return 126
			}
			r.errorf("%s: No such file or directory", name)
			r.sh.setUnsupported(fmt.Errorf("command %s: %w", name, ErrUnsupported))
			return 127
		}
		r.errorf("%s: command not found", name)
		r.sh.setUnsupported(fmt.Errorf("command %s not found: %w", name, ErrUnsupported))
		return 127
	}
	c := r.newCall(args)
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(fatal); ok {
				panic(p)
			}
			fmt.Fprintf(r.stderr(), "bash: %s: internal error: %v\n", name, p)
			r.sh.panics(p, debug.Stack())
			status = 126
		}
	}()
	defer c.releaseHeld()
	status = t.Run(r.toolContext(), c)
	if d := r.fds[1]; status != 0 && d != nil && d.pipe != nil && d.pipe.broken() {
		// The reader went away: a real process would die of SIGPIPE.
		status = 141
	}
	if c.Unsupported != nil {
		r.sh.setUnsupported(c.Unsupported)
	}
	return status
}

// newCall fills a Call for args with r's streams, directory and env.
func (r *runner) newCall(args []string) *Call {
	// The Call and its reservation counter are one allocation.
	box := &struct {
		c    Call
		held atomic.Int64
	}{}
	c := &box.c
	*c = Call{
		Args:   args,
		Stdin:  r.stdin(),
		Stdout: r.stdout(),
		Stderr: r.stderr(),
		Dir:    r.dir,
		Env:    r.environ(),
		FS:     r.sh.sh.cfg.FS,
		Exec:   r.execCallback,
		mem:    &r.sh.mem,
		held:   &box.held,
		cpu:    r.sh.cpu,
	}
	for n, d := range r.fds {
		if n <= 2 || d == nil {
			continue
		}
		if c.FDs == nil {
			c.FDs = map[int]any{}
		}
		switch {
		case d.r != nil && d.w != nil:
			c.FDs[n] = struct {
				readerAny
				writerAny
			}{readerAny{d.r}, writerAny{d.w}}
		case d.r != nil:
			c.FDs[n] = d.r
		default:
			c.FDs[n] = d.w
		}
	}
	return c
}

type readerAny struct {
	r interface{ Read([]byte) (int, error) }
}
type writerAny struct {
	w interface{ Write([]byte) (int, error) }
}

func (x readerAny) Read(p []byte) (int, error)  { return x.r.Read(p) }
func (x writerAny) Write(p []byte) (int, error) { return x.w.Write(p) }

// execCallback runs a tool's sub-command (xargs, find -exec, env) through
// builtins and tools, in a copy of the shell with the sub-call's streams.
func (r *runner) execCallback(ctx context.Context, sub *Call) int {
	if len(sub.Args) == 0 {
		return 0
	}
	if r.depth >= r.sh.limits.Depth {
		r.sh.breach("depth", int64(r.sh.limits.Depth))
		return 126
	}
	c := r.copyState()
	c.depth++
	c.ctx = ctx
	c.fds = map[int]*fdesc{
		0: {r: sub.Stdin},
		1: {w: sub.Stdout},
		2: {w: sub.Stderr},
	}
	if sub.Stdin == nil {
		c.fds[0] = &fdesc{r: strings.NewReader("")}
	}
	if sub.Dir != "" {
		c.dir = sub.Dir
	}
	if sub.Env != nil {
		for _, kv := range sub.Env {
			if k, v, ok := strings.Cut(kv, "="); ok && validName(k) {
				vr := c.ensureVar(k)
				vr.str, vr.set, vr.exported, vr.kind = v, true, true, kindString
			}
		}
	}
	defer c.release()
	if !c.tick() {
		return 126
	}
	return c.runProtected(func(c *runner) { c.status = c.exec(sub.Args, false) })
}

// pipeline runs a | b | c with one goroutine per stage but the last,
// connected by in-process pipes; every stage is a subshell.
func (r *runner) pipeline(c *syntax.BinaryCmd) int {
	var stages []*syntax.Stmt
	var all []bool
	var collect func(*syntax.BinaryCmd)
	collect = func(b *syntax.BinaryCmd) {
		if x, ok := b.X.Cmd.(*syntax.BinaryCmd); ok && (x.Op == syntax.Pipe || x.Op == syntax.PipeAll) && !b.X.Negated && len(b.X.Redirs) == 0 && !b.X.Background {
			collect(x)
		} else {
			stages = append(stages, b.X)
		}
		all = append(all, b.Op == syntax.PipeAll)
		stages = append(stages, b.Y)
	}
	collect(c)
	n := len(stages)
	statuses := make([]int, n)
	var wg sync.WaitGroup
	var live atomic.Int32 // stages running in goroutines
	var prev *pipe
	r.noErrExit++
	lastpipe := r.shopts["lastpipe"]
	pipes, stopPipes := newPipes(r.ctx, r.sh.cpu, n-1)
	defer stopPipes()
	for i, st := range stages {
		var child *runner
		if i == n-1 && lastpipe {
			// shopt -s lastpipe: the last stage runs in this shell.
			savedFDs := r.fds
			r.fds = maps.Clone(r.fds)
			defer func() { r.fds = savedFDs }()
			child = r
		} else {
			child = r.copyState()
		}
		if i < n-1 {
			child.noErrExit++
		}
		if prev != nil {
			child.fds[0] = &fdesc{r: pipeReader{prev}}
		}
		var next *pipe
		if i < n-1 {
			next = pipes[i]
			d := &fdesc{w: pipeWriter{next}, pipe: next}
			child.fds[1] = d
			if all[i] {
				child.fds[2] = d
			}
		}
		in := prev
		run := func() {
			if child == r {
				r.stmt(st)
				statuses[i] = r.status
			} else {
				statuses[i] = child.runProtected(func(c *runner) { c.stmt(st) })
				child.release()
			}
			if next != nil {
				next.closeWrite()
			}
			if in != nil {
				in.closeRead()
			}
		}
		if i == n-1 {
			r.noErrExit--
			if child != r {
				child.noErrExit = r.noErrExit
			}
			run()
		} else {
			wg.Add(1)
			live.Add(1)
			goStage(func() {
				defer wg.Done()
				defer live.Add(-1)
				_ = r.sh.cpu.acquire(r.ctx) // each stage runs with a slot of its own
				defer r.sh.cpu.release()
				defer func() {
					if p := recover(); p != nil {
						statuses[i] = 126
						r.sh.panics(p, debug.Stack())
						if next != nil {
							next.closeWrite()
						}
						if in != nil {
							in.closeRead()
						}
					}
				}()
				run()
			})
		}
		prev = next
	}
	if live.Load() > 0 {
		// Only stages still running are worth the slot: taking it back
		// may mean waiting a slice.
		released := r.sh.cpu.block()
		wg.Wait()
		r.sh.cpu.unblock(r.ctx, released)
	}
	wg.Wait()
	r.pipestatus = statuses
	status := statuses[n-1]
	if r.pipefail {
		for _, s := range statuses {
			if s != 0 {
				status = s
			}
		}
	}
	return status
}

// cmdSubst runs stmts in a subshell and returns their output with
// trailing newlines removed.
func (r *runner) cmdSubst(cs *syntax.CmdSubst) string {
	// $(< file) reads the file.
	if len(cs.Stmts) == 1 {
		st := cs.Stmts[0]
		if st.Cmd == nil && len(st.Redirs) == 1 && st.Redirs[0].Op == syntax.RdrIn && !st.Negated {
			name := r.literal(st.Redirs[0].Word)
			rc, err := (&Call{FS: r.sh.sh.cfg.FS, Dir: r.dir, Stdin: r.stdin()}).Open(name)
			if err != nil {
				r.errorf("%s: %s", name, ErrText(err))
				r.substStatus = 1
				return ""
			}
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(limitReader(rc, r.sh.limits.StringBytes+1))
			rc.Close()
			r.checkString(buf.String())
			r.substStatus = 0
			return r.substText(buf.String())
		}
	}
	var buf limitedBuffer
	buf.max = r.sh.limits.StringBytes
	buf.mem = &r.sh.mem
	defer func() { buf.mem.give(buf.held) }()
	c := r.copyState()
	c.lineShift = r.substLineShift(cs.Left, cs.Stmts)
	c.inCmdSubst = true
	c.traceLevel++
	c.fds[1] = &fdesc{w: &buf}
	status := c.runProtected(func(c *runner) { c.stmts(cs.Stmts) })
	c.release()
	if buf.over {
		r.sh.breach("string_bytes", r.sh.limits.StringBytes)
		panic(fatal{})
	}
	r.substStatus = status
	r.status = status
	return r.substText(buf.b.String())
}

// substText is a command substitution's value: trailing newlines go, and
// NUL bytes, which no shell string can hold, are dropped with bash's
// warning.
func (r *runner) substText(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		r.errorf("warning: command substitution: ignored null byte in input")
		s = strings.ReplaceAll(s, "\x00", "")
	}
	return strings.TrimRight(s, "\n")
}

// procSubst is a running <(...) or >(...).
type procSubst struct {
	fd   int
	x    *execSched
	p    *pipe
	out  bool // >(...): the command reads, the shell writes
	done chan struct{}
}

// finish closes the shell's end and waits for the command.
func (p *procSubst) finish() {
	if p.out {
		p.p.closeWrite()
	} else {
		p.p.closeRead()
	}
	select {
	case <-p.done:
	default:
		released := p.x.block()
		<-p.done
		p.x.unblock(p.p.ctx, released)
	}
}

// procCloser ends a process substitution that exec kept open.
type procCloser struct{ p *procSubst }

func (c procCloser) Close() error {
	c.p.finish()
	return nil
}

// procSubst starts a process substitution and returns its /dev/fd path.
func (r *runner) procSubst(ps *syntax.ProcSubst) string {
	fd := 63
	for r.fds[fd] != nil {
		fd--
	}
	p := newPipe(r.ctx, r.sh.cpu)
	c := r.copyState()
	c.lineShift = r.substLineShift(ps.OpPos, ps.Stmts)
	out := ps.Op == syntax.CmdOut
	if out {
		c.fds[0] = &fdesc{r: pipeReader{p}}
		r.fds[fd] = &fdesc{w: pipeWriter{p}, pipe: p}
	} else {
		c.fds[1] = &fdesc{w: pipeWriter{p}, pipe: p}
		r.fds[fd] = &fdesc{r: pipeReader{p}}
	}
	ent := &procSubst{fd: fd, x: r.sh.cpu, p: p, out: out, done: make(chan struct{})}
	r.procs = append(r.procs, ent)
	// The goroutine ends when its commands do; finish closes the shell's
	// end of the pipe first so a blocked command sees EOF or EPIPE.
	go func() {
		defer close(ent.done)
		_ = r.sh.cpu.acquire(r.ctx) // the substitution runs with a slot of its own
		defer r.sh.cpu.release()
		defer func() {
			if x := recover(); x != nil {
				r.sh.panics(x, debug.Stack())
			}
		}()
		c.runProtected(func(c *runner) { c.stmts(ps.Stmts) })
		c.release()
		if out {
			p.closeRead()
		} else {
			p.closeWrite()
		}
	}()
	return fmt.Sprintf("/dev/fd/%d", fd)
}

// limitedBuffer collects command substitution output up to max bytes.
type limitedBuffer struct {
	mu   sync.Mutex // guards the fields below: background jobs may share it
	b    bytes.Buffer
	max  int64
	over bool
	mem  *memBudget // the exec's, which the bytes count against
	held int64      // bytes counted in mem
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if int64(l.b.Len()+len(p)) > l.max {
		l.over = true
		return 0, errBrokenPipe
	}
	if !l.mem.take(int64(len(p)), true) {
		return 0, errBrokenPipe
	}
	l.held += int64(len(p))
	return l.b.Write(p)
}

// substLineShift is the lineShift of a substitution opened at pos: its
// lines count from the last line of the statement that holds it, as
// bash's re-parse of the text does (a newline right after the opening
// parenthesis does not count).
func (r *runner) substLineShift(pos syntax.Pos, stmts []*syntax.Stmt) int {
	first := int(pos.Line())
	if len(stmts) > 0 && int(stmts[0].Pos().Line()) > first {
		first++
	}
	end := int(r.stmtEnd)
	if end < first {
		return r.lineShift
	}
	return r.lineShift + end - first
}
