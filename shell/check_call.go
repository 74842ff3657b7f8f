package shell

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// call admits a simple command: its name, then the arguments as that
// command (builtin, tool, wrapper, function or script) takes them.
func (c *checker) call(ce *syntax.CallExpr) {
	for _, a := range ce.Assigns {
		if a.Value != nil && assignTilde(a.Value) {
			c.fail("~ in an assignment (a home directory)")
		}
	}
	if len(ce.Args) == 0 {
		return
	}
	args := make([]string, len(ce.Args))
	for i, w := range ce.Args {
		if hasTilde(w) {
			c.fail("~ (a home directory outside /workspace and /tmp)")
			return
		}
		args[i] = staticWord(w)
	}
	top := c.topLevel()
	c.command(args, len(ce.Assigns) > 0)
	if c.err != nil {
		return
	}
	if top && args[0] == "cd" {
		c.followCd(args[1:])
	} else if args[0] == "cd" || args[0] == "pushd" || args[0] == "popd" {
		c.dir = ""
	}
	if !c.writes && !pureReader(args) {
		c.writes = true
	}
}

// command admits argv as a command (args[0] the name, Unknown where a
// word is only known at run time). prefixed says the command has
// variable assignments before it.
func (c *checker) command(args []string, prefixed bool) {
	name := args[0]
	if c.startup && c.startupCommand(args) {
		return
	}
	if c.login {
		switch {
		case name == "logout", name == "exit" && c.logout != nil && c.logout():
			c.fail("%s in a login shell (it runs the logout files)", name)
			return
		case c.refuseFuncs[name]:
			// Even where the command defines its own: a call before
			// the definition runs the startup file's.
			c.fail("function %s of a startup file", name)
			return
		}
	}
	switch {
	case name == Unknown:
		c.fail("command name only known at run time")
		return
	case name == "":
		c.fail("empty command name")
		return
	case strings.Contains(name, "/"):
		c.pathCommand(args)
		return
	case c.isFunc(name):
		c.pathArgs(args[1:])
		return
	}
	if bc, ok := builtinChecks[name]; ok {
		if _, isBuiltin := builtins[name]; isBuiltin {
			if prefixed && specialBuiltins[name] {
				// bash keeps a special builtin's prefix assignments.
				c.fail("assignment before %s", name)
				return
			}
			bc(c, args)
			return
		}
	}
	if _, ok := builtins[name]; ok {
		c.fail("builtin %s", name)
		return
	}
	switch name {
	case "bash":
		c.childShell(args)
		return
	case "sh":
		c.fail("sh (the container's /bin/sh is not bash)")
		return
	case "which":
		c.which(args)
		return
	}
	c.tool(args)
}

// tool admits a tool of the shell's set that the container also has on
// its PATH, with the options its Check admits and the forms toolRules
// admit.
func (c *checker) tool(args []string) {
	name := args[0]
	t, ok := c.sh.cfg.Tools[name]
	if !ok || t.Run == nil {
		c.fail("command %s is not an isolate tool", name)
		return
	}
	if !c.inImage(name) {
		c.fail("command %s is not in the container's image", name)
		return
	}
	if t.Check != nil {
		if err := t.Check(args[1:]); err != nil {
			if c.err == nil {
				c.err = err
			}
			return
		}
	}
	if rule, ok := toolRules[name]; ok {
		rule(c, args)
		if c.err != nil {
			return
		}
	}
	if w, ok := wrapperTools[name]; ok {
		w(c, args)
		return
	}
	c.pathArgs(args[1:])
}

// inImage reports whether the container's PATH finds tool name at the
// path the isolate tier reports for it (/usr/bin/NAME).
func (c *checker) inImage(name string) bool {
	if c.lookPath == nil {
		return true
	}
	return c.lookPath(name) == toolPath(name)
}

// pathCommand admits a command named by a path: a script file the check
// can read and admit, or a tool at the path the container has it.
func (c *checker) pathCommand(args []string) {
	name := args[0]
	base := path.Base(name)
	for _, dir := range []string{"/usr/bin/", "/bin/", "/usr/local/bin/"} {
		if name != dir+base {
			continue
		}
		// The container must have the program there, and the tool
		// where the tier says it is (type and which report that).
		if c.isTool(base) && (c.lookPath == nil || c.lookPath(name) == name) {
			c.tool(append([]string{base}, args[1:]...))
			return
		}
		c.fail("command %s is not an isolate tool", name)
		return
	}
	c.scriptFile(name, args, scriptExec)
}

// followCd follows a literal cd at the top level, so that later script
// files resolve from the right directory.
func (c *checker) followCd(args []string) {
	if c.dir == "" || len(args) != 1 || args[0] == Unknown || args[0] == "-" || strings.HasPrefix(args[0], "-") {
		c.dir = ""
		return
	}
	c.dir = c.abs(args[0])
}

// abs resolves p against the working directory as far as the check knows
// it (lexically: "" when it does not know it).
func (c *checker) abs(p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	if c.dir == "" {
		return ""
	}
	return path.Join(c.dir, p)
}

// rootDirs are the top-level directories of the container's root file
// system beside /workspace and /tmp.
var rootDirs = []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/opt", "/var",
	"/home", "/root", "/proc", "/sys", "/dev", "/run", "/srv", "/mnt", "/media", "/boot"}

// pathArgs admits a command's arguments as far as paths go: a word that
// is a path outside /workspace and /tmp (literal, or .. above the working
// directory) is refused, since the isolate tier's file view holds only
// those two. Words that are not paths but look like one are refused too,
// which only sends more to the container.
func (c *checker) pathArgs(args []string) {
	if c.startup {
		// A startup file has no effect before the run refuses a path
		// outside the view (trackFS): its words need not be guessed at.
		return
	}
	for _, a := range args {
		if a == Unknown {
			continue
		}
		if p, ok := outsidePath(c, a); ok {
			c.fail("path %s (outside /workspace and /tmp)", p)
			return
		}
	}
}

// outsidePath reports whether word a names a path outside the shared
// directories, and which.
func outsidePath(c *checker, a string) (string, bool) {
	if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
		a = v // --file=/etc/x
	}
	if a == "/" || strings.HasPrefix(a, "//") {
		return a, true
	}
	for _, d := range rootDirs {
		if (a == d || strings.HasPrefix(a, d+"/")) && !sharedPath(a) {
			return a, true
		}
	}
	if a == ".." || strings.HasPrefix(a, "../") || strings.Contains(a, "/../") || strings.HasSuffix(a, "/..") {
		p := c.abs(a)
		if p == "" || !sharedPath(p) {
			return a, true
		}
	}
	return "", false
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
	case "/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero", "/dev/fd/0", "/dev/fd/1", "/dev/fd/2":
		return true
	}
	return false
}

// redirect admits a redirection: descriptors 0-2 only, to a file in
// /workspace or /tmp or a device both tiers treat alike.
func (c *checker) redirect(rd *syntax.Redirect) {
	if c.startup {
		switch rd.Op {
		case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn, syntax.DplOut:
		default:
			if staticWord(rd.Word) != "/dev/null" {
				c.fail("redirection %s in a startup file", rd.Op)
				return
			}
		}
	}
	if rd.N != nil {
		if strings.HasPrefix(rd.N.Value, "{") {
			c.fail("redirection to a {variable} descriptor")
			return
		}
		if rd.N.Value != "0" && rd.N.Value != "1" && rd.N.Value != "2" {
			c.fail("redirection of descriptor %s", rd.N.Value)
			return
		}
	}
	switch rd.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		if rd.Hdoc != nil && staticWord(rd.Word) != rd.Word.Lit() {
			// A quoted delimiter (E"O"F as much as 'EOF'): the body is
			// literal, but the parser splits a partly quoted one's
			// body into expansions the run cannot give back as text.
			for _, p := range rd.Hdoc.Parts {
				if _, ok := p.(*syntax.Lit); !ok {
					c.fail("here-document with a partly quoted delimiter")
					return
				}
			}
		}
		return
	case syntax.WordHdoc:
		return
	case syntax.DplIn, syntax.DplOut:
		switch staticWord(rd.Word) {
		case "0", "1", "2", "-":
			return
		}
		c.fail("redirection %s%s", rd.Op, rd.Word.Lit())
		return
	case syntax.RdrInOut:
		c.fail("<> redirection")
		return
	case syntax.AppClob, syntax.RdrAllClob, syntax.AppAllClob:
		c.fail("non-bash redirection")
		return
	}
	if rd.Op != syntax.RdrIn {
		c.writes = true
	}
	if hasTilde(rd.Word) {
		c.fail("~ (a home directory outside /workspace and /tmp)")
		return
	}
	target := staticWord(rd.Word)
	if target == Unknown {
		return
	}
	if strings.HasPrefix(target, "/dev/") && !sharedPath(target) {
		c.fail("redirection to %s", target)
		return
	}
	if p, ok := outsidePath(c, target); ok || strings.HasPrefix(target, "/") && !sharedPath(target) {
		if !ok {
			p = target
		}
		c.fail("redirection to %s (outside /workspace and /tmp)", p)
	}
}

// assignTilde reports whether an assignment's value expands a tilde (at
// its start or after a colon).
func assignTilde(w *syntax.Word) bool {
	if len(w.Parts) == 0 {
		return false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	return ok && (strings.HasPrefix(l.Value, "~") || strings.Contains(l.Value, ":~"))
}
