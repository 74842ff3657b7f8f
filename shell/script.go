package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// runScriptFile runs ./script.sh and the like: a file in the sandbox
// whose first line names bash or sh (or that has no #! line) runs in a
// child shell that sees only exported variables. Other interpreters are
// not available here; ok is false when name is not such a script.
func (r *runner) runScriptFile(args []string) (int, bool) {
	name := args[0]
	fi, err := r.sh.sh.cfg.FS.Stat(r.abs(name))
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	if fi.Mode().Perm()&0o111 == 0 {
		r.errorf("%s: Permission denied", name)
		return 126, true
	}
	data, err := r.readFile(name)
	if err != nil {
		return 0, false
	}
	src := string(data)
	if strings.HasPrefix(src, "#!") {
		line, _, _ := strings.Cut(src, "\n")
		interp := strings.Fields(strings.TrimPrefix(line, "#!"))
		if len(interp) == 0 {
			return 0, false
		}
		prog := interp[0]
		if prog == "/usr/bin/env" && len(interp) > 1 {
			prog = interp[1]
		}
		switch prog {
		case "/bin/bash", "/usr/bin/bash", "bash", "/bin/sh", "/usr/bin/sh", "sh":
		default:
			return 0, false
		}
	}
	c := r.copyState()
	// A script sees exported variables only, and no functions or aliases.
	for i, s := range c.scopes {
		for k, v := range s.vars {
			if !v.exported {
				delete(c.scopes[i].vars, k)
			}
		}
	}
	c.scopes = c.scopes[:1]
	c.funcs = map[string]*syntax.Stmt{}
	c.params = args[1:]
	c.inFunc = 0
	c.funcNames = nil
	c.errexit, c.xtrace, c.nounset, c.pipefail = false, false, false, false
	return c.runProtected(func(c *runner) { c.script(src) }), true
}
