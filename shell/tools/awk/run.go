package awk

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"strings"
)

// Env is the world a program runs in: its streams, files, environment
// and a way to run commands. Paths are passed to Open and Create as
// written in the program.
type Env struct {
	Name    string // program name for messages ("awk")
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Environ []string // NAME=value pairs for ENVIRON
	Open    func(name string) (io.ReadCloser, error)
	Create  func(name string, flag int, perm fs.FileMode) (io.WriteCloser, error)
	// Run runs a command line (system(), print | cmd, cmd | getline)
	// and returns its exit status. Nil refuses commands.
	Run func(ctx context.Context, cmd string, stdin io.Reader, stdout io.Writer) int
	// Reserve counts n more bytes that the program's arrays hold against
	// the caller's memory budget; an error ends the program. Nil counts
	// nothing.
	Reserve func(n int64) error
}

// Config is one awk invocation after command-line parsing.
type Config struct {
	Src    string      // program text
	Assign [][2]string // -v assignments, in order
	FS     *string     // -F value, if given
	Args   []string    // operands after the program: files and var=value
}

// Exec runs cfg in env and returns the exit status: the program's exit
// value, or 2 for a syntax or run-time error (reported on env.Stderr, as
// mawk does).
func Exec(ctx context.Context, c *Env, cfg Config) (status int) {
	prog, err := parse(cfg.Src)
	if err != nil {
		fmt.Fprintf(c.Stderr, "%s: %v\n", c.Name, err)
		return 2
	}
	in := &interp{
		ctx: ctx, c: c, prog: prog,
		globals: make([]cell, len(prog.globals)),
		fields:  make([]value, 1, 64),
		stdout:  bufio.NewWriterSize(c.Stdout, 32<<10),
		outputs: map[string]*output{},
		inputs:  map[string]*input{},
		rng:     rand.New(rand.NewSource(0)),
	}
	in.initGlobals(cfg)
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(*runtimeError)
			if !ok {
				panic(r)
			}
			in.closeAll()
			status = 2
			if re.plain {
				fmt.Fprintf(c.Stderr, "%s: %s\n", c.Name, re.msg)
				return
			}
			fmt.Fprintf(c.Stderr, "%s: run time error: %s\n", c.Name, re.msg)
			if nr := toNum(in.globals[vFNR].v); nr > 0 {
				fmt.Fprintf(c.Stderr, "\tFILENAME=\"%s\" FNR=%d NR=%d\n", in.toStr(in.globals[vFILENAME].v), int(nr), int(toNum(in.globals[vNR].v)))
			}
			status = 2
		}
	}()
	for _, a := range cfg.Assign {
		in.assignVar(a[0], a[1])
	}
	if cfg.FS != nil {
		in.globals[vFS].v = str(fsArg(*cfg.FS))
		in.setSpecial(vFS)
	}
	in.runAll()
	in.closeAll()
	return in.exitCode
}

// fsArg interprets -F's value: "t" means a tab, escapes are processed.
func fsArg(s string) string {
	if s == "t" {
		return "\t"
	}
	return processEscapes(s)
}

func processEscapes(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			i += unescape(&b, s[i:], 0) - 1
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (in *interp) initGlobals(cfg Config) {
	set := func(idx int, v value) { in.globals[idx].v = v }
	set(vFS, str(" "))
	set(vOFS, str(" "))
	set(vORS, str("\n"))
	set(vRS, str("\n"))
	set(vSUBSEP, str("\x1c"))
	set(vCONVFMT, str("%.6g"))
	set(vOFMT, str("%.6g"))
	set(vNR, num(0))
	set(vFNR, num(0))
	set(vNF, num(0))
	set(vRSTART, num(0))
	set(vRLENGTH, num(-1))
	for _, idx := range []int{vFS, vOFS, vORS, vRS, vSUBSEP, vCONVFMT, vOFMT} {
		in.setSpecial(idx)
	}
	argv := newArray()
	*argv.get("0") = str(in.c.Name)
	for i, a := range cfg.Args {
		*argv.get(fmt.Sprint(i + 1)) = strnum(a)
	}
	in.globals[vARGV].arr = argv
	set(vARGC, num(float64(len(cfg.Args)+1)))
	env := newArray()
	for _, kv := range in.c.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			*env.get(k) = strnum(v)
		}
	}
	in.globals[vENVIRON].arr = env
	in.argIdx = 1
}

// cmdAssign splits an operand of the form name=value.
func cmdAssign(arg string) (string, string, bool) {
	name, val, ok := strings.Cut(arg, "=")
	if !ok || name == "" || !isAlpha(name[0]) {
		return "", "", false
	}
	for i := 0; i < len(name); i++ {
		if !isAlpha(name[i]) && !isDigit(name[i]) {
			return "", "", false
		}
	}
	if keywords[name] != 0 || builtins[name] {
		return "", "", false
	}
	return name, val, true
}

// assignVar performs a -v or operand assignment.
func (in *interp) assignVar(name, val string) {
	idx, ok := in.prog.globals[name]
	if !ok {
		// not used by the program: nothing can observe it
		return
	}
	if in.prog.arrays[name] {
		in.fatalf("can't assign to %s; it's an array name.", name)
	}
	in.globals[idx].v = strnum(processEscapes(val))
	if idx < numSpecial {
		in.setSpecial(idx)
	}
}

// runAll runs BEGIN, the main loop and END.
func (in *interp) runAll() {
	exiting := false
	for _, b := range in.prog.begins {
		if in.runRule(b) == ctlExit {
			exiting = true
			break
		}
	}
	if !exiting && (len(in.prog.items) > 0 || len(in.prog.ends) > 0) {
		exiting = in.mainLoop()
	}
	if exiting && in.inEnd {
		return
	}
	in.inEnd = true
	for _, b := range in.prog.ends {
		if in.runRule(b) == ctlExit {
			return
		}
	}
}

// runRule runs one action, catching exit and next raised inside
// functions.
func (in *interp) runRule(body []stmt) (r ctl) {
	defer func() {
		if x := recover(); x != nil {
			switch p := x.(type) {
			case exitPanic:
				r = ctlExit
			case nextPanic:
				r = p.r
			default:
				panic(x)
			}
			in.frame = nil
			in.depth = 0
		}
	}()
	return in.execBlock(body)
}

func (in *interp) mainLoop() bool {
	for {
		rec, ok := in.nextMain()
		if !ok {
			return false
		}
		in.incr(vNR)
		in.incr(vFNR)
		in.setRecord(rec)
	items:
		for _, it := range in.prog.items {
			if !in.matches(it) {
				continue
			}
			var r ctl
			if !it.hasBody {
				in.stdout.WriteString(in.record)
				in.stdout.WriteString(in.ors)
			} else {
				r = in.runRule(it.body)
			}
			switch r {
			case ctlExit:
				return true
			case ctlNext:
				break items
			case ctlNextfile:
				in.closeMain()
				break items
			}
		}
	}
}

func (in *interp) matches(it *item) (ok bool) {
	defer func() {
		if x := recover(); x != nil {
			if _, isExit := x.(exitPanic); isExit {
				panic(x)
			}
			panic(x)
		}
	}()
	if it.pattern == nil {
		return true
	}
	if it.end == nil {
		return toBool(in.eval(it.pattern))
	}
	if !it.inRange {
		if !toBool(in.eval(it.pattern)) {
			return false
		}
		it.inRange = true
	}
	if toBool(in.eval(it.end)) {
		it.inRange = false
	}
	return true
}

// runCommand runs a command line with the given streams and returns
// its exit status.
func (in *interp) runCommand(cmd string, stdin io.Reader, stdout io.Writer) int {
	if in.c.Run == nil {
		in.fatalf("cannot run command %q here", cmd)
	}
	return in.c.Run(in.ctx, cmd, stdin, stdout)
}

// CommandArgv turns a command line into argv: words of plain
// characters and simple quoted strings run directly, anything using
// other shell syntax goes through sh -c.
func CommandArgv(cmd string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(cmd[i+1:], '\'')
			if end < 0 {
				return []string{"sh", "-c", cmd}
			}
			w.WriteString(cmd[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			end := strings.IndexByte(cmd[i+1:], '"')
			if end < 0 || strings.ContainsAny(cmd[i+1:i+1+end], "$`\\!") {
				return []string{"sh", "-c", cmd}
			}
			w.WriteString(cmd[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case isAlpha(c) || isDigit(c) || strings.IndexByte("-_./=,:+%@", c) >= 0:
			w.WriteByte(c)
			inWord = true
		default:
			return []string{"sh", "-c", cmd}
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	if len(words) == 0 || strings.Contains(words[0], "=") {
		return []string{"sh", "-c", cmd}
	}
	return words
}

func (in *interp) errorf(format string, args ...any) {
	in.stdout.Flush()
	fmt.Fprintf(in.c.Stderr, "%s: %s\n", in.c.Name, fmt.Sprintf(format, args...))
}
