package shell

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
	"rung.dev/rung"
)

// unsupportedBuiltins are builtins this tier refuses (they need a
// terminal, job control or history).
var unsupportedBuiltins = map[string]bool{
	"compgen": true, "complete": true, "fc": true, "history": true, "bind": true,
	"fg": true, "bg": true, "suspend": true, "coproc": true,
}

// Check reports, without running anything, whether script can run here
// faithfully: nil, or an error wrapping [ErrUnsupported] that names the
// reason (unknown command, unsupported flag, a path outside /workspace
// and /tmp, a feature the interpreter lacks). A syntax error wraps
// rung.ErrInvalid. Words whose value is only known at run time are
// passed to a tool's Check as [Unknown]; a command name that is not a
// literal is unsupported, since it cannot be checked.
func (s *Shell) Check(script string) error {
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	f, err := p.Parse(strings.NewReader(script), "")
	if err != nil {
		return fmt.Errorf("parse script: %v: %w", err, rung.ErrInvalid)
	}
	c := &checker{sh: s, funcs: map[string]bool{}}
	syntax.Walk(f, func(n syntax.Node) bool {
		if fd, ok := n.(*syntax.FuncDecl); ok && fd.Name != nil {
			c.funcs[fd.Name.Value] = true
		}
		return true
	})
	syntax.Walk(f, func(n syntax.Node) bool {
		if c.err != nil {
			return false
		}
		c.node(n)
		return c.err == nil
	})
	return c.err
}

type checker struct {
	sh    *Shell
	funcs map[string]bool
	err   error
}

func (c *checker) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format+": %w", append(args, ErrUnsupported)...)
	}
}

func (c *checker) node(n syntax.Node) {
	switch n := n.(type) {
	case *syntax.CoprocClause:
		c.fail("coproc")
	case *syntax.TestDecl:
		c.fail("bats test declarations")
	case *syntax.Stmt:
		if n.Coprocess || n.Disown {
			c.fail("coprocess")
		}
	case *syntax.Redirect:
		c.redirect(n)
	case *syntax.CallExpr:
		c.call(n)
	case *syntax.ParamExp:
		if n.Flags != nil || n.NestedParam != nil || len(n.Modifiers) > 0 || n.Width || n.IsSet {
			c.fail("non-bash parameter expansion")
		}
	case *syntax.CmdSubst:
		if n.TempFile || n.ReplyVar {
			c.fail("non-bash command substitution")
		}
	case *syntax.ProcSubst:
		if n.Op == syntax.CmdInTemp {
			c.fail("=(...) process substitution")
		}
	}
}

// staticWord returns a word's value when it has no expansion, or Unknown.
func staticWord(w *syntax.Word) string {
	var sb strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if isGlob(p.Value) || strings.ContainsAny(p.Value, "{~") {
				return Unknown
			}
			sb.WriteString(unescapeGlob(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				sb.WriteString(ansiC(p.Value))
			} else {
				sb.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return Unknown
				}
				sb.WriteString(unescapeDQ(l.Value))
			}
		default:
			return Unknown
		}
	}
	return sb.String()
}

// isGlob reports whether s would undergo pathname expansion.
func isGlob(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?':
			return true
		case '[':
			if bracketEnd(s, i) > 0 {
				return true
			}
		}
	}
	return false
}

func (c *checker) redirect(rd *syntax.Redirect) {
	switch rd.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn, syntax.DplOut:
		return
	}
	if rd.Word == nil {
		return
	}
	target := staticWord(rd.Word)
	if target == Unknown || !strings.HasPrefix(target, "/") {
		return
	}
	if !sharedPath(target) {
		c.fail("redirection to %s (outside /workspace and /tmp)", target)
	}
}

// sharedPath reports whether an absolute path is one both tiers share.
func sharedPath(p string) bool {
	p = cleanPath(p)
	for _, root := range []string{"/workspace", "/tmp"} {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	switch p {
	case "/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/")
}

// wrappers run their operand as a command.
var wrappers = map[string]bool{"command": true, "builtin": true, "exec": true, "time": true}

func (c *checker) call(ce *syntax.CallExpr) {
	if len(ce.Args) == 0 {
		return
	}
	args := make([]string, len(ce.Args))
	for i, w := range ce.Args {
		args[i] = staticWord(w)
	}
	for len(args) > 0 && wrappers[args[0]] {
		rest := args[1:]
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && rest[0] != Unknown {
			if rest[0] == "-v" || rest[0] == "-V" {
				return
			}
			rest = rest[1:]
		}
		args = rest
	}
	if len(args) == 0 {
		return
	}
	name := args[0]
	if name == Unknown {
		c.fail("command name only known at run time")
		return
	}
	if c.funcs[name] {
		return
	}
	if unsupportedBuiltins[name] {
		c.fail("builtin %s", name)
		return
	}
	if _, ok := builtins[name]; ok {
		return
	}
	if keywords[name] {
		return
	}
	if t, ok := c.sh.lookupTool(name); ok {
		if t.Check != nil {
			if err := t.Check(args[1:]); err != nil {
				if c.err == nil {
					c.err = fmt.Errorf("%s: %w", name, err)
				}
			}
		}
		return
	}
	if _, ok := extraCommands[name]; ok {
		if name == "bash" || name == "sh" {
			c.childScript(args[1:])
		}
		return
	}
	c.fail("command %s not available", name)
}

// childScript checks the script of bash -c SCRIPT when it is a literal.
func (c *checker) childScript(args []string) {
	for i, a := range args {
		if a == "-c" && i+1 < len(args) {
			if args[i+1] == Unknown {
				c.fail("bash -c script only known at run time")
				return
			}
			if err := c.sh.Check(args[i+1]); err != nil && c.err == nil {
				c.err = fmt.Errorf("bash -c: %w", err)
			}
			return
		}
	}
}

// lookupTool finds a tool by name or absolute /usr/bin path.
func (s *Shell) lookupTool(name string) (Tool, bool) {
	if strings.Contains(name, "/") {
		dir, base, _ := strings.Cut(name[1:], "/")
		_ = dir
		switch {
		case strings.HasPrefix(name, "/usr/bin/"), strings.HasPrefix(name, "/bin/"),
			strings.HasPrefix(name, "/usr/local/bin/"):
			i := strings.LastIndexByte(name, '/')
			base = name[i+1:]
			t, ok := s.cfg.Tools[base]
			if ok && t.Run != nil {
				return t, true
			}
			if _, ok := builtins[base]; ok {
				return Tool{}, true
			}
			if _, ok := extraCommands[base]; ok {
				return Tool{}, true
			}
		}
		return Tool{}, false
	}
	t, ok := s.cfg.Tools[name]
	return t, ok && t.Run != nil
}
