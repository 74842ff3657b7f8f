package shell

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
	"rung.dev/rung"
)

// CheckRequest is what [Shell.CheckProgram] decides on: a script and the
// context it would run in.
type CheckRequest struct {
	Script string
	// Dir is the exec's working directory, an absolute sandbox path;
	// default /workspace. Relative script files (bash x.sh, . x) are
	// read from it at check time.
	Dir string
	// Env is the environment the exec adds (the sandbox's and the
	// request's variables): a variable that changes how bash or a tool
	// behaves (PATH, BASH_ENV, LC_*, ...) sends the script to the
	// container.
	Env map[string]string
	// LookPath says where the sandbox's container finds command name on
	// its PATH ("/usr/bin/ls"), or "" when it finds none; for a name
	// with a slash, whether an executable is there (the name, or "").
	// Nil means every tool of the shell's set is at /usr/bin/NAME and no
	// other program exists, as in a sandbox with no container tier.
	LookPath func(name string) string
	// Login says the script is a login shell's command (Request.Login):
	// the run checks it again after the startup files, and this check
	// only admits what a login shell's command may run (shopt -q
	// login_shell, no logout).
	Login bool
}

// Program is a script that [Shell.CheckProgram] parsed and admitted: pass
// it in [Request].Program and Run runs it without parsing it again. It is
// read-only, safe for concurrent use, and belongs to the Shell that
// checked it.
type Program struct {
	src  string
	file *syntax.File
	// lookPath and env are the check's, for script files the run reads
	// (bash x.sh, . x): Run checks their text again before running it.
	lookPath func(string) string
	env      map[string]string
}

// Script returns the program's source text.
func (p *Program) Script() string { return p.src }

// Check reports, without running anything, whether script can run here
// faithfully from /workspace: nil, or an error wrapping [ErrUnsupported]
// that names the construct. A syntax error wraps rung.ErrInvalid. See
// [Shell.CheckProgram].
func (s *Shell) Check(script string) error {
	_, err := s.CheckProgram(CheckRequest{Script: script})
	return err
}

// CheckProgram reports, without running anything, whether req's script
// can run in the isolate tier with the same outcome bash would have in
// the sandbox's container, and returns it parsed. It admits a script only
// when every command, builtin option, tool option, expansion,
// redirection, variable and shell option in it is one the differential
// and parity tests verify (see docs/decisions/shell.md); anything else is
// an error wrapping [ErrUnsupported] naming the first construct it could
// not admit. A syntax error wraps rung.ErrInvalid (bash reports those
// itself, so the container runs the script).
//
// Commands run through a wrapper (timeout, env, nice, nohup, stdbuf,
// command, builtin, exec, xargs, find -exec, bash -c, eval of literal
// words) are checked as direct ones; script files (bash x.sh, . x, ./x)
// are read through the shell's file view and checked, or the script is
// refused; a command name only known at run time is refused.
//
// It reads the file view only for script files, and is safe for
// concurrent use.
func (s *Shell) CheckProgram(req CheckRequest) (*Program, error) {
	f, err := parseScript(req.Script)
	if err != nil {
		return nil, err
	}
	if err := checkEnv(req.Env); err != nil {
		return nil, err
	}
	dir := req.Dir
	if dir == "" {
		dir = "/workspace"
	}
	c := &checker{sh: s, lookPath: req.LookPath, dir: dir, logicalDir: logicalDir(req.Env, dir), login: req.Login}
	c.file(f)
	if c.err != nil {
		return nil, c.err
	}
	return &Program{src: req.Script, file: f, lookPath: req.LookPath, env: req.Env}, nil
}

// parseScript parses a whole script in bash mode. A parse error wraps
// rung.ErrInvalid.
func parseScript(src string) (*syntax.File, error) {
	p, _ := parsers.Get().(*syntax.Parser)
	if p == nil {
		p = syntax.NewParser(syntax.Variant(syntax.LangBash))
	}
	f, err := p.Parse(strings.NewReader(src), "")
	if err != nil {
		// A parser left mid-parse is not reused.
		return nil, fmt.Errorf("parse script: %v: %w", err, rung.ErrInvalid)
	}
	parsers.Put(p)
	return f, nil
}

// checker walks one script (and the scripts it runs) and keeps the first
// reason it cannot admit it.
type checker struct {
	sh       *Shell
	lookPath func(string) string
	err      error
	// funcs are the functions the script defines anywhere: calling one
	// is admitted, its body is checked where it is defined.
	funcs map[string]bool
	// dir is the working directory as far as the check can follow it
	// (literal cd at the top level), or "" once it is not known.
	dir string
	// logicalDir: the environment's PWD names the working directory by
	// another path (E2B's /home/user for /workspace, through a symbolic
	// link in the container), which bash's pwd and cd .. follow and the
	// isolate tier does not.
	logicalDir bool
	// stack is the path from the root to the node being visited.
	stack []syntax.Node
	// writes: a statement before the current one may change files (a
	// redirection to a file, a command that is not a pure reader). A
	// script file run after that is refused: the run could read other
	// text than the check did.
	writes bool
	// depth counts nested scripts (eval, source, bash -c, script
	// files), bounded like the interpreter's own nesting.
	depth int
	// seen are the script files already checked, by path.
	seen map[string]bool

	// startup checks a login shell's startup file (login.go) as the run
	// reaches it: what it sources is checked then too, it may read and
	// set PATH and read the few variables its branches test, and a
	// function whose body is not admitted only marks the function
	// (tainted) instead of refusing the file; it must not change files,
	// the working directory, or exit.
	startup bool
	tainted map[string]bool
	// login checks a login shell's command after its startup files ran:
	// logout (and exit, when logout says a logout file exists, which exit
	// would run) go to the container, and so does a call of a function
	// of refuseFuncs (the startup files' tainted ones).
	login       bool
	logout      func() bool
	refuseFuncs map[string]bool
	// probe, when set, records what the check consulted beyond the
	// script's text (checkStartup keeps a result that consulted neither).
	probe *checkProbe
}

// checkProbe is what one check consulted: the PATH lookup, or a name
// found among the functions.
type checkProbe struct{ lookPath, funcHit bool }

// isFunc reports whether name is a function the check knows.
func (c *checker) isFunc(name string) bool {
	ok := c.funcs[name]
	if ok && c.probe != nil {
		c.probe.funcHit = true
	}
	return ok
}

// maxCheckDepth bounds nested scripts the check follows; deeper nesting
// goes to the container.
const maxCheckDepth = 8

func (c *checker) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format+": %w", append(args, ErrUnsupported)...)
	}
}

// file checks a parsed script: its function names first (a call may come
// before the definition), then every node.
func (c *checker) file(f *syntax.File) {
	if c.funcs == nil {
		c.funcs = map[string]bool{}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if fd, ok := n.(*syntax.FuncDecl); ok && fd.Name != nil {
			c.funcs[fd.Name.Value] = true
		}
		return true
	})
	c.walk(f)
}

// walk visits every node under root, keeping c.stack.
func (c *checker) walk(root syntax.Node) {
	base := len(c.stack)
	syntax.Walk(root, func(n syntax.Node) bool {
		if n == nil {
			c.stack = c.stack[:len(c.stack)-1]
			return true
		}
		if c.err != nil || !c.node(n) || c.err != nil {
			return false
		}
		c.stack = append(c.stack, n)
		return true
	})
	c.stack = c.stack[:base]
}

// node admits one node (and returns whether to visit its children), or
// records why not. Every node type is listed: a type the check does not
// know is refused.
func (c *checker) node(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.File, *syntax.Comment, *syntax.Block, *syntax.Subshell, *syntax.IfClause,
		*syntax.WhileClause, *syntax.ForClause, *syntax.WordIter, *syntax.CStyleLoop,
		*syntax.CaseClause, *syntax.CaseItem, *syntax.ArithmCmd, *syntax.TestClause,
		*syntax.ArithmExp, *syntax.BinaryArithm, *syntax.UnaryArithm, *syntax.ParenArithm,
		*syntax.BinaryTest, *syntax.ParenTest, *syntax.ArrayExpr, *syntax.ArrayElem,
		*syntax.Lit, *syntax.SglQuoted, *syntax.DblQuoted, *syntax.CmdSubst, *syntax.BraceExp,
		*syntax.LetClause:
		return c.plain(n)
	case *syntax.Stmt:
		return c.stmt(n)
	case *syntax.BinaryCmd:
		if n.Op == syntax.PipeAll {
			c.fail("|& pipe")
		}
		return true
	case *syntax.FuncDecl:
		if len(n.Names) > 0 {
			c.fail("function with several names")
		}
		if c.startup && n.Name != nil {
			c.startupFunc(n)
			return false
		}
		switch n.Body.Cmd.(type) {
		case *syntax.Block, *syntax.Subshell, *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause,
			*syntax.CaseClause, *syntax.TestClause, *syntax.ArithmCmd:
		default:
			// f() echo x: bash wants a compound command (a syntax error).
			c.fail("function body that is not a compound command")
		}
		return true
	case *syntax.Word:
		c.word(n)
		return true
	case *syntax.UnaryTest:
		c.unaryTest(n)
		return true
	case *syntax.Assign:
		c.assign(n)
		return true
	case *syntax.Redirect:
		c.redirect(n)
		return true
	case *syntax.CallExpr:
		c.call(n)
		return true
	case *syntax.DeclClause:
		c.decl(n)
		return true
	case *syntax.ParamExp:
		c.param(n)
		return true
	case *syntax.ProcSubst:
		if n.Op != syntax.CmdIn {
			c.fail("process substitution %s...)", n.Op)
		}
		return true
	case *syntax.ExtGlob:
		c.fail("extended glob %s%s)", n.Op, n.Pattern.Value)
	case *syntax.TimeClause:
		c.fail("time (its report is timing)")
	case *syntax.CoprocClause:
		c.fail("coproc")
	case *syntax.TestDecl:
		c.fail("bats test declarations")
	default:
		c.fail("%T", n)
	}
	return false
}

// plain admits node kinds that need no more than their children checked,
// except for forms the interpreter does not follow.
func (c *checker) plain(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.CmdSubst:
		if n.TempFile || n.ReplyVar {
			c.fail("non-bash command substitution")
		}
	case *syntax.ArithmExp:
		if n.Bracket || n.Unsigned {
			c.fail("$[...] arithmetic")
		}
	case *syntax.CaseItem:
		if n.Op == syntax.ResumeKorn {
			c.fail("case ;|")
		}
	}
	return true
}

// stmt admits a statement: no background job (bash does not wait for it
// and its output races the script's end), no coprocess.
func (c *checker) stmt(st *syntax.Stmt) bool {
	switch {
	case st.Background:
		c.fail("background job (&)")
	case st.Coprocess || st.Disown:
		c.fail("coprocess")
	case catAppendsInput(st):
		c.fail("cat appending a file to itself")
	}
	return true
}

// catAppendsInput reports cat FILE... >> FILE: GNU cat refuses to read
// the file its output appends to ("input file is output file"), a check
// the tool cannot make through its output stream.
func catAppendsInput(st *syntax.Stmt) bool {
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) < 2 || staticWord(call.Args[0]) != "cat" {
		return false
	}
	for _, rd := range st.Redirs {
		if rd.Op != syntax.AppOut && rd.Op != syntax.AppAll {
			continue
		}
		target := staticWord(rd.Word)
		for _, a := range call.Args[1:] {
			if w := staticWord(a); w == Unknown || target == Unknown || path.Clean(w) == path.Clean(target) {
				return true
			}
		}
	}
	return false
}

// topLevel reports whether the node being visited runs unconditionally
// and in the shell itself: only lists (; && ||), not a pipeline, loop,
// branch, function, subshell or substitution.
func (c *checker) topLevel() bool {
	for _, n := range c.stack {
		switch n := n.(type) {
		case *syntax.File, *syntax.Stmt, *syntax.CallExpr:
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// inArith reports whether the node being visited is inside arithmetic,
// where a bare name reads a variable.
func (c *checker) inArith() bool {
	for i := len(c.stack) - 1; i >= 0; i-- {
		switch c.stack[i].(type) {
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.BinaryArithm,
			*syntax.UnaryArithm, *syntax.ParenArithm, *syntax.CStyleLoop:
			return true
		case *syntax.ParamExp:
			// Its index and slice bounds are arithmetic; its other words
			// are taken as such too, which only refuses more.
			return true
		case *syntax.Stmt, *syntax.CmdSubst:
			return false
		}
	}
	return false
}

// logicalDir reports whether env's PWD names dir by another path. Bash
// takes an inherited PWD that reaches the working directory as its
// logical name: pwd prints it, cd .. leaves it by its parent.
func logicalDir(env map[string]string, dir string) bool {
	p, ok := env["PWD"]
	return ok && path.Clean(p) != dir
}
