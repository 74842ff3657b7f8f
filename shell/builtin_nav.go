package shell

import (
	"fmt"
	"maps"
	"path"
	"sort"
	"strings"
)

// cleanPath resolves . and .. lexically, as cd -L does.
func cleanPath(p string) string {
	c := path.Clean(p)
	if strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "///") {
		// POSIX leaves a leading "//" implementation-defined; bash keeps it.
		return "/" + c
	}
	return c
}

// chdir changes the working directory to target (already absolute).
func (r *runner) chdir(name, target string, physical bool) int {
	fi, err := r.sh.sh.cfg.FS.Stat(target)
	if err != nil {
		r.errorf("cd: %s: %s", name, ErrText(err))
		return 1
	}
	if !fi.IsDir() {
		r.errorf("cd: %s: Not a directory", name)
		return 1
	}
	if physical {
		if rp, err := r.sh.sh.cfg.FS.RealPath(target); err == nil {
			target = rp
		}
	}
	old := r.dir
	r.dir = target
	r.setVar("OLDPWD", old)
	r.setVar("PWD", target)
	return 0
}

func biCd(r *runner, args []string) int {
	a := args[1:]
	physical := false
	for len(a) > 0 && strings.HasPrefix(a[0], "-") && a[0] != "-" {
		if a[0] == "--" {
			a = a[1:]
			break
		}
		for _, c := range a[0][1:] {
			switch c {
			case 'P':
				physical = true
			case 'L':
				physical = false
			case 'e', '@':
			default:
				r.errorf("cd: -%c: invalid option", c)
				r.write(2, "cd: usage: cd [-L|[-P [-e]] [-@]] [dir]\n")
				return 2
			}
		}
		a = a[1:]
	}
	if len(a) > 1 {
		r.errorf("cd: too many arguments")
		return 1
	}
	var dir string
	print := false
	if len(a) == 0 {
		h, ok := r.varValue("HOME")
		if !ok {
			r.errorf("cd: HOME not set")
			return 1
		}
		dir = h
	} else {
		dir = a[0]
	}
	if dir == "-" {
		o, ok := r.varValue("OLDPWD")
		if !ok {
			r.errorf("cd: OLDPWD not set")
			return 1
		}
		dir = o
		print = true
		if dir == "" {
			r.write(1, "\n")
			return 0
		}
	} else if len(a) > 0 && a[0] == "-" {
		r.errorf("cd: OLDPWD not set")
		return 1
	}
	if dir == "" {
		return 0
	}
	target := ""
	if !strings.HasPrefix(dir, "/") && !strings.HasPrefix(dir, "./") && !strings.HasPrefix(dir, "../") && dir != "." && dir != ".." {
		if cdpath, ok := r.varValue("CDPATH"); ok && cdpath != "" {
			for _, p := range strings.Split(cdpath, ":") {
				if p == "" {
					p = "."
				}
				cand := cleanPath(joinPath(r.abs(p), dir))
				if fi, err := r.sh.sh.cfg.FS.Stat(cand); err == nil && fi.IsDir() {
					target = cand
					if p != "." {
						print = true
					}
					break
				}
			}
		}
	}
	if target == "" {
		if physical {
			target = r.abs(dir)
		} else {
			target = cleanPath(r.abs(dir))
		}
	}
	st := r.chdir(dir, target, physical)
	if st == 0 && print {
		r.write(1, r.dir+"\n")
	}
	return st
}

func biPwd(r *runner, args []string) int {
	physical := false
	// Like bash, options end at the first operand or "--", and operands
	// are ignored.
opts:
	for _, a := range args[1:] {
		switch a {
		case "-P":
			physical = true
		case "-L":
			physical = false
		case "--":
			break opts
		default:
			if a == "-" || !strings.HasPrefix(a, "-") {
				break opts
			}
			for _, ch := range a[1:] {
				switch ch {
				case 'P':
					physical = true
				case 'L':
					physical = false
				default:
					r.errorf("pwd: -%c: invalid option", ch)
					fmt.Fprintln(r.stderr(), "pwd: usage: pwd [-LP]")
					return 2
				}
			}
		}
	}
	d := r.dir
	if physical {
		if rp, err := r.sh.sh.cfg.FS.RealPath(d); err == nil {
			d = rp
		}
	}
	if err := r.write(1, d+"\n"); err != nil {
		return r.writeErr("pwd", err)
	}
	return 0
}

func (r *runner) printDirs() {
	parts := []string{tildeShort(r, r.dir)}
	for i := len(r.dirstack) - 1; i >= 0; i-- {
		parts = append(parts, tildeShort(r, r.dirstack[i]))
	}
	r.write(1, strings.Join(parts, " ")+"\n")
}

func tildeShort(r *runner, d string) string {
	h, _ := r.varValue("HOME")
	if h != "" && (d == h || strings.HasPrefix(d, h+"/")) {
		return "~" + d[len(h):]
	}
	return d
}

func biPushd(r *runner, args []string) int {
	if len(args) < 2 {
		if len(r.dirstack) == 0 {
			r.errorf("pushd: no other directory")
			return 1
		}
		top := r.dirstack[len(r.dirstack)-1]
		cur := r.dir
		if st := r.chdir(top, top, false); st != 0 {
			return st
		}
		r.dirstack[len(r.dirstack)-1] = cur
		r.printDirs()
		return 0
	}
	cur := r.dir
	dir := args[1]
	if st := r.chdir(dir, cleanPath(r.abs(dir)), false); st != 0 {
		return st
	}
	r.dirstack = append(r.dirstack, cur)
	r.printDirs()
	return 0
}

func biPopd(r *runner, args []string) int {
	if len(r.dirstack) == 0 {
		r.errorf("popd: directory stack empty")
		return 1
	}
	top := r.dirstack[len(r.dirstack)-1]
	if st := r.chdir(top, top, false); st != 0 {
		return st
	}
	r.dirstack = r.dirstack[:len(r.dirstack)-1]
	r.printDirs()
	return 0
}

func biDirs(r *runner, args []string) int {
	for _, a := range args[1:] {
		switch a {
		case "-c":
			r.dirstack = nil
			return 0
		case "-p", "-l", "-v":
			all := append([]string{r.dir}, reversed(r.dirstack)...)
			for i, d := range all {
				if a == "-v" {
					r.write(1, fmt.Sprintf("%2d  %s\n", i, tildeShort(r, d)))
				} else if a == "-l" {
					r.write(1, d+"\n")
				} else {
					r.write(1, tildeShort(r, d)+"\n")
				}
			}
			return 0
		}
	}
	r.printDirs()
	return 0
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[len(s)-1-i] = x
	}
	return out
}

var keywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "case": true, "esac": true,
	"for": true, "select": true, "while": true, "until": true, "do": true, "done": true,
	"in": true, "function": true, "time": true, "{": true, "}": true, "!": true, "[[": true,
	"]]": true, "coproc": true,
}

// commandKind says what a name runs as: alias, keyword, function,
// builtin, file (a tool at /usr/bin/NAME) or "".
func (r *runner) commandKind(name string, funcs bool) string {
	if _, ok := r.alias[name]; ok && funcs && r.shopts["expand_aliases"] {
		return "alias" // a shell that does not expand aliases does not report them
	}
	if keywords[name] && funcs {
		return "keyword"
	}
	if _, ok := r.funcs[name]; ok && funcs {
		return "function"
	}
	if _, ok := builtins[name]; ok {
		return "builtin"
	}
	if _, ok := r.toolFor(name); ok {
		return "file"
	}
	return ""
}

func toolPath(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	return "/usr/bin/" + name
}

func biType(r *runner, args []string) int {
	a := args[1:]
	var tflag, pflag, all, fflag, Pflag bool
	for len(a) > 0 && strings.HasPrefix(a[0], "-") && len(a[0]) > 1 {
		for _, c := range a[0][1:] {
			switch c {
			case 't':
				tflag = true
			case 'p':
				pflag = true
			case 'a':
				all = true
			case 'f':
				fflag = true
			case 'P':
				Pflag = true
			default:
				r.errorf("type: -%c: invalid option", c)
				return 2
			}
		}
		a = a[1:]
	}
	status := 0
	for _, name := range a {
		kinds := []string{}
		if Pflag {
			if _, ok := r.toolFor(name); ok {
				kinds = append(kinds, "file")
			}
		} else {
			for _, k := range []string{"alias", "keyword", "function", "builtin", "file"} {
				if fflag && k == "function" {
					continue
				}
				if r.hasKind(name, k) {
					kinds = append(kinds, k)
					if !all {
						break
					}
				}
			}
		}
		if len(kinds) == 0 {
			if !tflag && !pflag && !Pflag {
				r.errorf("type: %s: not found", name)
			}
			status = 1
			continue
		}
		for _, k := range kinds {
			switch {
			case tflag:
				r.write(1, k+"\n")
			case pflag || Pflag:
				if k == "file" {
					r.write(1, toolPath(name)+"\n")
				}
			default:
				switch k {
				case "alias":
					r.write(1, fmt.Sprintf("%s is aliased to `%s'\n", name, r.alias[name]))
				case "keyword":
					r.write(1, name+" is a shell keyword\n")
				case "function":
					r.write(1, name+" is a function\n"+funcText(name, r.funcs[name]))
				case "builtin":
					r.write(1, name+" is a shell builtin\n")
				case "file":
					r.write(1, name+" is "+toolPath(name)+"\n")
					if all && !strings.Contains(name, "/") {
						// /bin is a symlink to /usr/bin on Debian 12.
						r.write(1, name+" is /bin/"+name+"\n")
					}
				}
			}
		}
	}
	return status
}

func (r *runner) hasKind(name, k string) bool {
	switch k {
	case "alias":
		_, ok := r.alias[name]
		return ok && r.shopts["expand_aliases"]
	case "keyword":
		return keywords[name]
	case "function":
		_, ok := r.funcs[name]
		return ok
	case "builtin":
		_, ok := builtins[name]
		return ok
	case "file":
		_, ok := r.toolFor(name)
		return ok
	}
	return false
}

func biCommand(r *runner, args []string) int {
	a := args[1:]
	var v, V bool
	for len(a) > 0 && strings.HasPrefix(a[0], "-") && len(a[0]) > 1 {
		if a[0] == "--" {
			a = a[1:]
			break
		}
		for _, c := range a[0][1:] {
			switch c {
			case 'v':
				v = true
			case 'V':
				V = true
			case 'p':
			default:
				r.errorf("command: -%c: invalid option", c)
				return 2
			}
		}
		a = a[1:]
	}
	if len(a) == 0 {
		return 0
	}
	if v || V {
		status := 0
		for _, name := range a {
			k := r.commandKind(name, true)
			switch {
			case k == "":
				if V {
					r.errorf("command: %s: not found", name)
				}
				status = 1
			case v && k == "alias":
				r.write(1, fmt.Sprintf("alias %s=%s\n", name, shellQuote(r.alias[name])))
			case v && k == "file":
				r.write(1, toolPath(name)+"\n")
			case v:
				r.write(1, name+"\n")
			default:
				biType(r, []string{"type", name})
			}
		}
		return status
	}
	return r.exec(a, false)
}

func biHash(r *runner, args []string) int {
	status := 0
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if _, ok := r.toolFor(a); !ok {
			if _, ok := builtins[a]; !ok {
				r.errorf("hash: %s: not found", a)
				status = 1
			}
		}
	}
	if len(args) == 1 {
		r.write(1, "hash: hash table empty\n")
	}
	return status
}

func biAlias(r *runner, args []string) int {
	a := args[1:]
	if len(a) > 0 && a[0] == "-p" {
		a = a[1:]
	}
	if len(a) == 0 {
		names := make([]string, 0, len(r.alias))
		for k := range r.alias {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			r.write(1, fmt.Sprintf("alias %s=%s\n", k, shellQuote(r.alias[k])))
		}
		return 0
	}
	status := 0
	for _, arg := range a {
		name, val, ok := strings.Cut(arg, "=")
		if ok {
			r.aliasW()[name] = val
			// bash expands aliases as it reads a line, so this one
			// takes effect from the next line on.
			m := maps.Clone(r.lineAliases)
			if m == nil {
				m = map[string]bool{}
			}
			m[name] = true
			r.lineAliases = m
			continue
		}
		v, found := r.alias[name]
		if !found {
			r.errorf("alias: %s: not found", name)
			status = 1
			continue
		}
		r.write(1, fmt.Sprintf("alias %s=%s\n", name, shellQuote(v)))
	}
	return status
}

func biUnalias(r *runner, args []string) int {
	status := 0
	for _, a := range args[1:] {
		if a == "-a" {
			clear(r.aliasW())
			continue
		}
		if _, ok := r.alias[a]; !ok {
			r.errorf("unalias: %s: not found", a)
			status = 1
			continue
		}
		delete(r.aliasW(), a)
	}
	return status
}

func biGetopts(r *runner, args []string) int {
	if len(args) < 3 {
		r.write(2, "getopts: usage: getopts optstring name [arg ...]\n")
		return 2
	}
	optstring, name := args[1], args[2]
	params := r.params
	if len(args) > 3 {
		params = args[3:]
	}
	silent := strings.HasPrefix(optstring, ":")
	if silent {
		optstring = optstring[1:]
	}
	s, ok := r.varValue("OPTIND")
	if !ok || s == "" {
		s = "1"
	}
	if n, err := parseIntStr(s); err == nil && int(n) != r.optind {
		r.optind = int(n)
		r.optcharIdx = 0
	}
	if r.optind < 1 {
		r.optind = 1
	}
	setInd := func() {
		v := r.ensureVar("OPTIND")
		v.str, v.set = itoa(int64(r.optind)), true
	}
	if r.optind > len(params) {
		r.setVar(name, "?")
		setInd()
		return 1
	}
	arg := params[r.optind-1]
	if r.optcharIdx == 0 {
		if len(arg) < 2 || arg[0] != '-' {
			r.setVar(name, "?")
			setInd()
			return 1
		}
		if arg == "--" {
			r.optind++
			r.setVar(name, "?")
			setInd()
			return 1
		}
		r.optcharIdx = 1
	}
	c := arg[r.optcharIdx]
	r.optcharIdx++
	next := func() {
		if r.optcharIdx >= len(arg) {
			r.optind++
			r.optcharIdx = 0
		}
	}
	i := strings.IndexByte(optstring, c)
	if i < 0 || c == ':' {
		next()
		if silent {
			r.setVar(name, "?")
			r.setVar("OPTARG", string(c))
		} else {
			fmt.Fprintf(r.stderr(), "%s: illegal option -- %c\n", r.arg0, c) // $0, no line: sh_getopt's message
			r.setVar(name, "?")
			r.unsetVar("OPTARG")
		}
		setInd()
		return 0
	}
	if i+1 < len(optstring) && optstring[i+1] == ':' {
		if r.optcharIdx < len(arg) {
			r.setVar("OPTARG", arg[r.optcharIdx:])
			r.optind++
			r.optcharIdx = 0
		} else {
			r.optind++
			r.optcharIdx = 0
			if r.optind > len(params) {
				if silent {
					r.setVar(name, ":")
					r.setVar("OPTARG", string(c))
				} else {
					fmt.Fprintf(r.stderr(), "%s: option requires an argument -- %c\n", r.arg0, c)
					r.setVar(name, "?")
					r.unsetVar("OPTARG")
				}
				setInd()
				return 0
			}
			r.setVar("OPTARG", params[r.optind-1])
			r.optind++
		}
	} else {
		next()
		r.unsetVar("OPTARG")
	}
	r.setVar(name, string(c))
	setInd()
	return 0
}

func parseIntStr(s string) (int64, error) {
	var n int64
	_, err := fmt.Sscan(strings.TrimSpace(s), &n)
	return n, err
}
