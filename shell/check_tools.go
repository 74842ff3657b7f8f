package shell

import "strings"

// wrapperTools are the tools that run another command: the check finds
// the command in their arguments and admits it as a direct one (with
// Unknown for the words the wrapper supplies at run time).
var wrapperTools map[string]func(c *checker, args []string)

func init() {
	wrapperTools = map[string]func(c *checker, args []string){
		"timeout": checkTimeout,
		"env":     checkEnvCmd,
		"xargs":   checkXargs,
		"find":    checkFind,
	}
}

// optSpec says which options of a wrapper take an argument: short
// letters, and long names (without "--").
type optSpec struct {
	short string
	long  []string
}

// operands skips the leading options of args (POSIX order: options stop
// at the first operand) and returns the rest; ok is false when a word in
// option position is only known at run time.
func (o optSpec) operands(args []string) (rest []string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == Unknown:
			return nil, false
		case a == "--":
			return args[i+1:], true
		case strings.HasPrefix(a, "--"):
			name, _, hasVal := strings.Cut(a[2:], "=")
			for _, l := range o.long {
				if strings.HasPrefix(l, name) && !hasVal {
					i++
					break
				}
			}
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				if strings.IndexByte(o.short, a[j]) >= 0 {
					if j == len(a)-1 {
						i++
					}
					break
				}
			}
		default:
			return args[i:], true
		}
	}
	return nil, true
}

// run admits the command a wrapper runs, argv cmd.
func (c *checker) run(wrapper string, cmd []string) {
	if len(cmd) == 0 {
		return
	}
	if cmd[0] == Unknown {
		c.fail("%s of a command only known at run time", wrapper)
		return
	}
	if _, ok := builtins[cmd[0]]; ok && !coreutilsBuiltins[cmd[0]] {
		// A wrapper runs programs: bash's builtins are not found.
		c.fail("%s %s (not a program)", wrapper, cmd[0])
		return
	}
	saved := c.funcs
	c.funcs = nil // a wrapper does not see the script's functions
	c.command(cmd, false)
	c.funcs = saved
}

func checkTimeout(c *checker, args []string) {
	rest, ok := optSpec{short: "ks", long: []string{"kill-after", "signal"}}.operands(args[1:])
	if !ok {
		c.fail("timeout with an option only known at run time")
		return
	}
	if len(rest) < 2 {
		return
	}
	c.run("timeout", rest[1:])
}

// checkEnvCmd admits env NAME=VALUE... COMMAND; env with no command
// prints the environment, which differs between the tiers.
func checkEnvCmd(c *checker, args []string) {
	rest, ok := optSpec{short: "uCS", long: []string{"unset", "chdir", "split-string"}}.operands(args[1:])
	if !ok {
		c.fail("env with an option only known at run time")
		return
	}
	for _, a := range args[1 : len(args)-len(rest)] {
		if strings.HasPrefix(a, "-C") || strings.HasPrefix(a, "--ch") || strings.HasPrefix(a, "-S") || strings.HasPrefix(a, "--sp") {
			c.fail("env %s", a)
			return
		}
	}
	for len(rest) > 0 && rest[0] != Unknown && strings.Contains(rest[0], "=") {
		name, _, _ := strings.Cut(rest[0], "=")
		if tierAssigns[name] {
			c.fail("env %s=", name)
			return
		}
		rest = rest[1:]
	}
	if len(rest) == 0 {
		c.fail("env listing the environment")
		return
	}
	c.run("env", rest)
}

// checkXargs admits xargs [options] COMMAND: the command is checked with
// its input's words unknown. Parallel runs (-P) are refused: their
// output interleaves as the processes race.
func checkXargs(c *checker, args []string) {
	spec := optSpec{short: "adEIsLnP", long: []string{"arg-file", "delimiter", "max-chars", "max-args", "max-procs", "max-lines"}}
	rest, ok := spec.operands(args[1:])
	if !ok {
		c.fail("xargs with an option only known at run time")
		return
	}
	repl := ""
	for i, a := range args[1 : len(args)-len(rest)] {
		switch {
		case strings.HasPrefix(a, "-P") || strings.HasPrefix(a, "--max-procs"):
			c.fail("xargs -P")
			return
		case strings.HasPrefix(a, "-a") || strings.HasPrefix(a, "--arg-file"):
			c.fail("xargs -a")
			return
		case a == "-I" && i+2 < len(args):
			repl = args[i+2]
		case strings.HasPrefix(a, "-I"):
			repl = a[2:]
		case a == "-i" || strings.HasPrefix(a, "--replace"):
			repl = "{}"
		}
	}
	if len(rest) == 0 {
		rest = []string{"echo"}
	}
	cmd := make([]string, len(rest), len(rest)+1)
	for i, a := range rest {
		if repl != "" && strings.Contains(a, repl) {
			a = Unknown
		}
		cmd[i] = a
	}
	c.run("xargs", append(cmd, Unknown))
}

// checkFind admits find's -exec and -execdir commands as direct ones
// ({} unknown); -ok and -okdir ask the terminal, and -fprint family and
// -delete change files (which only counts as a write).
func checkFind(c *checker, args []string) {
	for i := 1; i < len(args); i++ {
		switch args[i] {
		case "-ok", "-okdir":
			c.fail("find %s", args[i])
			return
		case "-exec", "-execdir":
			j := i + 1
			for j < len(args) && args[j] != ";" && args[j] != "+" {
				j++
			}
			cmd := make([]string, 0, j-i)
			for _, a := range args[i+1 : j] {
				if strings.Contains(a, "{}") {
					a = Unknown
				}
				cmd = append(cmd, a)
			}
			c.run("find "+args[i], cmd)
			if c.err != nil {
				return
			}
			i = j
		}
	}
	c.pathArgs(args[1:])
}

// toolRules refuse forms of a tool whose result the tests show differs
// from the GNU tool's in the container although the tool implements
// them.
var toolRules = map[string]func(c *checker, args []string){
	"tar":  checkTarForm,
	"gzip": checkGzipForm,
	"df":   func(c *checker, args []string) { c.fail("df (the container's mounts differ)") },
	"awk":  checkAwkImpl,
	"join": checkJoinForm,
}

// checkJoinForm refuses join --check-order: GNU join fails at the first
// unsorted line before it prints the pairs it has read; the tool prints
// them first.
func checkJoinForm(c *checker, args []string) {
	for _, a := range args[1:] {
		if a == "--" {
			return
		}
		if len(a) > 2 && strings.HasPrefix("--check-order", a) {
			c.fail("join --check-order")
			return
		}
	}
}

// checkAwkImpl refuses awk where the image has gawk: Debian's
// alternatives then make awk gawk (priority 10 over mawk's 5), and the
// tool follows mawk, which prints numbers, orders for-in, counts
// characters and words errors otherwise (the parity suite's text-awk
// cases show each).
func checkAwkImpl(c *checker, args []string) {
	if c.lookPath != nil && c.lookPath("gawk") != "" {
		c.fail("awk (gawk in this image; the isolate tier's awk is mawk)")
	}
}

// checkTarForm refuses creating an archive: the bytes GNU tar writes
// (owner names, header padding) differ from the tool's.
func checkTarForm(c *checker, args []string) {
	for i, a := range args[1:] {
		if a == Unknown {
			continue
		}
		if a == "--create" || strings.HasPrefix(a, "--append") || strings.HasPrefix(a, "--update") ||
			strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a[1:], "cru") ||
			i == 0 && !strings.HasPrefix(a, "-") && strings.ContainsAny(a, "cru") {
			c.fail("tar creating an archive")
			return
		}
	}
}

// checkGzipForm admits gzip -d, -t and -l only: compressed bytes differ
// from GNU gzip's.
func checkGzipForm(c *checker, args []string) {
	for _, a := range args[1:] {
		if a == "-d" || a == "--decompress" || a == "--uncompress" || a == "-t" || a == "--test" ||
			a == "-l" || a == "--list" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "dtl") {
			return
		}
	}
	c.fail("gzip compressing")
}

// pureReaders are tools that never change a file, whatever their
// arguments (a redirection is seen on its own).
var pureReaders = map[string]bool{
	"cat": true, "ls": true, "grep": true, "egrep": true, "fgrep": true, "head": true,
	"tail": true, "wc": true, "cut": true, "tr": true, "comm": true, "join": true, "paste": true,
	"nl": true, "tac": true, "rev": true, "fold": true, "expand": true, "unexpand": true,
	"seq": true, "od": true, "base64": true, "expr": true, "date": true, "sleep": true,
	"printenv": true, "true": true, "false": true, "echo": true, "printf": true, "test": true,
	"[": true, "basename": true, "dirname": true, "readlink": true, "realpath": true,
	"stat": true, "du": true, "tree": true, "file": true, "diff": true, "cmp": true, "jq": true,
	"md5sum": true, "sha1sum": true, "sha224sum": true, "sha256sum": true, "sha384sum": true,
	"sha512sum": true, "column": true, "hexdump": true, "xxd": true, "strings": true,
	"which": true, "type": true, ":": true, "pwd": true, "cd": true, "read": true,
	"shift": true, "return": true, "exit": true, "break": true, "continue": true, "let": true,
	"getopts": true, "set": true, "shopt": true, "unset": true, "trap": true, "command": true,
	"uniq": true, "sort": true,
}

// pureReader reports whether argv never changes a file.
func pureReader(args []string) bool {
	if !pureReaders[args[0]] {
		return false
	}
	switch args[0] {
	case "sort":
		for _, a := range args[1:] {
			if a == Unknown || strings.HasPrefix(a, "-o") || strings.HasPrefix(a, "--o") {
				return false
			}
		}
	case "uniq":
		n := 0
		for _, a := range args[1:] {
			if a == Unknown {
				return false
			}
			if !strings.HasPrefix(a, "-") {
				n++
			}
		}
		return n < 2
	case "command":
		return len(args) > 1 && (args[1] == "-v" || args[1] == "-V")
	}
	return true
}
