package shell

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// This file is the check's view through commands that run other
// commands or scripts: eval, source, exec, command, builtin, bash, script
// files, and the lookups (type, command -v, which) that must answer what
// the container's PATH holds.

// nested checks src as a script run in the same shell (eval, a trap
// action, a sourced file): its functions join the script's.
func (c *checker) nested(src, what string) {
	if c.depth >= maxCheckDepth {
		c.fail("%s nested too deep to check", what)
		return
	}
	f, err := parseScript(src)
	if err != nil {
		c.fail("%s: script does not parse", what)
		return
	}
	saved := c.stack
	c.stack = nil
	c.depth++
	c.file(f)
	c.depth--
	c.stack = saved
	if c.err != nil && !strings.HasPrefix(c.err.Error(), what) {
		c.err = fmt.Errorf("%s: %w", what, c.err)
	}
}

// child checks src as a script run by a new bash process: it sees none
// of the script's functions, and starts where the script is.
func (c *checker) child(src, what string) {
	saved := c.funcs
	c.funcs = nil
	c.nested(src, what)
	c.funcs = saved
}

// checkEval admits eval of literal words, checked as the script they
// join into; a word only known at run time is refused.
func checkEval(c *checker, args []string) {
	for _, a := range args[1:] {
		if a == Unknown {
			c.fail("eval of a word only known at run time")
			return
		}
	}
	c.nested(strings.Join(args[1:], " "), "eval")
}

// checkSource admits . FILE and source FILE when the check can read FILE
// and admits its text.
func checkSource(c *checker, args []string) {
	if len(args) < 2 {
		return // bash's usage error, which the tier reproduces
	}
	name := args[1]
	if c.startup {
		// A startup file's source is read and checked when the run
		// reaches it (verifyScript), like the startup file itself.
		if name != Unknown && !strings.Contains(name, "/") {
			c.fail("%s %s (a name bash looks up in PATH)", args[0], name)
		}
		return
	}
	if name == Unknown {
		c.fail("%s of a file only known at run time", args[0])
		return
	}
	if !strings.Contains(name, "/") && c.lookPath != nil && c.lookPath(name) != "" {
		// bash looks a bare name up in $PATH first.
		c.fail("%s %s (found on the container's PATH)", args[0], name)
		return
	}
	c.scriptFile(name, args, scriptSource)
}

// scriptKind is how a script file is run.
type scriptKind int

const (
	scriptExec   scriptKind = iota // ./x.sh: its #! line decides
	scriptBash                     // bash x.sh
	scriptSource                   // . x, source x
)

// maxScriptFile bounds the script files the check reads.
const maxScriptFile = 1 << 20

// scriptFile admits a script file the script runs, reading it now
// through the file view. It is refused when the check cannot read it,
// when a command before it may change files (the run could find other
// text), or when its text is not admitted.
func (c *checker) scriptFile(name string, args []string, kind scriptKind) {
	p := c.abs(name)
	if p == "" {
		c.fail("script %s in a directory only known at run time", name)
		return
	}
	if !sharedPath(p) {
		c.fail("script %s (outside /workspace and /tmp)", name)
		return
	}
	if c.writes {
		c.fail("script %s run after a command that may change files", name)
		return
	}
	if c.seen[p] {
		c.fail("script %s runs itself", name)
		return
	}
	src, mode, err := c.readScript(p)
	if err != nil {
		c.fail("script %s: %v", name, err)
		return
	}
	if kind == scriptExec {
		if mode&0o111 == 0 {
			c.fail("script %s is not executable", name)
			return
		}
		if !bashShebang(src) {
			c.fail("script %s is not a bash script", name)
			return
		}
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[p] = true
	defer delete(c.seen, p)
	if kind == scriptSource {
		c.nested(src, name)
		return
	}
	c.pathArgs(args[1:])
	c.child(src, name)
}

// bashShebang reports whether a script file run as a program is run by
// bash: a #! line naming bash, or none (bash then runs it itself).
func bashShebang(src string) bool {
	if !strings.HasPrefix(src, "#!") {
		return true
	}
	line, _, _ := strings.Cut(src, "\n")
	f := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(f) == 0 {
		return false
	}
	switch {
	case len(f) == 1 && (f[0] == "/bin/bash" || f[0] == "/usr/bin/bash"):
		return true
	case len(f) == 2 && f[0] == "/usr/bin/env" && f[1] == "bash":
		return true
	}
	return false
}

// readScript reads a script file through the shell's file view.
func (c *checker) readScript(p string) (string, fs.FileMode, error) {
	fsys := c.sh.cfg.FS
	if fsys == nil {
		return "", 0, errors.New("no file view")
	}
	f, err := fsys.OpenFile(p, 0, 0)
	if err != nil {
		return "", 0, errors.Unwrap(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !fi.Mode().IsRegular() {
		return "", 0, errors.New("not a regular file")
	}
	if fi.Size() > maxScriptFile {
		return "", 0, errors.New("too large to check")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxScriptFile+1))
	if err != nil {
		return "", 0, err
	}
	return string(b), fi.Mode(), nil
}

// childShell admits bash [options] -c SCRIPT and bash [options] FILE;
// bash reading its script from stdin, interactive or login shells and
// options the tests do not verify are refused.
func (c *checker) childShell(args []string) {
	a := args[1:]
	cmd := false
	for len(a) > 0 {
		x := a[0]
		if x == "--" {
			a = a[1:]
			break
		}
		if x == "--norc" || x == "--noprofile" {
			a = a[1:]
			continue
		}
		if x == Unknown {
			c.fail("bash with an option only known at run time")
			return
		}
		if len(x) < 2 || x[0] != '-' && x[0] != '+' {
			break
		}
		a = a[1:]
		for _, ch := range x[1:] {
			switch {
			case ch == 'c':
				cmd = true
			case ch == 'o':
				if len(a) == 0 || !setOptionsOK[a[0]] {
					c.fail("bash -o %s", strings.Join(a[:min(1, len(a))], ""))
					return
				}
				a = a[1:]
			case ch != 'o' && setOptionsOK[shortOpts[byte(ch)]]:
			default:
				c.fail("bash %c%c", x[0], ch)
				return
			}
		}
	}
	switch {
	case cmd && len(a) == 0:
		return // bash's usage error
	case cmd && a[0] == Unknown:
		c.fail("bash -c of a script only known at run time")
	case cmd:
		c.child(a[0], "bash -c")
	case len(a) == 0:
		c.fail("bash reading its script from standard input")
	case a[0] == Unknown:
		c.fail("bash running a script only known at run time")
	default:
		c.scriptFile(a[0], a, scriptBash)
	}
}

// checkExec admits exec COMMAND (the script ends with it); exec with
// only redirections changes the shell's descriptors, and its options
// change argv[0] or the environment.
func checkExec(c *checker, args []string) {
	if len(args) == 1 {
		c.fail("exec with redirections")
		return
	}
	if strings.HasPrefix(args[1], "-") || args[1] == Unknown {
		c.fail("exec %s", args[1])
		return
	}
	c.command(args[1:], false)
}

// checkCommand admits command NAME ARGS (functions skipped) and the
// lookups command -v and -V.
func checkCommand(c *checker, args []string) {
	if len(args) < 2 {
		return
	}
	switch args[1] {
	case "-v", "-V":
		c.lookups([]string{"command " + args[1]}, args[2:])
		return
	case Unknown:
		c.fail("command with a word only known at run time")
		return
	}
	if strings.HasPrefix(args[1], "-") {
		c.fail("command %s", args[1])
		return
	}
	saved := c.funcs
	c.funcs = nil
	c.command(args[1:], false)
	c.funcs = saved
}

// checkBuiltin admits builtin NAME ARGS for an admitted builtin.
func checkBuiltin(c *checker, args []string) {
	if len(args) < 2 {
		return
	}
	if _, ok := builtins[args[1]]; !ok || builtinChecks[args[1]] == nil {
		c.fail("builtin %s", args[1])
		return
	}
	builtinChecks[args[1]](c, args[1:])
}

// checkType admits type [-t] NAME... for names the isolate tier answers
// as bash in the container does (see lookups).
func checkType(c *checker, args []string) {
	rest := args[1:]
	for len(rest) > 0 && rest[0] == "-t" {
		rest = rest[1:]
	}
	if len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		c.fail("type %s", rest[0])
		return
	}
	c.lookups(args[:1], rest)
}

// which admits which NAME... (debianutils' which) for tools.
func (c *checker) which(args []string) {
	if !c.inImage("which") {
		c.fail("command which is not in the container's image")
		return
	}
	for _, n := range args[1:] {
		if strings.HasPrefix(n, "-") {
			c.fail("which %s", n)
			return
		}
	}
	for _, n := range args[1:] {
		if n == Unknown || c.lookPath != nil && c.lookPath(n) != toolPath(n) || !c.isTool(n) && !coreutilsBuiltins[n] {
			c.fail("which %s (answered from the container's PATH)", n)
			return
		}
	}
}

// lookups admits type, command -v and command -V of names the isolate
// tier answers as the container would: keywords, builtins, the script's
// functions and tools the container has where the tier says. Anything
// else is answered from the container's PATH, in the container.
func (c *checker) lookups(cmd, names []string) {
	for _, n := range names {
		switch {
		case n == Unknown:
			c.fail("%s of a name only known at run time", cmd[0])
		case keywords[n] || c.isFunc(n):
		case builtins[n] != nil:
			if _, ok := builtinChecks[n]; !ok && unsupportedBuiltins[n] {
				c.fail("%s %s", cmd[0], n)
			}
		case c.isTool(n) && c.inImage(n):
		default:
			c.fail("%s %s (answered from the container's PATH)", cmd[0], n)
		}
		if c.err != nil {
			return
		}
	}
}

// isTool reports whether name is a tool of the shell's set.
func (c *checker) isTool(name string) bool {
	t, ok := c.sh.cfg.Tools[name]
	return ok && t.Run != nil
}

// unsupportedBuiltins are builtins this tier refuses at run time too.
var unsupportedBuiltins = map[string]bool{
	"compgen": true, "complete": true, "fc": true, "history": true, "bind": true,
	"fg": true, "bg": true, "suspend": true, "coproc": true,
}
