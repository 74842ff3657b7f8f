package shell

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// setOptions lists the set -o options in the order bash prints them.
var setOptions = []string{
	"allexport", "braceexpand", "emacs", "errexit", "errtrace", "functrace", "hashall",
	"histexpand", "history", "ignoreeof", "interactive-comments", "keyword", "monitor",
	"noclobber", "noexec", "noglob", "nolog", "notify", "nounset", "onecmd", "physical",
	"pipefail", "posix", "privileged", "verbose", "vi", "xtrace",
}

var shortOpts = map[byte]string{
	'a': "allexport", 'B': "braceexpand", 'e': "errexit", 'E': "errtrace", 'T': "functrace",
	'h': "hashall", 'H': "histexpand", 'k': "keyword", 'm': "monitor", 'C': "noclobber",
	'n': "noexec", 'f': "noglob", 'b': "notify", 'u': "nounset", 't': "onecmd",
	'P': "physical", 'p': "privileged", 'v': "verbose", 'x': "xtrace",
}

// option returns a pointer to the flag for a set -o name, or nil for the
// options that are accepted but have no effect here.
func (r *runner) option(name string) *bool {
	switch name {
	case "errexit":
		return &r.errexit
	case "nounset":
		return &r.nounset
	case "xtrace":
		return &r.xtrace
	case "pipefail":
		return &r.pipefail
	case "noglob":
		return &r.noglob
	case "noclobber":
		return &r.noclobber
	case "allexport":
		return &r.allexport
	case "verbose":
		return &r.verbose
	case "noexec":
		return &r.noexec
	case "hashall":
		return &r.hashall
	}
	return nil
}

func (r *runner) optionOn(name string) bool {
	if p := r.option(name); p != nil {
		return *p
	}
	switch name {
	case "braceexpand", "interactive-comments":
		return true
	}
	return r.shopts["o:"+name]
}

// flags is $-.
func (r *runner) flags() string {
	var sb strings.Builder
	for _, f := range []struct {
		c  byte
		on bool
	}{
		{'a', r.allexport}, {'e', r.errexit}, {'f', r.noglob}, {'h', r.hashall}, {'n', r.noexec},
		{'u', r.nounset}, {'v', r.verbose}, {'x', r.xtrace}, {'B', true}, {'C', r.noclobber},
	} {
		if f.on {
			sb.WriteByte(f.c)
		}
	}
	sb.WriteByte('c')
	return sb.String()
}

func biSet(r *runner, args []string) int {
	if len(args) == 1 {
		r.printVars()
		return 0
	}
	a := args[1:]
	for len(a) > 0 {
		arg := a[0]
		if arg == "--" {
			r.params = append([]string(nil), a[1:]...)
			return 0
		}
		if arg == "-" {
			r.xtrace, r.verbose = false, false
			r.params = append([]string(nil), a[1:]...)
			return 0
		}
		if len(arg) < 2 || arg[0] != '-' && arg[0] != '+' {
			break
		}
		on := arg[0] == '-'
		a = a[1:]
		for i := 1; i < len(arg); i++ {
			c := arg[i]
			if c == 'o' {
				if len(a) == 0 {
					r.listOptions(on)
					continue
				}
				name := a[0]
				a = a[1:]
				if !r.setOption(name, on) {
					r.errorf("set: %s: invalid option name", name)
					return 2
				}
				continue
			}
			name, ok := shortOpts[c]
			if !ok {
				r.errorf("set: %c%c: invalid option", arg[0], c)
				r.write(2, "set: usage: set [-abefhkmnptuvxBCEHPT] [-o option-name] [--] [-] [arg ...]\n")
				return 2
			}
			r.setOption(name, on)
		}
	}
	if len(a) > 0 {
		r.params = append([]string(nil), a...)
	}
	return 0
}

func (r *runner) setOption(name string, on bool) bool {
	if p := r.option(name); p != nil {
		*p = on
		return true
	}
	for _, o := range setOptions {
		if o == name {
			r.shoptsW()["o:"+name] = on
			return true
		}
	}
	return false
}

func (r *runner) listOptions(on bool) {
	for _, o := range setOptions {
		v := r.optionOn(o)
		if on {
			state := "off"
			if v {
				state = "on"
			}
			r.write(1, fmt.Sprintf("%-15s\t%s\n", o, state))
		} else {
			sign := "+"
			if v {
				sign = "-"
			}
			r.write(1, fmt.Sprintf("set %so %s\n", sign, o))
		}
	}
}

// printVars is set with no arguments: every variable, sorted.
func (r *runner) printVars() {
	names := map[string]*variable{}
	for _, s := range r.scopes {
		for k, v := range s.vars {
			names[k] = v
		}
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := names[k]
		if !v.set && v.kind == kindString {
			continue
		}
		switch v.kind {
		case kindString:
			r.write(1, k+"="+setQuote(v.str)+"\n")
		default:
			r.write(1, k+"="+arrayBody(v)+"\n")
		}
	}
	fnames := make([]string, 0, len(r.funcs))
	for k := range r.funcs {
		fnames = append(fnames, k)
	}
	sort.Strings(fnames)
	for _, k := range fnames {
		r.write(1, funcText(k, r.funcs[k]))
	}
}

// setQuote quotes a value as set and declare -p print it.
func setQuote(s string) string {
	if needsANSI(s) {
		return ansiQuote(s)
	}
	safe := s != ""
	for _, c := range s {
		if !traceSafe(c) {
			safe = false
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var shoptNames = []string{
	"assoc_expand_once", "autocd", "cdable_vars", "cdspell", "checkhash", "checkjobs",
	"checkwinsize", "cmdhist", "compat31", "compat32", "compat40", "compat41", "compat42",
	"compat43", "compat44", "complete_fullquote", "direxpand", "dirspell", "dotglob",
	"execfail", "expand_aliases", "extdebug", "extglob", "extquote", "failglob",
	"force_fignore", "globasciiranges", "globskipdots", "globstar", "gnu_errfmt",
	"histappend", "histreedit", "histverify", "hostcomplete", "huponexit", "inherit_errexit",
	"interactive_comments", "lastpipe", "lithist", "localvar_inherit", "localvar_unset",
	"login_shell", "mailwarn", "no_empty_cmd_completion", "nocaseglob", "nocasematch",
	"noexpand_translation", "nullglob", "patsub_replacement", "progcomp",
	"progcomp_alias", "promptvars", "restricted_shell", "shift_verbose", "sourcepath",
	"varredir_close", "xpg_echo",
}

func biShopt(r *runner, args []string) int {
	a := args[1:]
	mode := byte(0)
	quiet, useSet, print := false, false, false
	for len(a) > 0 && strings.HasPrefix(a[0], "-") && len(a[0]) > 1 {
		for _, c := range a[0][1:] {
			switch c {
			case 's', 'u':
				mode = byte(c)
			case 'q':
				quiet = true
			case 'o':
				useSet = true
			case 'p':
				print = true
			default:
				r.errorf("shopt: -%c: invalid option", c)
				return 2
			}
		}
		a = a[1:]
	}
	get := func(n string) (bool, bool) {
		if useSet {
			for _, o := range setOptions {
				if o == n {
					return r.optionOn(n), true
				}
			}
			return false, false
		}
		for _, o := range shoptNames {
			if o == n {
				return r.shopts[n], true
			}
		}
		return false, false
	}
	show := func(n string, on bool) {
		if quiet {
			return
		}
		if useSet {
			sign := "+"
			if on {
				sign = "-"
			}
			if print || mode == 0 {
				state := "off"
				if on {
					state = "on"
				}
				if print {
					r.write(1, fmt.Sprintf("set %so %s\n", sign, n))
				} else {
					r.write(1, fmt.Sprintf("%-15s\t%s\n", n, state))
				}
			}
			return
		}
		if print {
			sign := "-u"
			if on {
				sign = "-s"
			}
			r.write(1, fmt.Sprintf("shopt %s %s\n", sign, n))
			return
		}
		state := "off"
		if on {
			state = "on"
		}
		r.write(1, fmt.Sprintf("%-15s\t%s\n", n, state))
	}
	if len(a) == 0 {
		list := shoptNames
		if useSet {
			list = setOptions
		}
		for _, n := range list {
			on, _ := get(n)
			if mode == 's' && !on || mode == 'u' && on {
				continue
			}
			show(n, on)
		}
		return 0
	}
	status := 0
	for _, n := range a {
		on, ok := get(n)
		if !ok {
			r.errorf("shopt: %s: invalid shell option name", n)
			status = 1
			continue
		}
		switch mode {
		case 's', 'u':
			if useSet {
				r.setOption(n, mode == 's')
			} else {
				r.shoptsW()[n] = mode == 's'
			}
		default:
			show(n, on)
			if !on {
				status = 1
			}
		}
	}
	return status
}

func biTrap(r *runner, args []string) int {
	a := args[1:]
	if len(a) > 0 && a[0] == "--" {
		a = a[1:]
	}
	if len(a) == 0 || a[0] == "-p" {
		names := make([]string, 0, len(r.traps))
		if len(a) > 1 {
			// trap -p NAME...: only those.
			for _, s := range a[1:] {
				name := strings.ToUpper(s)
				if n, ok := signalNumber(s); ok && n > 0 {
					name = signalName(n)
				} else if s == "0" {
					name = "EXIT"
				}
				if _, ok := r.traps[name]; ok {
					names = append(names, name)
				}
			}
		} else {
			for k := range r.traps {
				names = append(names, k)
			}
			// bash's order: EXIT, the signals by number, DEBUG, ERR, RETURN.
			rank := func(k string) int {
				switch k {
				case "EXIT":
					return 0
				case "DEBUG":
					return 100
				case "ERR":
					return 101
				case "RETURN":
					return 102
				}
				n, _ := signalNumber(k)
				return n
			}
			sort.Slice(names, func(i, j int) bool { return rank(names[i]) < rank(names[j]) })
		}
		for _, k := range names {
			sig := k
			switch k {
			case "EXIT", "ERR", "DEBUG", "RETURN":
			default:
				sig = "SIG" + k
			}
			r.write(1, fmt.Sprintf("trap -- %s %s\n", shellQuote(r.traps[k]), sig))
		}
		return 0
	}
	if a[0] == "-l" {
		r.write(1, " 1) SIGHUP\t 2) SIGINT\t 3) SIGQUIT\t15) SIGTERM\n")
		return 0
	}
	action := a[0]
	sigs := a[1:]
	if len(sigs) == 0 {
		sigs = []string{action}
		action = "-"
	}
	for _, s := range sigs {
		name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
		switch name {
		case "0":
			name = "EXIT"
		case "1":
			name = "HUP"
		case "2":
			name = "INT"
		case "15":
			name = "TERM"
		}
		switch name {
		case "EXIT", "ERR", "DEBUG", "RETURN", "HUP", "INT", "QUIT", "TERM", "USR1", "USR2", "PIPE", "ALRM", "CHLD":
		default:
			r.errorf("trap: %s: invalid signal specification", s)
			return 1
		}
		if name == "ERR" {
			r.errTrapOff = false
		}
		if action == "-" {
			delete(r.trapsW(), name)
		} else {
			r.trapsW()[name] = action
		}
	}
	return 0
}

// specialVar returns the dynamic variables computed on each read.
func (r *runner) specialVar(name string) *variable {
	str := func(s string) *variable { return &variable{set: true, str: s} }
	switch name {
	case "RANDOM":
		return str(strconv.Itoa(int(r.rand.Uint64() % 32768)))
	case "LINENO":
		return str(strconv.Itoa(r.lineno))
	case "SECONDS":
		return str(strconv.FormatInt(r.seconds(), 10))
	case "BASHPID":
		return str(strconv.Itoa(r.bashpid))
	case "EPOCHSECONDS":
		return str(strconv.FormatInt(time.Now().Unix(), 10))
	case "EPOCHREALTIME":
		t := time.Now()
		return str(fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000))
	case "BASH_SUBSHELL":
		return str(strconv.Itoa(r.subshell))
	case "FUNCNAME":
		if len(r.funcNames) == 0 {
			return nil
		}
		v := &variable{kind: kindIndexed, set: true}
		for i := range r.funcNames {
			v.arr.set(i, r.funcNames[len(r.funcNames)-1-i])
		}
		return v
	case "BASH_LINENO":
		v := &variable{kind: kindIndexed, set: true}
		for i := range r.callLines {
			v.arr.set(i, strconv.Itoa(r.callLines[len(r.callLines)-1-i]))
		}
		return v
	case "BASH_SOURCE":
		v := &variable{kind: kindIndexed, set: true}
		for i := range r.funcNames {
			v.arr.set(i, "")
		}
		for i, s := range r.sources {
			v.arr.set(len(r.sources)-1-i, s)
		}
		return v
	case "PIPESTATUS":
		v := &variable{kind: kindIndexed, set: true}
		ps := r.pipestatus
		if ps == nil {
			return nil
		}
		for i, s := range ps {
			v.arr.set(i, strconv.Itoa(s))
		}
		return v
	case "DIRSTACK":
		v := &variable{kind: kindIndexed, set: true, arr: arrayOf(r.dir)}
		for i := range r.dirstack {
			v.arr.set(i+1, r.dirstack[len(r.dirstack)-1-i])
		}
		return v
	}
	return nil
}

// isSpecialAssign handles assignments with side effects (RANDOM seeds).
func (r *runner) isSpecialAssign(name, val string) bool {
	switch name {
	case "RANDOM":
		n, _ := strconv.ParseUint(val, 10, 64)
		r.rand.Seed(n, n^0x9e3779b97f4a7c15)
		return true
	case "OPTIND":
		n, _ := strconv.Atoi(val)
		r.optind = n
		r.optcharIdx = 0
	}
	return false
}
