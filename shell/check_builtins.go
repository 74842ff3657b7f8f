package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// builtinCheck admits one use of a builtin (args[0] is its name).
type builtinCheck func(c *checker, args []string)

// builtinChecks lists the builtins the check admits, each with the forms
// the differential and parity tests verify. A builtin not listed here is
// refused: job control (wait, jobs, fg, bg, disown, kill, suspend), the
// directory stack (dirs, pushd, popd), aliases, umask, ulimit, enable,
// completion, history, help, times, caller, hash listings, logout.
var builtinChecks map[string]builtinCheck

func init() {
	any := func(c *checker, args []string) {}
	paths := func(c *checker, args []string) { c.pathArgs(args[1:]) }
	builtinChecks = map[string]builtinCheck{
		":": any, "true": any, "false": any, "echo": any, "printf": checkPrintf,
		"exit": any, "return": any, "break": any, "continue": any, "shift": any,
		"test": paths, "[": paths, "let": any, "getopts": any,
		"cd": checkCd, "pwd": checkPwd, "read": checkRead, "mapfile": checkMapfile,
		"readarray": checkMapfile, "set": checkSet, "shopt": checkShopt, "trap": checkTrap,
		"unset": checkUnset, "eval": checkEval, "source": checkSource, ".": checkSource,
		"exec": checkExec, "command": checkCommand, "builtin": checkBuiltin, "type": checkType,
		"hash": checkHash,
		// declare and its kin parse as DeclClause (see decl); these are
		// for the forms that do not (command declare ...).
		"declare": refuseCall, "typeset": refuseCall, "local": refuseCall, "export": refuseCall,
		"readonly": refuseCall,
	}
}

// specialBuiltins keep the assignments before them in a POSIX shell;
// bash does not unless in posix mode, a difference the check avoids.
var specialBuiltins = map[string]bool{
	"break": true, ":": true, ".": true, "continue": true, "eval": true, "exec": true,
	"exit": true, "export": true, "readonly": true, "return": true, "set": true,
	"shift": true, "trap": true, "unset": true, "source": true,
}

func refuseCall(c *checker, args []string) { c.fail("%s run as a command", args[0]) }

// flags admits a builtin whose leading options are among letters.
func flags(letters string) builtinCheck {
	return func(c *checker, args []string) {
		for _, a := range args[1:] {
			if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
				break
			}
			if a == Unknown {
				c.fail("%s with an option only known at run time", args[0])
				return
			}
			for _, ch := range a[1:] {
				if !strings.ContainsRune(letters, ch) {
					c.fail("%s -%c", args[0], ch)
					return
				}
			}
		}
	}
}

func checkPrintf(c *checker, args []string) {
	if len(args) > 1 && args[1] == Unknown {
		// A format only known at run time could be -v NAME.
		return
	}
}

func checkCd(c *checker, args []string) {
	rest := args[1:]
	for len(rest) > 0 && (rest[0] == "-L" || rest[0] == "-P") {
		rest = rest[1:]
	}
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	switch {
	case len(rest) == 0:
		c.fail("cd to $HOME (outside /workspace and /tmp)")
	case len(rest) > 1:
		c.fail("cd with several arguments")
	case rest[0] == "-":
		// $OLDPWD: where the script was, inside the view.
	case strings.HasPrefix(rest[0], "-") && rest[0] != Unknown:
		c.fail("cd %s", rest[0])
	case c.logicalDir && !strings.HasPrefix(rest[0], "/"):
		c.fail("cd to a relative path from a logical $PWD")
	default:
		c.pathArgs(rest)
		if rest[0] != Unknown && !strings.HasPrefix(rest[0], "/") && !strings.HasPrefix(rest[0], ".") {
			// A relative name is looked up in $CDPATH first: unset in
			// both tiers unless the script sets it (refused).
			return
		}
	}
}

// checkPwd admits pwd with -L and -P, unless the environment's PWD names
// the directory by another path: bash prints that name, the isolate tier
// the directory's own.
func checkPwd(c *checker, args []string) {
	if c.logicalDir {
		c.fail("pwd of a logical $PWD")
		return
	}
	flags("LP")(c, args)
}

// checkRead admits read without a timeout (-t), readline (-e, -i) or
// another descriptor (-u).
func checkRead(c *checker, args []string) {
	withArg := "adnNp"
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return
		}
		if a == Unknown {
			c.fail("read with an option only known at run time")
			return
		}
		for j := 1; j < len(a); j++ {
			ch := a[j]
			switch {
			case ch == 'r' || ch == 's':
			case strings.IndexByte(withArg, ch) >= 0:
				if j == len(a)-1 {
					i++
				}
				j = len(a)
			default:
				c.fail("read -%c", ch)
				return
			}
		}
	}
}

// checkMapfile admits mapfile without a callback (-C, -c) or another
// descriptor (-u).
func checkMapfile(c *checker, args []string) {
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return
		}
		if a == Unknown {
			c.fail("%s with an option only known at run time", args[0])
			return
		}
		for j := 1; j < len(a); j++ {
			switch ch := a[j]; ch {
			case 't':
			case 'd', 'n', 's', 'O':
				if j == len(a)-1 {
					i++
				}
				j = len(a)
			default:
				c.fail("%s -%c", args[0], ch)
				return
			}
		}
	}
}

// setOptionsOK are the set -o options the tests verify.
var setOptionsOK = map[string]bool{
	"errexit": true, "nounset": true, "xtrace": true, "pipefail": true, "noglob": true,
	"noclobber": true,
}

// checkSet admits set with options among setOptionsOK and positional
// parameters; set with no argument (every variable) and set -o listings
// show the environment, which differs between the tiers.
func checkSet(c *checker, args []string) {
	if len(args) == 1 {
		c.fail("set with no arguments (lists every variable)")
		return
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" {
			return
		}
		if a == Unknown {
			c.fail("set with a word only known at run time")
			return
		}
		if a[0] != '-' && a[0] != '+' {
			return
		}
		for j := 1; j < len(a); j++ {
			ch := a[j]
			if ch == 'o' {
				if i+1 >= len(args) || args[i+1] == Unknown || !setOptionsOK[args[i+1]] {
					c.fail("set %co %s", a[0], strings.Join(args[i+1:min(i+2, len(args))], ""))
					return
				}
				i++
				continue
			}
			if name, ok := shortOpts[ch]; !ok || !setOptionsOK[name] {
				c.fail("set %c%c", a[0], ch)
				return
			}
		}
	}
}

// shoptOK are the shopt options the tests verify.
var shoptOK = map[string]bool{
	"nullglob": true, "dotglob": true, "failglob": true, "nocaseglob": true, "nocasematch": true,
	"globstar": true,
}

// checkShopt admits shopt -s, -u and -q of options in shoptOK.
func checkShopt(c *checker, args []string) {
	i := 1
	mode := ""
	for ; i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != Unknown; i++ {
		for _, ch := range args[i][1:] {
			switch ch {
			case 's', 'u', 'q':
				mode += string(ch)
			default:
				c.fail("shopt -%c", ch)
				return
			}
		}
	}
	if i == len(args) {
		c.fail("shopt listing")
		return
	}
	if mode == "" {
		c.fail("shopt listing")
		return
	}
	for _, name := range args[i:] {
		if name == "login_shell" && c.login && mode == "q" {
			continue // a login shell's, as the container's is
		}
		if name == Unknown || !shoptOK[name] {
			c.fail("shopt %s", name)
			return
		}
	}
}

// trapSignals are the conditions a trap is admitted on: the shell's own
// events; a signal needs a real process to deliver it.
var trapSignals = map[string]bool{"EXIT": true, "0": true, "ERR": true, "RETURN": true}

func checkTrap(c *checker, args []string) {
	rest := args[1:]
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	if len(rest) < 2 {
		c.fail("trap listing")
		return
	}
	if rest[0] == Unknown {
		// The action runs as a script: only a literal one is checked.
		c.fail("trap action only known at run time")
		return
	}
	for _, s := range rest[1:] {
		name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
		if s == Unknown || !trapSignals[name] {
			c.fail("trap on %s", s)
			return
		}
	}
	if rest[0] != "-" && rest[0] != "" {
		c.nested(rest[0], "trap")
	}
}

func checkUnset(c *checker, args []string) {
	for _, a := range args[1:] {
		if a == "-n" {
			c.fail("unset -n (namerefs)")
			return
		}
		if a != Unknown && !strings.HasPrefix(a, "-") {
			if tierAssigns[a] {
				c.fail("unset %s", a)
				return
			}
		}
	}
}

// checkHash admits hash -r only: a listing shows the container's paths
// of the commands run so far.
func checkHash(c *checker, args []string) {
	if len(args) != 2 || args[1] != "-r" {
		c.fail("hash %s", strings.Join(args[1:], " "))
	}
}

// decl admits declare, typeset, local, export and readonly: no namerefs
// (-n), traces (-t), function listings, or listings of every variable.
func (c *checker) decl(d *syntax.DeclClause) {
	variant := d.Variant.Value
	if variant == "nameref" {
		c.fail("nameref")
		return
	}
	names := 0
	for _, a := range d.Args {
		if a.Naked && a.Name == nil {
			// An option, or a word only known at run time.
			v := staticWord(a.Value)
			if v == Unknown {
				c.fail("%s with a word only known at run time", variant)
				return
			}
			if strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+") {
				for _, ch := range v[1:] {
					if !strings.ContainsRune(declFlags[variant], ch) {
						c.fail("%s %c%c", variant, v[0], ch)
						return
					}
				}
				continue
			}
			names++
			continue
		}
		if a.Naked {
			// declare -p NAME shows the value.
			c.readVar(a.Name.Value)
		}
		names++
	}
	if names == 0 {
		c.fail("%s listing", variant)
	}
}

// declFlags are the options admitted per declaration builtin: not -n
// (namerefs), -t (traces), -f/-F (functions), -I.
var declFlags = map[string]string{
	"declare": "aAgilprux", "typeset": "aAgilprux", "local": "aAilprux", "export": "np", "readonly": "aAp",
}
