package shell

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mvdan.cc/sh/v3/syntax"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// builtinFunc runs one builtin with its expanded argv and returns the
// exit status.
type builtinFunc func(r *runner, args []string) int

var builtins map[string]builtinFunc

func init() {
	builtins = map[string]builtinFunc{
		"echo": biEcho, "printf": biPrintf, "true": biTrue, ":": biTrue, "false": biFalse,
		"exit": biExit, "return": biReturn, "break": biBreak, "continue": biContinue,
		"shift": biShift, "eval": biEval, "source": biSource, ".": biSource, "exec": biExec,
		"set": biSet, "shopt": biShopt, "trap": biTrap, "wait": biWait, "kill": biKill,
		"umask": biUmask, "times": biTimes, "caller": biCaller, "alias": biAlias,
		"unalias": biUnalias, "type": biType, "command": biCommand, "hash": biHash,
		"cd": biCd, "pwd": biPwd, "pushd": biPushd, "popd": biPopd, "dirs": biDirs,
		"let": biLet, "getopts": biGetopts, "read": biRead, "mapfile": biMapfile,
		"readarray": biMapfile, "declare": biDeclare, "typeset": biDeclare, "local": biLocal,
		"export": biExport, "readonly": biReadonly, "unset": biUnset, "test": biTest,
		"[": biBracket, "builtin": biBuiltin, "enable": biEnable, "help": biHelp,
		"disown": biTrue, "suspend": biFalse, "logout": biLogout, "jobs": biJobs,
		"fg": biFg, "bg": biFg, "ulimit": biUlimit, "compgen": biUnsupported,
		"complete": biUnsupported, "coproc": biUnsupported, "fc": biUnsupported,
		"history": biUnsupported, "bind": biUnsupported,
	}
}

// write writes to fd n of a builtin; a broken pipe ends the shell as
// SIGPIPE would (status 141), other errors are reported by the caller.
func (r *runner) write(n int, s string) error {
	_, err := io.WriteString(r.writerFD(n), s)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		r.exiting = true
		r.exitCode = 141
	}
	return err
}

func (r *runner) writeErr(name string, err error) int {
	if r.exiting {
		return 141
	}
	if errors.Is(err, syscall.EFBIG) {
		return 1
	}
	r.errorf("%s: write error: %s", name, ErrText(err))
	return 1
}

func biTrue(r *runner, args []string) int  { return 0 }
func biFalse(r *runner, args []string) int { return 1 }

func biUnsupported(r *runner, args []string) int {
	r.errorf("%s: not supported in the isolate tier", args[0])
	r.sh.setUnsupported(fmt.Errorf("builtin %s: %w", args[0], ErrUnsupported))
	return 2
}

func biEcho(r *runner, args []string) int {
	newline, escapes := true, r.shopts["xpg_echo"]
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || strings.Trim(a[1:], "neE") != "" {
			break
		}
		for _, c := range a[1:] {
			switch c {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
	}
	var sb strings.Builder
	for j, a := range args[i:] {
		if j > 0 {
			sb.WriteByte(' ')
		}
		if escapes {
			s, stop := decodeEscapes(a, escapeEcho)
			sb.WriteString(s)
			if stop {
				newline = false
				break
			}
			continue
		}
		sb.WriteString(a)
	}
	if newline {
		sb.WriteByte('\n')
	}
	if err := r.write(1, sb.String()); err != nil {
		return r.writeErr("echo", err)
	}
	return 0
}

func numArg(r *runner, name string, args []string, def int) (int, bool) {
	if len(args) < 2 {
		return def, true
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		r.errorf("%s: %s: numeric argument required", name, args[1])
		return 2, false
	}
	return n, true
}

func biExit(r *runner, args []string) int {
	if r.sh.track.login != nil && r.logoutFiles() {
		// A login shell's exit runs the logout files, which are the
		// container's to run: refused, and (backend isolate asked for)
		// the shell exits without them.
		r.sh.setUnsupported(fmt.Errorf("exit in a login shell (it runs the logout files): %w", ErrUnsupported))
	}
	code := r.status
	if len(args) > 1 {
		n, err := strconv.ParseInt(strings.TrimSpace(args[1]), 10, 64)
		if err != nil {
			r.errorf("exit: %s: numeric argument required", args[1])
			code = 2
		} else {
			code = int(uint8(n))
		}
		if len(args) > 2 && err == nil {
			r.errorf("exit: too many arguments")
			code = 1
		}
	}
	r.exiting = true
	r.exitCode = code
	return code
}

func biReturn(r *runner, args []string) int {
	if r.inFunc == 0 && len(r.sources) == 0 {
		r.errorf("return: can only `return' from a function or sourced script")
		return 2
	}
	code := r.status
	if len(args) > 1 {
		n, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			r.errorf("return: %s: numeric argument required", args[1])
			code = 2
		} else {
			code = int(uint8(n))
		}
	}
	r.returning = true
	r.retBefore = r.status
	r.status = code
	return code
}

func loopCount(r *runner, name string, args []string) (int, bool) {
	if r.loopDepth == 0 {
		r.errorf("%s: only meaningful in a `for', `while', or `until' loop", name)
		return 0, false
	}
	n, ok := numArg(r, name, args, 1)
	if !ok {
		return 0, false
	}
	if n < 1 {
		r.errorf("%s: %s: loop count out of range", name, args[1])
		return 0, false
	}
	return min(n, r.loopDepth), true
}

func biBreak(r *runner, args []string) int {
	n, ok := loopCount(r, "break", args)
	if !ok {
		if len(args) > 1 && r.loopDepth > 0 {
			return 1
		}
		return 0
	}
	r.breakN = n
	return 0
}

func biContinue(r *runner, args []string) int {
	n, ok := loopCount(r, "continue", args)
	if !ok {
		if len(args) > 1 && r.loopDepth > 0 {
			return 1
		}
		return 0
	}
	r.contN = n
	return 0
}

func biShift(r *runner, args []string) int {
	n, ok := numArg(r, "shift", args, 1)
	if !ok {
		return 1
	}
	if n < 0 {
		r.errorf("shift: %d: shift count out of range", n)
		return 1
	}
	if n > len(r.params) {
		return 1
	}
	r.params = r.params[n:]
	return 0
}

func biEval(r *runner, args []string) int {
	src := strings.Join(args[1:], " ")
	if strings.TrimSpace(src) == "" {
		return 0
	}
	if r.depth >= r.sh.limits.Depth {
		r.sh.breach("depth", int64(r.sh.limits.Depth))
		return 126
	}
	r.depth++
	// eval's text numbers its lines ($LINENO) from the eval's own line.
	savedShift := r.lineShift
	r.lineShift = r.lineno - 1
	defer func() { r.depth--; r.lineShift = savedShift }()
	r.status = 0
	return r.evalString(src, "eval")
}

func biSource(r *runner, args []string) int {
	if len(args) < 2 {
		r.errorf("%s: filename argument required", args[0])
		r.write(2, args[0]+": usage: "+args[0]+" filename [arguments]\n")
		return 2
	}
	name := args[1]
	read := r.readFile
	if r.sh.startup {
		read = r.readStartup
	}
	data, err := read(name)
	if err != nil && !strings.Contains(name, "/") {
		data, err = read(r.abs(name))
	}
	if err != nil {
		r.errorf("%s: %s", name, ErrText(err))
		return 1
	}
	if ok, st := r.verifyScript(string(data), name); !ok {
		return st
	}
	if r.depth >= r.sh.limits.Depth {
		r.sh.breach("depth", int64(r.sh.limits.Depth))
		return 126
	}
	r.depth++
	saved := r.params
	if len(args) > 2 {
		r.params = args[2:]
	}
	r.sources = append(r.sources, name)
	defer func() {
		r.depth--
		r.sources = r.sources[:len(r.sources)-1]
		if len(args) > 2 {
			r.params = saved
		}
	}()
	r.status = 0
	var st int
	if r.sh.startup {
		st = r.startupEval(string(data), name)
	} else {
		st = r.evalString(string(data), name)
	}
	if r.returning {
		r.returning = false
	}
	return st
}

// readFile reads a whole file from the sandbox (or a virtual device).
func (r *runner) readFile(name string) ([]byte, error) {
	c := &Call{FS: r.sh.sh.cfg.FS, Dir: r.dir, Stdin: r.stdin()}
	rc, err := c.Open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	if st, ok := rc.(interface{ Stat() (fs.FileInfo, error) }); ok {
		// One read for the whole file (a script sourced, a startup
		// file), not a buffer doubling from 512 bytes.
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() < r.sh.limits.StringBytes {
			buf.Grow(int(fi.Size()) + bytes.MinRead)
		}
	}
	_, err = buf.ReadFrom(limitReader(rc, r.sh.limits.StringBytes))
	data := buf.Bytes()
	if err != nil {
		var pe interface{ Unwrap() error }
		if errors.As(err, &pe) || errors.Is(err, syscall.EISDIR) {
			return nil, err
		}
		return nil, err
	}
	return data, nil
}

func limitReader(rd io.Reader, n int64) io.Reader { return io.LimitReader(rd, n) }

func biExec(r *runner, args []string) int {
	if len(args) == 1 {
		r.persistFDs = true
		return 0
	}
	a := args[1:]
	for len(a) > 0 && strings.HasPrefix(a[0], "-") {
		if a[0] == "--" {
			a = a[1:]
			break
		}
		a = a[1:]
	}
	if len(a) == 0 {
		r.persistFDs = true
		return 0
	}
	st := r.exec(a, false)
	r.exiting = true
	r.exitCode = st
	return st
}

func biTimes(r *runner, args []string) int {
	r.write(1, "0m0.000s 0m0.000s\n0m0.000s 0m0.000s\n")
	return 0
}

func biCaller(r *runner, args []string) int {
	if r.inFunc == 0 {
		return 1
	}
	n := 0
	if len(args) > 1 {
		n, _ = strconv.Atoi(args[1])
	}
	idx := len(r.funcNames) - 1 - n
	if idx < 0 {
		return 1
	}
	line := r.callLines[idx]
	if len(args) > 1 {
		if idx == 0 {
			return 1
		}
		r.write(1, fmt.Sprintf("%d %s environment\n", line, r.funcNames[idx-1]))
	} else {
		r.write(1, fmt.Sprintf("%d NULL\n", line))
	}
	return 0
}

func biUmask(r *runner, args []string) int {
	a := args[1:]
	sym := false
	if len(a) > 0 && a[0] == "-S" {
		sym = true
		a = a[1:]
	}
	if len(a) == 0 {
		if sym {
			perm := func(shift uint) string {
				bits := ^r.umask >> shift & 7
				s := ""
				if bits&4 != 0 {
					s += "r"
				}
				if bits&2 != 0 {
					s += "w"
				}
				if bits&1 != 0 {
					s += "x"
				}
				return s
			}
			r.write(1, fmt.Sprintf("u=%s,g=%s,o=%s\n", perm(6), perm(3), perm(0)))
		} else {
			r.write(1, fmt.Sprintf("%04o\n", r.umask))
		}
		return 0
	}
	n, err := strconv.ParseUint(a[0], 8, 32)
	if err != nil {
		r.errorf("umask: %s: octal number out of range", a[0])
		return 1
	}
	r.umask = int(n)
	return 0
}

func biWait(r *runner, args []string) int {
	status := 0
	if len(args) == 2 && args[1] == "-n" {
		return r.waitAny()
	}
	if len(args) > 1 {
		for _, a := range args[1:] {
			if a == "-n" || a == "-f" {
				continue
			}
			pid, err := strconv.Atoi(strings.TrimPrefix(a, "%"))
			j := r.jobs[pid]
			if err != nil || j == nil {
				r.errorf("wait: pid %s is not a child of this shell", a)
				status = 127
				continue
			}
			if !r.waitJob(j) {
				return 130
			}
			status = j.status
			delete(r.jobs, pid)
		}
		return status
	}
	pids := make([]int, 0, len(r.jobs))
	for pid := range r.jobs {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		if !r.waitJob(r.jobs[pid]) {
			return 130
		}
		delete(r.jobs, pid)
	}
	return 0
}

// waitAny is wait -n: the status of the next job to end, 127 if none.
func (r *runner) waitAny() int {
	if len(r.jobs) == 0 {
		return 127
	}
	pids := make([]int, 0, len(r.jobs))
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(r.ctx.Done())}}
	for pid, j := range r.jobs {
		pids = append(pids, pid)
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(j.done)})
	}
	released := r.sh.cpu.block()
	i, _, _ := reflect.Select(cases)
	r.sh.cpu.unblock(r.ctx, released)
	if i == 0 {
		return 130
	}
	pid := pids[i-1]
	st := r.jobs[pid].status
	delete(r.jobs, pid)
	return st
}

func (r *runner) waitJob(j *job) bool {
	released := r.sh.cpu.block()
	defer r.sh.cpu.unblock(r.ctx, released)
	select {
	case <-j.done:
		return true
	case <-r.ctx.Done():
		return false
	}
}

func biKill(r *runner, args []string) int {
	a := args[1:]
	sig := 15
	if len(a) > 0 && (a[0] == "-l" || a[0] == "-L") {
		return killList(r, a[1:])
	}
	if len(a) > 0 && len(a[0]) > 1 && a[0][0] == '-' && a[0] != "--" {
		spec := a[0][1:]
		a = a[1:]
		if spec == "s" || spec == "n" {
			if len(a) == 0 {
				r.errorf("kill: -%s: option requires an argument", spec)
				return 2
			}
			spec, a = a[0], a[1:]
		}
		n, ok := signalNumber(spec)
		if !ok {
			r.errorf("kill: %s: invalid signal specification", spec)
			return 1
		}
		sig = n
	} else if len(a) > 0 && a[0] == "--" {
		a = a[1:]
	}
	if len(a) == 0 {
		r.write(2, "kill: usage: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]\n")
		return 2
	}
	status := 0
	for _, p := range a {
		pid, err := strconv.Atoi(strings.TrimPrefix(p, "%"))
		if err == nil && pid == r.bashpid && !strings.HasPrefix(p, "%") {
			r.signalSelf(sig)
			continue
		}
		if err != nil || r.jobs[pid] == nil {
			r.errorf("kill: (%s) - No such process", p)
			status = 1
			continue
		}
		r.errorf("kill: signalling background jobs is not supported in the isolate tier")
		r.sh.setUnsupported(fmt.Errorf("kill: %w", ErrUnsupported))
		status = 1
	}
	return status
}

// signalNames are Linux's signal names by number (x86-64).
var signalNames = [...]string{1: "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1",
	"SEGV", "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU",
	"URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS"}

// signalName is the name of signal n without SIG, as kill -l prints it.
func signalName(n int) string {
	switch {
	case n >= 1 && n < len(signalNames):
		return signalNames[n]
	case n == 34:
		return "RTMIN"
	case n > 34 && n <= 49:
		return "RTMIN+" + strconv.Itoa(n-34)
	case n >= 50 && n < 64:
		return "RTMAX-" + strconv.Itoa(64-n)
	case n == 64:
		return "RTMAX"
	}
	return ""
}

// signalNumber reads a signal given by number or name (with or without
// SIG, in any case).
func signalNumber(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, n >= 0 && n <= 64 && (n == 0 || signalName(n) != "")
	}
	name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	for n := 1; n <= 64; n++ {
		if signalName(n) == name {
			return n, true
		}
	}
	return 0, false
}

// killList is kill -l: the table of signals, or the names or numbers of
// the given ones (an exit status above 128 names its signal).
func killList(r *runner, args []string) int {
	if len(args) == 0 {
		var sb strings.Builder
		k := 0
		for n := 1; n <= 64; n++ {
			name := signalName(n)
			if name == "" {
				continue
			}
			fmt.Fprintf(&sb, "%2d) SIG%s", n, name)
			if k++; k%5 == 0 {
				sb.WriteByte('\n')
			} else {
				sb.WriteByte('\t')
			}
		}
		if k%5 != 0 {
			sb.WriteByte('\n')
		}
		r.write(1, sb.String())
		return 0
	}
	status := 0
	for _, a := range args {
		if n, err := strconv.Atoi(a); err == nil {
			if n > 128 {
				n -= 128
			}
			if name := signalName(n); name != "" {
				r.write(1, name+"\n")
				continue
			}
		} else if n, ok := signalNumber(a); ok {
			r.write(1, strconv.Itoa(n)+"\n")
			continue
		}
		r.errorf("kill: %s: invalid signal specification", a)
		status = 1
	}
	return status
}

// signalSelf delivers sig to the shell itself: a trap runs, an ignored
// signal does nothing, and otherwise the default action ends the shell
// with status 128+sig (or does nothing for the signals ignored by
// default).
func (r *runner) signalSelf(sig int) {
	if sig == 0 {
		return
	}
	name := signalName(sig)
	if cmd, ok := r.traps[name]; ok {
		if cmd != "" {
			saved := r.status
			r.evalString(cmd, "trap")
			r.status = saved
		}
		return
	}
	switch name {
	case "CHLD", "CONT", "URG", "WINCH":
		return
	case "STOP", "TSTP", "TTIN", "TTOU":
		r.errorf("kill: stopping the shell is not supported in the isolate tier")
		r.sh.setUnsupported(fmt.Errorf("kill -%s: %w", name, ErrUnsupported))
		return
	}
	if r.bashpid != 1 {
		// A subshell dies: its parent reports how (not for INT or PIPE).
		desc := map[string]string{"HUP": "Hangup", "QUIT": "Quit", "KILL": "Killed", "USR1": "User defined signal 1",
			"USR2": "User defined signal 2", "ALRM": "Alarm clock", "TERM": "Terminated", "ABRT": "Aborted"}[name]
		if desc != "" {
			r.write(2, desc+"\n")
		}
	}
	r.exiting = true
	r.exitCode = 128 + sig
}

func biJobs(r *runner, args []string) int { return 0 }

func biFg(r *runner, args []string) int {
	r.errorf("%s: no job control", args[0])
	return 1
}

func biUlimit(r *runner, args []string) int {
	r.write(1, "unlimited\n")
	return 0
}

func biEnable(r *runner, args []string) int {
	if len(args) == 1 {
		var names []string
		for n := range builtins {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			r.write(1, "enable "+n+"\n")
		}
		return 0
	}
	return biUnsupported(r, args)
}

func biHelp(r *runner, args []string) int {
	r.write(1, "GNU bash, version 5.2.15(1)-release (x86_64-pc-linux-gnu)\n")
	return 0
}

func biBuiltin(r *runner, args []string) int {
	if len(args) < 2 {
		return 0
	}
	b, ok := builtins[args[1]]
	if !ok {
		r.errorf("builtin: %s: not a shell builtin", args[1])
		return 1
	}
	return b(r, args[1:])
}

// builtinTool runs a builtin reached by an absolute path (/bin/echo,
// /usr/bin/test) as if it were the coreutils program.
func builtinTool(r *runner, c *Call) int {
	sub := *c
	sub.Args = append([]string{path.Base(c.Args[0])}, c.Args[1:]...)
	return r.execCallback(r.ctx, &sub)
}

// biLet evaluates each argument as arithmetic.
func biLet(r *runner, args []string) int {
	if len(args) < 2 {
		r.errorf("let: expression expected")
		return 1
	}
	var last int64
	for _, a := range args[1:] {
		v, err := func() (v int64, err error) {
			defer func() {
				if p := recover(); p != nil {
					if e, ok := p.(arithErr); ok {
						r.arithRefuse(e)
						err = e
						return
					}
					panic(p)
				}
			}()
			return r.arithString(a), nil
		}()
		if err != nil {
			r.errorf("let: %s", err)
			return 1
		}
		last = v
	}
	if last == 0 {
		return 1
	}
	return 0
}

// secondsSince is $SECONDS.
func (r *runner) seconds() int64 {
	return int64(time.Since(r.sh.start) / time.Second)
}

// letClause runs let from the AST.
func (r *runner) letClause(c *syntax.LetClause) int {
	if r.xtrace {
		var parts []string
		for _, x := range c.Exprs {
			parts = append(parts, quoteTrace(strings.ReplaceAll(arithString(x), " ", "")))
		}
		r.trace("let " + strings.Join(parts, " "))
	}
	var last int64
	for _, x := range c.Exprs {
		sp, ok := r.spanOf(x, x.Pos().Offset(), x.End().Offset())
		var v int64
		var err error
		r.withSpan(sp, ok, func() int64 { v, err = r.arithSafe(x); return 0 })
		if err != nil {
			r.errorf("let: %s", err)
			return 1
		}
		last = v
	}
	if last == 0 {
		return 1
	}
	return 0
}

// biLogout is logout in a shell that is never a login shell.
func biLogout(r *runner, args []string) int {
	if r.sh.track.login != nil {
		r.sh.setUnsupported(fmt.Errorf("logout in a login shell: %w", ErrUnsupported))
		return ExitUnsupported
	}
	r.errorf("logout: not login shell: use `exit'")
	return 1
}
