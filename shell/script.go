package shell

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

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
	if ok, st := r.verifyScript(src, name); !ok {
		return st, true
	}
	c := r.childShell(args[1:])
	defer c.uncount()
	c.arg0, c.scriptFile = name, true
	return c.runProtected(func(c *runner) { c.script(src) }), true
}

// extraCommands are programs the tier provides itself beyond the tool set:
// bash and sh (a child shell) and which (answering from the tool set).
var extraCommands map[string]builtinFunc

func init() {
	extraCommands = map[string]builtinFunc{"bash": runChildShell, "sh": runChildShell, "which": runWhich}
}

// coreutilsBuiltins are builtins that also exist as programs in /usr/bin.
var coreutilsBuiltins = map[string]bool{
	"echo": true, "printf": true, "test": true, "[": true, "true": true, "false": true,
	"pwd": true, "kill": true,
}

func runWhich(r *runner, args []string) int {
	status := 0
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		_, isTool := r.toolFor(a)
		_, isExtra := extraCommands[a]
		if isTool || isExtra || coreutilsBuiltins[a] {
			r.write(1, toolPath(a)+"\n")
			continue
		}
		status = 1
	}
	return status
}

// runChildShell is bash/sh run as a program: -c string, a script file,
// or a script on standard input, in a child shell that sees only the
// exported environment.
func runChildShell(r *runner, args []string) int {
	a := args[1:]
	var src, name string
	haveC := false
	var opts []string
	for len(a) > 0 {
		x := a[0]
		if x == "--" {
			a = a[1:]
			break
		}
		if x == "--norc" || x == "--noprofile" || x == "--posix" {
			a = a[1:]
			continue
		}
		if len(x) < 2 || x[0] != '-' && x[0] != '+' {
			break
		}
		a = a[1:]
		for _, ch := range x[1:] {
			switch ch {
			case 'c':
				haveC = true
			case 'o':
				if len(a) > 0 {
					opts = append(opts, string(x[0])+"o", a[0])
					a = a[1:]
				}
			case 's':
			case 'i', 'l':
				r.errorf("%s: -%c: not supported in the isolate tier", args[0], ch)
				r.sh.setUnsupported(fmt.Errorf("%s -%c: %w", args[0], ch, ErrUnsupported))
				return 2
			default:
				opts = append(opts, string(x[0])+string(ch))
			}
		}
	}
	params := []string(nil)
	arg0 := args[0]
	switch {
	case haveC:
		if len(a) == 0 {
			r.errorf("%s: -c: option requires an argument", args[0])
			return 2
		}
		src = a[0]
		if len(a) > 1 {
			arg0 = a[1]
		}
		if len(a) > 2 {
			params = a[2:]
		}
	case len(a) > 0:
		name = a[0]
		data, err := r.readFile(name)
		if err != nil {
			if errors.Is(err, syscall.EISDIR) {
				// bash has named itself after the script by then.
				fmt.Fprintf(r.stderr(), "%s: %s: %s\n", name, name, ErrText(err))
				return 126
			}
			fmt.Fprintf(r.stderr(), "%s: %s: %s\n", args[0], name, ErrText(err))
			return 127
		}
		src = string(data)
		params = a[1:]
		arg0 = name
	default:
		data, err := io.ReadAll(limitReader(r.stdin(), r.sh.limits.StringBytes))
		if err != nil {
			return 1
		}
		src = string(data)
	}
	if ok, st := r.verifyScript(src, args[0]); !ok {
		return st
	}
	c := r.childShell(params)
	defer c.uncount()
	c.arg0 = arg0
	switch {
	case haveC:
	case name != "":
		c.scriptName, c.scriptFile = name, true
	default:
		c.scriptName = "main"
	}
	for i := 0; i < len(opts); i++ {
		o := opts[i]
		on := o[0] == '-'
		if o[1:] == "o" {
			i++
			c.setOption(opts[i], on)
			continue
		}
		if n, ok := shortOpts[o[1]]; ok {
			c.setOption(n, on)
		}
	}
	if r.depth >= r.sh.limits.Depth {
		r.sh.breach("depth", int64(r.sh.limits.Depth))
		return 126
	}
	c.depth++
	return c.runProtected(func(c *runner) { c.script(src) })
}

// childShell is a new shell process started from r: exported variables
// only, no functions, aliases or traps, fresh options.
func (r *runner) childShell(params []string) *runner {
	c := r.copyState()
	global := &scope{vars: map[string]*variable{}}
	for _, s := range c.scopes {
		for k, v := range s.vars {
			if v.exported && v.kind == kindString {
				global.vars[k] = v
			}
		}
	}
	for _, k := range []string{"IFS", "PS4", "OPTIND", "PPID", "UID", "EUID", "BASH", "BASH_VERSION", "HOSTTYPE", "OSTYPE", "MACHTYPE", "OPTERR"} {
		if v := r.scopes[0].vars[k]; v != nil && global.vars[k] == nil {
			global.vars[k] = v.clone()
		}
	}
	// global holds variables still shared with r (see scope).
	global.share()
	c.scopes = []*scope{global}
	c.funcs = map[string]*syntax.Stmt{}
	c.alias = map[string]string{}
	c.traps = map[string]string{}
	c.errTrapOff = false
	c.params = params
	c.inFunc, c.funcNames, c.callLines, c.sources = 0, nil, nil, nil
	c.errexit, c.xtrace, c.nounset, c.pipefail, c.noglob, c.noclobber, c.allexport = false, false, false, false, false, false, false
	c.shopts = map[string]bool{"globskipdots": true, "patsub_replacement": true, "sourcepath": true}
	c.optind, c.optcharIdx = 1, 0
	c.subshell = 0
	c.loopDepth = 0
	return c
}
