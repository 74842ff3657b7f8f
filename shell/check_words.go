package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// tierVars are variables whose value is not the same in the two tiers,
// or not the same from one run of bash to the next: reading one sends the
// script to the container. A variable leaves this list when the parity
// suite shows both tiers give it the same value.
var tierVars = map[string]string{
	"RANDOM": "random", "SRANDOM": "random",
	"$": "a process id", "BASHPID": "a process id", "PPID": "a process id", "!": "a process id",
	"UID": "the user", "EUID": "the user", "GROUPS": "the user",
	"HOME": "the user", "USER": "the user", "LOGNAME": "the user",
	"PATH": "the environment", "HOSTNAME": "the environment", "SHLVL": "the environment",
	"SHELL": "the environment", "TERM": "the environment", "LANG": "the environment",
	"MAIL": "the environment", "OLDPWD": "the environment", "_": "the environment",
	"0": "the shell's name", "BASH_ARGV0": "the shell's name", "BASH_EXECUTION_STRING": "the script",
	"BASH_SOURCE": "the shell's name", "BASH_ARGC": "the call stack", "BASH_ARGV": "the call stack",
	"DIRSTACK": "the directory stack", "COLUMNS": "the terminal", "LINES": "the terminal",
	"HISTFILE": "history", "HISTSIZE": "history", "HISTCMD": "history", "PS1": "the prompt",
	"PS2": "the prompt", "PROMPT_COMMAND": "the prompt", "BASH_COMMAND": "the command being run",
	"BASH_SUBSHELL": "subshell depth", "COPROC": "coprocesses", "BASH_COMPAT": "compatibility",
	"BASHOPTS": "the shell's options", "SHELLOPTS": "the shell's options", "-": "the shell's options",
	"BASH_LOADABLES_PATH": "builtins", "TMOUT": "timeouts", "READLINE_LINE": "readline",
	"INPUTRC": "readline", "MAILCHECK": "mail", "EXECIGNORE": "command lookup", "FIGNORE": "completion",
	"HOSTFILE": "completion", "TIMEFORMAT": "time", "BASH_XTRACEFD": "a file descriptor",
	"OSTYPE": "the platform", "HOSTTYPE": "the platform", "MACHTYPE": "the platform",
}

// tierAssigns are variables whose assignment changes how bash runs what
// follows in ways the isolate tier does not follow (or whose effect the
// check cannot see, like PATH for command lookup).
var tierAssigns = map[string]bool{
	"PATH": true, "GLOBIGNORE": true, "CDPATH": true, "BASH_ENV": true, "ENV": true,
	"SHELLOPTS": true, "BASHOPTS": true, "POSIXLY_CORRECT": true, "BASH_XTRACEFD": true,
	"BASH_COMPAT": true, "EXECIGNORE": true, "TIMEFORMAT": true, "LANG": true, "LANGUAGE": true,
	"LC_ALL": true, "LC_CTYPE": true, "LC_COLLATE": true, "LC_MESSAGES": true, "LC_NUMERIC": true,
	"LC_TIME": true, "TZ": true, "HOME": true, "TMPDIR": true, "RANDOM": true, "SRANDOM": true,
	"SECONDS": true, "HISTFILE": true, "TMOUT": true, "BASH_ARGV0": true, "LINENO": true,
	"OPTERR": true, "FUNCNEST": true, "GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_INDEX_FILE": true,
	"GIT_CONFIG": true, "GIT_CONFIG_GLOBAL": true, "GIT_AUTHOR_DATE": true, "GIT_COMMITTER_DATE": true,
}

// word admits a word's parts that the other node cases do not see: a
// bare name inside arithmetic reads a variable.
func (c *checker) word(w *syntax.Word) {
	if !c.inArith() || len(w.Parts) != 1 {
		return
	}
	if l, ok := w.Parts[0].(*syntax.Lit); ok {
		c.readVar(arithName(l.Value))
	}
}

// arithName is the variable a literal in arithmetic names ("a" of
// "a[1]"), or "".
func arithName(s string) string {
	if i := strings.IndexByte(s, '['); i > 0 {
		s = s[:i]
	}
	if validName(s) {
		return s
	}
	return ""
}

// readVar admits reading variable name.
func (c *checker) readVar(name string) {
	if c.startup && startupVars[name] {
		return
	}
	if why, ok := tierVars[name]; ok {
		c.fail("$%s (%s differs between the tiers)", name, why)
	}
}

// param admits a parameter expansion.
func (c *checker) param(pe *syntax.ParamExp) {
	if pe.Flags != nil || pe.NestedParam != nil || len(pe.Modifiers) > 0 || pe.Width || pe.IsSet ||
		pe.Split != syntax.OptUnset || pe.GlobSubst != syntax.OptUnset || pe.RcExpand != syntax.OptUnset {
		c.fail("non-bash parameter expansion")
		return
	}
	if pe.Param == nil {
		c.fail("parameter expansion without a name")
		return
	}
	name := pe.Param.Value
	switch {
	case pe.Names != 0:
		// ${!prefix*}: the names of set variables, which differ with
		// the environment.
		c.fail("${!%s%s} (variable names)", name, pe.Names)
		return
	case pe.Excl && pe.Index == nil:
		c.fail("indirect expansion ${!%s}", name)
		return
	case pe.Excl:
		// ${!a[@]}: the array's keys.
		if !isAllIndex(pe.Index) {
			c.fail("indirect expansion ${!%s[...]}", name)
			return
		}
	}
	c.readVar(name)
	if pe.Exp != nil {
		switch pe.Exp.Op {
		case syntax.MatchEmpty, syntax.ArrayExclude, syntax.ArrayIntersect:
			c.fail("non-bash parameter expansion")
		case syntax.OtherParamOps:
			op := ""
			if pe.Exp.Word != nil {
				op = pe.Exp.Word.Lit()
			}
			switch op {
			case "Q", "E", "U", "u", "L", "a":
			default:
				// @P expands a prompt, @A and @K print declarations.
				c.fail("${%s@%s}", name, op)
			}
		}
	}
}

// isAllIndex reports whether an index is [@] or [*].
func isAllIndex(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	if !ok {
		return false
	}
	s := w.Lit()
	return s == "@" || s == "*"
}

// assign admits an assignment (alone, before a command, or in declare).
func (c *checker) assign(a *syntax.Assign) {
	if a.Name == nil {
		return
	}
	name := a.Name.Value
	if c.startup && name == "PATH" {
		return
	}
	if tierAssigns[name] {
		c.fail("assignment to %s", name)
		return
	}
	if a.Append || a.Index != nil {
		// a+=x and a[i]=x read the variable too.
		c.readVar(name)
	}
	if _, ok := tierVars[name]; ok && !c.startup {
		// A startup file may set one (/etc/profile's PS1): the command
		// after it is still refused reading it.
		c.fail("assignment to %s", name)
	}
}

// unaryTest admits a [[ ]] unary test: -v and -R look up variables by
// name, -t and -o ask about the terminal and the shell's options.
func (c *checker) unaryTest(u *syntax.UnaryTest) {
	switch u.Op {
	case syntax.TsVarSet:
		if w, ok := u.X.(*syntax.Word); ok {
			c.readVar(arithName(w.Lit()))
		}
	case syntax.TsRefVar:
		c.fail("[[ -R ]] (namerefs)")
	case syntax.TsFdTerm:
		c.fail("[[ -t ]] (terminals)")
	case syntax.TsOptSet:
		c.fail("[[ -o ]] (shell options)")
	case syntax.TsUsrOwn, syntax.TsGrpOwn:
		c.fail("[[ %s ]] (file owners)", u.Op)
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
			if p.Dollar {
				return Unknown
			}
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

// hasTilde reports whether a word starts with an unquoted ~ (a home
// directory) or holds one after = or : (bash expands those in a word
// that looks like an assignment, such as the argument foo=~/x).
func hasTilde(w *syntax.Word) bool {
	if len(w.Parts) == 0 {
		return false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if ok && strings.HasPrefix(l.Value, "~") {
		return true
	}
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && (strings.Contains(l.Value, "=~") || strings.Contains(l.Value, ":~")) {
			return true
		}
	}
	return false
}
