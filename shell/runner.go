package shell

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// fatal unwinds the runner to its subshell or exec boundary; the status is
// in runner.exitCode.
type fatal struct{}

// runner is the interpreter state of one shell process: the exec's main
// shell, or a copy for a subshell, pipeline stage or background job.
type runner struct {
	ctx    context.Context
	sh     *shared
	scopes []*scope
	funcs  map[string]*syntax.Stmt
	alias  map[string]string
	traps  map[string]string
	fds    map[int]*fdesc
	dir    string
	params []string

	// set -o options
	errexit, nounset, xtrace, pipefail, noglob, noclobber, allexport, verbose, noexec, hashall bool
	shopts                                                                                     map[string]bool

	status     int // $?
	pipestatus []int
	exiting    bool
	exitCode   int
	breakN     int
	contN      int
	returning  bool
	retBefore  int // $? when the last return ran, for the RETURN trap
	// lineShift is added to source lines for $LINENO inside a command or
	// process substitution, which bash numbers from the end of the
	// command holding it (it parses the text again then); stmtEnd is the
	// last source line of the statement being run.
	lineShift int
	stmtEnd   uint
	// savedOpts holds, per function call depth, the options local -
	// saved; they are restored when that call returns.
	savedOpts  map[int]map[string]bool
	noErrExit  int // >0 inside if/while conditions, && || lists, !
	funcNames  []string
	sources    []string
	callLines  []int
	lineno     int
	depth      int
	bashpid    int
	lastBg     int
	subshell   int
	inTrap     bool
	inFunc     int
	loopDepth  int
	dirstack   []string
	rand       *rand.PCG
	jobs       map[int]*job
	optind     int
	optcharIdx int
	umask      int
	inCmdSubst bool // running a command substitution: errexit is off
	lastArg    string
	arg0       string // $0
	// scriptFile: the shell runs a script file named arg0, not a -c
	// string; bash's syntax errors then read "NAME: line N: ...".
	scriptFile bool
	// src is the text the statements running now were parsed from (the
	// -c string, a script file, an eval string), for the messages that
	// quote source text (see arithSpan); "" when unknown.
	src string
	// arith is the expression being evaluated, innermost last: the text
	// bash quotes in an arithmetic error.
	arithCtx []arithSpan

	substStatus int          // status of the last command substitution, -1 if none
	procs       []*procSubst // running process substitutions
	persistFDs  bool         // exec without a command: keep the redirections
	// sharedMaps says which of funcs, alias, traps and shopts are shared
	// with another runner (see copyState): read only until copied.
	sharedMaps uint8
	traceLevel int // command substitution nesting, for PS4
	arithDepth int
	inCond     bool // evaluating [[ ]]: extglob patterns always work

	// Memory accounting of variables (see memCheck): grown is their
	// estimated growth since the last count, recountAt the growth that
	// triggers the next, counted what the last count put in the budget;
	// copied is set on a copy of the exec's main runner.
	grown, recountAt, counted int64
	copied                    bool
	hdocHeld                  int64 // here-document bytes counted for the command being redirected

	expandingAlias map[string]bool // aliases being expanded, against recursion
	lineAliases    map[string]bool // aliases defined on the line being run: not yet in effect
	noVarFD        bool            // redirection-only command: {var} is not set

	// errTrapOff: the ERR trap came from the parent shell without
	// errtrace (set -E); trap -p lists it but it does not run.
	errTrapOff bool
	// scriptName is what bash calls this shell's own script in errors
	// inside the functions it defines: "" for a -c string (bash says
	// "environment"), the file of bash FILE, "main" for standard input.
	scriptName string
}

// funcSource is the name bash gives, in errors inside a function, to
// where a function being defined now is: the sourced file being read,
// else the shell's script.
func (r *runner) funcSource() string {
	if len(r.sources) > 0 {
		return r.sources[len(r.sources)-1]
	}
	if r.scriptName == "" {
		return "environment"
	}
	return r.scriptName
}

func (r *runner) stdout() io.Writer { return r.writerFD(1) }
func (r *runner) stderr() io.Writer { return r.writerFD(2) }
func (r *runner) stdin() io.Reader  { return r.readerFD(0) }

// errorf writes a bash-style diagnostic: "bash: line N: msg", where
// bash is $0 (the file's name in a sourced file), as bash names itself.
func (r *runner) errorf(format string, args ...any) {
	name := r.arg0
	if len(r.sources) > 0 {
		name = r.sources[len(r.sources)-1]
	}
	fmt.Fprintf(r.stderr(), "%s: line %d: %s\n", name, r.lineno, fmt.Sprintf(format, args...))
}

// fatalf reports an error that ends this shell (an expansion error in a
// non-interactive bash).
func (r *runner) fatalf(status int, format string, args ...any) {
	if status == 127 && (r.subshell > 0 || r.errexit) {
		// bash -c exits 127 on these at top level, 1 in a subshell or
		// with set -e on.
		status = 1
	}
	r.errorf(format, args...)
	r.exiting = true
	r.exitCode = status
	panic(fatal{})
}

// stopped reports whether execution must unwind: exit, return, break,
// continue, or the exec's context is done.
func (r *runner) stopped() bool {
	return r.exiting || r.returning || r.breakN > 0 || r.contN > 0 || r.ctx.Err() != nil
}

// copyState returns a subshell of r: a copy of its variables and
// functions, sharing the exec's counters. The variables are copied on
// write: both runners keep reading the same maps, and whichever changes a
// scope first takes its own copy of it (see scope).
func (r *runner) copyState() *runner {
	c := *r
	c.scopes = make([]*scope, len(r.scopes))
	pool := make([]scope, len(r.scopes))
	for i, s := range r.scopes {
		s.share()
		pool[i] = s.lend()
		c.scopes[i] = &pool[i]
	}
	// Functions, aliases, traps and shell options are shared the same way:
	// both runners copy a map before their first change to it.
	r.sharedMaps = shareAll
	c.sharedMaps = shareAll
	if _, ok := c.traps["EXIT"]; ok {
		delete(c.trapsW(), "EXIT")
	}
	c.errTrapOff = r.errTrapOff || !r.optionOn("errtrace")
	c.fds = maps.Clone(r.fds)
	c.params = append([]string(nil), r.params...)
	c.funcNames = append([]string(nil), r.funcNames...)
	c.sources = append([]string(nil), r.sources...)
	c.callLines = append([]int(nil), r.callLines...)
	c.dirstack = append([]string(nil), r.dirstack...)
	c.jobs = nil
	c.grown, c.counted, c.copied = 0, 0, true
	c.bashpid = int(r.sh.pids.Add(1))
	c.subshell++
	c.exiting, c.returning, c.breakN, c.contN = false, false, 0, 0
	seed := r.rand.Uint64()
	c.rand = rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	return &c
}

// Bits of runner.sharedMaps.
const (
	shareFuncs uint8 = 1 << iota
	shareAlias
	shareTraps
	shareShopts
	shareAll = shareFuncs | shareAlias | shareTraps | shareShopts
)

// funcsW, aliasW, trapsW and shoptsW return a map for changing, first
// copying it if it is shared with another runner.
func (r *runner) funcsW() map[string]*syntax.Stmt { return ownMap(&r.sharedMaps, shareFuncs, &r.funcs) }
func (r *runner) aliasW() map[string]string       { return ownMap(&r.sharedMaps, shareAlias, &r.alias) }
func (r *runner) trapsW() map[string]string       { return ownMap(&r.sharedMaps, shareTraps, &r.traps) }
func (r *runner) shoptsW() map[string]bool        { return ownMap(&r.sharedMaps, shareShopts, &r.shopts) }

// ownMap returns *m for changing: a copy of it, stored back, when bit is
// set in *shared (or *m is nil), which it then clears.
func ownMap[K comparable, V any](shared *uint8, bit uint8, m *map[K]V) map[K]V {
	if *shared&bit != 0 || *m == nil {
		*m = cloneMap(*m)
		*shared &^= bit
	}
	return *m
}

// cloneMap is maps.Clone, but never nil.
func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// runSubshell runs fn in a copy of r and returns its exit status.
func (r *runner) runSubshell(fn func(c *runner)) int {
	c := r.copyState()
	defer c.release()
	return c.runProtected(fn)
}

// release ends a copy of a runner (a subshell, pipeline stage, command
// substitution or job that has finished): it gives back its shares of
// the variables it did not change, so the runner it was copied from can
// change them without copying. c is not used again.
func (c *runner) release() {
	for _, s := range c.scopes {
		s.release()
	}
	c.uncount()
}

// runProtected runs fn, turning a fatal error into an exit status and
// running the EXIT trap.
func (r *runner) runProtected(fn func(c *runner)) (status int) {
	func() {
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(fatal); !ok {
					panic(p)
				}
			}
		}()
		fn(r)
	}()
	r.runExitTrap()
	if r.exiting {
		return r.exitCode
	}
	return r.status
}

func (r *runner) runExitTrap() {
	cmd, ok := r.traps["EXIT"]
	if !ok || cmd == "" {
		return
	}
	delete(r.trapsW(), "EXIT")
	saved := r.status
	if r.exiting {
		saved = r.exitCode
	}
	r.exiting = false
	r.returning = false
	r.status = saved
	func() {
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(fatal); !ok {
					panic(p)
				}
			}
		}()
		r.evalString(cmd, "trap")
	}()
	if !r.exiting {
		r.exitCode = saved
	}
	r.exiting = true
}

// stmts runs a statement list.
func (r *runner) stmts(list []*syntax.Stmt) {
	for _, st := range list {
		if r.stopped() {
			return
		}
		r.stmt(st)
	}
}

// stmt runs one statement, including its redirections, negation,
// background flag and the errexit and ERR trap checks.
func (r *runner) stmt(st *syntax.Stmt) {
	if r.ctx.Err() != nil {
		return
	}
	r.lineno = int(st.Pos().Line()) + r.lineShift
	line := r.lineno
	r.stmtEnd = st.End().Line()
	if r.noexec {
		return
	}
	if st.Background {
		r.background(st)
		return
	}
	if st.Negated {
		r.noErrExit++
	}
	status := r.redirected(st)
	if st.Negated {
		r.noErrExit--
		if status == 0 {
			status = 1
		} else {
			status = 0
		}
	}
	r.status = status
	if isSimple(st.Cmd) {
		r.pipestatus = []int{status}
	}
	if status == 0 || st.Negated || r.stopped() {
		return
	}
	if !failureCounts(st.Cmd) {
		return
	}
	if r.noErrExit == 0 {
		r.runErrTrap(line)
	}
	if r.errexit && r.noErrExit == 0 && !r.inCmdSubst {
		r.exiting = true
		r.exitCode = status
	}
}

// isSimple reports whether cmd sets PIPESTATUS to its own status.
func isSimple(cmd syntax.Command) bool {
	switch c := cmd.(type) {
	case *syntax.BinaryCmd:
		return false
	case *syntax.Block, *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause, *syntax.FuncDecl:
		return false
	case *syntax.CallExpr:
		return len(c.Args) > 0
	}
	return true
}

// failureCounts reports whether a failing cmd triggers errexit and the ERR
// trap at its own level (compound commands defer to their contents).
func failureCounts(cmd syntax.Command) bool {
	switch c := cmd.(type) {
	case *syntax.BinaryCmd:
		return c.Op == syntax.Pipe || c.Op == syntax.PipeAll
	case *syntax.Block, *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause:
		return false
	}
	return true
}

// runErrTrap runs the ERR trap for a command that failed on line: the
// trap's $LINENO is that line.
func (r *runner) runErrTrap(line int) {
	cmd, ok := r.traps["ERR"]
	if !ok || cmd == "" || r.inTrap || r.errTrapOff || r.inFunc > 0 && !r.optionOn("errtrace") {
		return
	}
	saved, savedShift := r.status, r.lineShift
	r.inTrap = true
	r.lineno, r.lineShift = line, line-1
	r.evalString(cmd, "trap")
	r.inTrap = false
	r.status, r.lineShift = saved, savedShift
}

// command runs the command of a statement (redirections already applied).
func (r *runner) command(cmd syntax.Command) int {
	switch c := cmd.(type) {
	case nil:
		return 0
	case *syntax.CallExpr:
		return r.call(c, nil)
	case *syntax.Block:
		r.stmts(c.Stmts)
		return r.status
	case *syntax.Subshell:
		return r.runSubshell(func(c2 *runner) { c2.stmts(c.Stmts) })
	case *syntax.BinaryCmd:
		return r.binary(c)
	case *syntax.IfClause:
		return r.ifClause(c)
	case *syntax.WhileClause:
		return r.whileClause(c)
	case *syntax.ForClause:
		return r.forClause(c)
	case *syntax.CaseClause:
		return r.caseClause(c)
	case *syntax.FuncDecl:
		if c.Name == nil {
			r.errorf("syntax error near unexpected token `)'")
			r.exiting, r.exitCode = true, 2
			return 2
		}
		r.funcsW()[c.Name.Value] = c.Body
		r.sh.funcSrc.Store(c.Body, r.funcSource())
		return 0
	case *syntax.ArithmCmd:
		if !r.tick() {
			return 1
		}
		r.traceArith(c)
		sp, ok := r.spanOf(c.X, c.Left.Offset()+2, c.Right.Offset())
		var v int64
		var err error
		r.withSpan(sp, ok, func() int64 { v, err = r.arithSafe(c.X); return 0 })
		if err != nil {
			r.errorf("((: %s", err.Error())
			return 1
		}
		if v == 0 {
			return 1
		}
		return 0
	case *syntax.TestClause:
		if !r.tick() {
			return 1
		}
		return r.testClause(c)
	case *syntax.DeclClause:
		if !r.tick() {
			return 1
		}
		return r.declClause(c)
	case *syntax.LetClause:
		if !r.tick() {
			return 1
		}
		return r.letClause(c)
	case *syntax.TimeClause:
		start := time.Now()
		st := 0
		if c.Stmt != nil {
			r.stmt(c.Stmt)
			st = r.status
		}
		el := time.Since(start).Seconds()
		fmt.Fprintf(r.stderr(), "\nreal\t0m%.3fs\nuser\t0m0.000s\nsys\t0m0.000s\n", el)
		return st
	}
	r.errorf("%s: not supported in the isolate tier", fmt.Sprintf("%T", cmd))
	r.sh.setUnsupported(fmt.Errorf("command %T: %w", cmd, ErrUnsupported))
	return 2
}

func (r *runner) binary(c *syntax.BinaryCmd) int {
	switch c.Op {
	case syntax.AndStmt, syntax.OrStmt:
		r.noErrExit++
		r.stmt(c.X)
		r.noErrExit--
		if r.stopped() {
			return r.status
		}
		if (r.status == 0) == (c.Op == syntax.AndStmt) {
			r.stmt(c.Y)
		}
		return r.status
	}
	return r.pipeline(c)
}

func (r *runner) ifClause(c *syntax.IfClause) int {
	for ; c != nil; c = c.Else {
		if len(c.Cond) == 0 && c.ThenPos == (syntax.Pos{}) {
			// else branch
			r.stmts(c.Then)
			return r.status
		}
		r.noErrExit++
		r.stmts(c.Cond)
		r.noErrExit--
		if r.stopped() {
			return r.status
		}
		if r.status == 0 {
			r.status = 0
			r.stmts(c.Then)
			return r.status
		}
	}
	return 0
}

// loopControl consumes break/continue after one loop body; it reports
// whether the loop must end.
func (r *runner) loopControl() bool {
	if r.breakN > 0 {
		r.breakN--
		return true
	}
	if r.contN > 0 {
		r.contN--
		if r.contN > 0 {
			return true
		}
	}
	return r.exiting || r.returning || r.ctx.Err() != nil
}

func (r *runner) whileClause(c *syntax.WhileClause) int {
	status := 0
	r.loopDepth++
	defer func() { r.loopDepth-- }()
	for {
		if !r.loopTick() {
			return 1
		}
		r.noErrExit++
		r.stmts(c.Cond)
		r.noErrExit--
		if r.breakN > 0 || r.contN > 0 {
			if r.loopControl() {
				return status
			}
			continue
		}
		if r.stopped() {
			return status
		}
		if (r.status == 0) == c.Until {
			return status
		}
		r.stmts(c.Do)
		status = r.status
		if r.loopControl() {
			return status
		}
	}
}

func (r *runner) forClause(c *syntax.ForClause) int {
	if c.Select {
		return r.selectClause(c)
	}
	r.loopDepth++
	defer func() { r.loopDepth-- }()
	status := 0
	switch l := c.Loop.(type) {
	case *syntax.WordIter:
		var items []string
		if l.InPos.IsValid() {
			items = r.fields(l.Items...)
		} else {
			items = append(items, r.params...)
		}
		for _, it := range items {
			if !r.loopTick() {
				return 1
			}
			if err := r.setVar(l.Name.Value, it); err != nil {
				r.errorf("%s", err)
				return 1
			}
			if r.xtrace {
				r.trace("for " + l.Name.Value + " in " + strings.Join(quoteFields(items), " "))
			}
			r.stmts(c.Do)
			status = r.status
			if r.loopControl() {
				break
			}
		}
		return status
	case *syntax.CStyleLoop:
		if l.Init != nil {
			r.arith(l.Init)
		}
		for {
			if !r.loopTick() {
				return 1
			}
			if l.Cond != nil && r.arith(l.Cond) == 0 {
				break
			}
			r.stmts(c.Do)
			status = r.status
			if r.loopControl() {
				break
			}
			if l.Post != nil {
				r.arith(l.Post)
			}
		}
		return status
	}
	return 0
}

func (r *runner) caseClause(c *syntax.CaseClause) int {
	word := r.literal(c.Word)
	if r.xtrace {
		r.trace("case " + word + " in")
	}
	status := 0
	matched := false
	for i := 0; i < len(c.Items); i++ {
		it := c.Items[i]
		if !matched {
			for _, p := range it.Patterns {
				if r.matchPattern(r.pattern(p), word, patternOpts{}) {
					matched = true
					break
				}
			}
		}
		if !matched {
			continue
		}
		r.stmts(it.Stmts)
		status = r.status
		if r.stopped() {
			return status
		}
		switch it.Op {
		case syntax.Fallthrough:
			continue
		case syntax.Resume:
			matched = false
			continue
		}
		return status
	}
	return status
}

// job is a background command.
type job struct {
	done   chan struct{}
	status int
}

// background runs st concurrently in a copy of the shell. The job's
// goroutine is owned by the exec: Run waits for every job before it
// returns, and cancelling the exec's context stops them.
func (r *runner) background(st *syntax.Stmt) {
	c := r.copyState()
	c.errexit = r.errexit
	if _, ok := c.fds[0]; ok && c.fds[0].isStdin {
		c.fds[0] = &fdesc{r: strings.NewReader("")}
	}
	j := &job{done: make(chan struct{})}
	pid := c.bashpid
	if r.jobs == nil {
		r.jobs = map[int]*job{}
	}
	r.jobs[pid] = j
	r.lastBg = pid
	cp := *st
	cp.Background = false
	r.sh.jobs.Add(1)
	r.sh.njobs.Add(1)
	go func() {
		defer r.sh.jobs.Done()
		defer r.sh.njobs.Add(-1)
		defer close(j.done)
		_ = r.sh.cpu.acquire(c.ctx) // a job runs with a slot of its own
		defer r.sh.cpu.release()
		defer func() {
			if p := recover(); p != nil {
				j.status = 126
				fmt.Fprintf(c.stderr(), "bash: internal error: %v\n", p)
			}
		}()
		j.status = c.runProtected(func(c *runner) { c.stmt(&cp) })
		c.release()
	}()
	r.status = 0
}

// selectClause runs select NAME in WORDS: the menu and the PS3 prompt go
// to stderr, each line read from stdin sets REPLY and NAME (the item it
// numbers, or ""), and the body runs; an empty line shows the menu again
// and end of input ends the loop with status 1.
func (r *runner) selectClause(c *syntax.ForClause) int {
	l, ok := c.Loop.(*syntax.WordIter)
	if !ok {
		return 2
	}
	var items []string
	if l.InPos.IsValid() {
		items = r.fields(l.Items...)
	} else {
		items = append(items, r.params...)
	}
	if len(items) == 0 {
		return 0
	}
	r.loopDepth++
	defer func() { r.loopDepth-- }()
	menu := func() {
		var sb strings.Builder
		for i, it := range items {
			fmt.Fprintf(&sb, "%d) %s\n", i+1, it)
		}
		r.write(2, sb.String())
	}
	prompt := func() {
		ps3, ok := r.varValue("PS3")
		if !ok {
			ps3 = "#? "
		}
		r.write(2, ps3)
	}
	menu()
	status := 0
	for {
		if !r.loopTick() {
			return 1
		}
		prompt()
		d := r.fds[0]
		if d == nil || d.r == nil {
			r.write(1, "\n")
			return 1
		}
		line, eof := r.readRecord(d, '\n', -1, false)
		if eof && line == "" {
			r.write(1, "\n")
			return 1
		}
		if line == "" {
			menu()
			continue
		}
		if err := r.setVar("REPLY", line); err != nil {
			r.errorf("%s", err)
			return 1
		}
		val := ""
		if n, err := strconv.Atoi(strings.Trim(line, " \t")); err == nil && n >= 1 && n <= len(items) {
			val = items[n-1]
		}
		if err := r.setVar(l.Name.Value, val); err != nil {
			r.errorf("%s", err)
			return 1
		}
		r.stmts(c.Do)
		status = r.status
		if r.loopControl() {
			return status
		}
	}
}
