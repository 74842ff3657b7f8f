package shell

import (
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/syntax"
)

// testErr is a syntax or operand error of test/[ (exit status 2).
type testErr struct{ msg string }

func biTest(r *runner, args []string) int { return r.runTest("test", args[1:]) }

func biBracket(r *runner, args []string) int {
	if len(args) < 2 || args[len(args)-1] != "]" {
		r.errorf("[: missing `]'")
		return 2
	}
	return r.runTest("[", args[1:len(args)-1])
}

func (r *runner) runTest(name string, args []string) (status int) {
	defer func() {
		if p := recover(); p != nil {
			if e, ok := p.(testErr); ok {
				r.errorf("%s: %s", name, e.msg)
				status = 2
				return
			}
			panic(p)
		}
	}()
	t := &tester{r: r, args: args}
	var ok bool
	ok = t.posix(args)
	if ok {
		return 0
	}
	return 1
}

type tester struct {
	r    *runner
	args []string
	pos  int
}

var unaryOps = map[string]bool{
	"-e": true, "-f": true, "-d": true, "-s": true, "-r": true, "-w": true, "-x": true,
	"-L": true, "-h": true, "-b": true, "-c": true, "-p": true, "-S": true, "-g": true,
	"-u": true, "-k": true, "-O": true, "-G": true, "-N": true, "-t": true, "-z": true,
	"-n": true, "-v": true, "-R": true, "-a": true, "-o": true,
}

var binaryOps = map[string]bool{
	"=": true, "==": true, "!=": true, "<": true, ">": true, "-eq": true, "-ne": true,
	"-lt": true, "-le": true, "-gt": true, "-ge": true, "-nt": true, "-ot": true, "-ef": true,
	"-a": true, "-o": true,
}

// posix applies the POSIX rules by argument count, falling back to the
// full grammar for five or more arguments.
func (t *tester) posix(a []string) bool {
	switch len(a) {
	case 0:
		return false
	case 1:
		return a[0] != ""
	case 2:
		if a[0] == "!" {
			return a[1] == ""
		}
		if unaryOps[a[0]] && a[0] != "-a" && a[0] != "-o" || a[0] == "-a" || a[0] == "-o" {
			if a[0] == "-a" || a[0] == "-o" {
				if a[0] == "-a" {
					return t.unary("-e", a[1])
				}
				return t.unary(a[0], a[1])
			}
			return t.unary(a[0], a[1])
		}
		panic(testErr{a[0] + ": unary operator expected"})
	case 3:
		if binaryOps[a[1]] {
			if a[1] == "-a" {
				return a[0] != "" && a[2] != ""
			}
			if a[1] == "-o" {
				return a[0] != "" || a[2] != ""
			}
			return t.binary(a[0], a[1], a[2])
		}
		if a[0] == "!" {
			return !t.posix(a[1:])
		}
		if a[0] == "(" && a[2] == ")" {
			return a[1] != ""
		}
		panic(testErr{a[1] + ": binary operator expected"})
	case 4:
		if a[0] == "!" {
			return !t.posix(a[1:])
		}
		if a[0] == "(" && a[3] == ")" {
			return t.posix(a[1:3])
		}
	}
	t.args, t.pos = a, 0
	v := t.or()
	if t.pos < len(t.args) {
		panic(testErr{"too many arguments"})
	}
	return v
}

func (t *tester) peek() (string, bool) {
	if t.pos < len(t.args) {
		return t.args[t.pos], true
	}
	return "", false
}

func (t *tester) or() bool {
	v := t.and()
	for {
		s, ok := t.peek()
		if !ok || s != "-o" {
			return v
		}
		t.pos++
		w := t.and()
		v = v || w
	}
}

func (t *tester) and() bool {
	v := t.not()
	for {
		s, ok := t.peek()
		if !ok || s != "-a" {
			return v
		}
		t.pos++
		w := t.not()
		v = v && w
	}
}

func (t *tester) not() bool {
	if s, ok := t.peek(); ok && s == "!" {
		t.pos++
		return !t.not()
	}
	return t.primary()
}

func (t *tester) primary() bool {
	s, ok := t.peek()
	if !ok {
		panic(testErr{"argument expected"})
	}
	if s == "(" {
		t.pos++
		v := t.or()
		if c, ok := t.peek(); !ok || c != ")" {
			panic(testErr{"`)' expected"})
		}
		t.pos++
		return v
	}
	if t.pos+2 < len(t.args)+0 && binaryOps[t.args[t.pos+1]] && t.args[t.pos+1] != "-a" && t.args[t.pos+1] != "-o" {
		a, op, b := t.args[t.pos], t.args[t.pos+1], t.args[t.pos+2]
		t.pos += 3
		return t.binary(a, op, b)
	}
	if unaryOps[s] && t.pos+1 < len(t.args) {
		t.pos += 2
		return t.unary(s, t.args[t.pos-1])
	}
	t.pos++
	return s != ""
}

func (t *tester) unary(op, x string) bool {
	return t.r.unaryTest(op, x)
}

func (t *tester) binary(a, op, b string) bool {
	switch op {
	case "=", "==":
		return a == b
	case "!=":
		return a != b
	case "<":
		return a < b
	case ">":
		return a > b
	case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
		x, ok1 := testInt(a)
		if !ok1 {
			panic(testErr{a + ": integer expression expected"})
		}
		y, ok2 := testInt(b)
		if !ok2 {
			panic(testErr{b + ": integer expression expected"})
		}
		return intCompare(op, x, y)
	case "-nt", "-ot", "-ef":
		return t.r.fileCompare(a, op, b)
	}
	panic(testErr{op + ": binary operator expected"})
}

func intCompare(op string, x, y int64) bool {
	switch op {
	case "-eq":
		return x == y
	case "-ne":
		return x != y
	case "-lt":
		return x < y
	case "-le":
		return x <= y
	case "-gt":
		return x > y
	}
	return x >= y
}

func testInt(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func (r *runner) stat(name string, follow bool) (fs.FileInfo, error) {
	switch name {
	case "/dev/null", "/dev/zero", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return devInfo{name: name[5:], mode: fs.ModeDevice | fs.ModeCharDevice | 0o666}, nil
	case "/dev", "/dev/fd":
		return devInfo{name: name, mode: fs.ModeDir | 0o755}, nil
	}
	if strings.HasPrefix(name, "/dev/fd/") {
		n, err := strconv.Atoi(name[8:])
		if err == nil && r.fds[n] != nil {
			return devInfo{name: name[8:], mode: fs.ModeNamedPipe | 0o600}, nil
		}
	}
	if name == "" {
		return nil, os.ErrNotExist
	}
	if follow {
		return r.sh.sh.cfg.FS.Stat(r.abs(name))
	}
	return r.sh.sh.cfg.FS.Lstat(r.abs(name))
}

func (r *runner) unaryTest(op, x string) bool {
	switch op {
	case "-z":
		return x == ""
	case "-n":
		return x != ""
	case "-v":
		name, idx, hasIdx := strings.Cut(x, "[")
		if hasIdx {
			idx = strings.TrimSuffix(idx, "]")
			pv := r.lookupParam(name, nil, &idx)
			return pv.set
		}
		v := r.getVar(x)
		return v != nil && (v.set || v.kind != kindString && v.count() > 0)
	case "-R":
		v := r.lookupVar(x)
		return v != nil && v.nameref
	case "-o":
		return r.optionOn(x)
	case "-t":
		return false
	}
	fi, err := r.stat(x, op != "-L" && op != "-h")
	if err != nil {
		return false
	}
	m := fi.Mode()
	switch op {
	case "-e", "-a":
		return true
	case "-f":
		return m.IsRegular()
	case "-d":
		return m.IsDir()
	case "-s":
		return fi.Size() > 0
	case "-r", "-w", "-O", "-G":
		return true
	case "-x":
		return m.IsDir() || m.Perm()&0o111 != 0
	case "-L", "-h":
		return m&fs.ModeSymlink != 0
	case "-b":
		return m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0
	case "-c":
		return m&fs.ModeCharDevice != 0
	case "-p":
		return m&fs.ModeNamedPipe != 0
	case "-S":
		return m&fs.ModeSocket != 0
	case "-g":
		return m&fs.ModeSetgid != 0
	case "-u":
		return m&fs.ModeSetuid != 0
	case "-k":
		return m&fs.ModeSticky != 0
	case "-N":
		return false
	}
	return false
}

func (r *runner) fileCompare(a, op, b string) bool {
	fa, errA := r.stat(a, true)
	fb, errB := r.stat(b, true)
	switch op {
	case "-nt":
		if errA != nil {
			return false
		}
		return errB != nil || fa.ModTime().After(fb.ModTime())
	case "-ot":
		if errB != nil {
			return false
		}
		return errA != nil || fa.ModTime().Before(fb.ModTime())
	}
	if errA != nil || errB != nil {
		return false
	}
	sa, okA := fa.Sys().(*unix.Stat_t)
	sb, okB := fb.Sys().(*unix.Stat_t)
	return okA && okB && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// testClause evaluates [[ ... ]].
func (r *runner) testClause(c *syntax.TestClause) int {
	if r.xtrace {
		r.trace("[[ " + r.testText(c.X) + " ]]")
	}
	r.inCond = true
	v, err := r.testExpr(c.X)
	r.inCond = false
	if err == errBadRegex {
		return 2
	}
	if err != nil {
		r.errorf("%s", err)
		return 2
	}
	if v {
		return 0
	}
	return 1
}

// testText prints [[ ]] for set -x with its operands expanded, as bash.
func (r *runner) testText(x syntax.TestExpr) string {
	switch x := x.(type) {
	case *syntax.Word:
		return quoteTrace(r.literal(x))
	case *syntax.ParenTest:
		return "( " + r.testText(x.X) + " )"
	case *syntax.UnaryTest:
		return x.Op.String() + " " + r.testText(x.X)
	case *syntax.BinaryTest:
		if x.Op == syntax.TsMatch || x.Op == syntax.TsNoMatch || x.Op == syntax.TsMatchShort || x.Op == syntax.TsReMatch {
			if w, ok := x.Y.(*syntax.Word); ok {
				return r.testText(x.X) + " " + x.Op.String() + " " + r.pattern(w)
			}
		}
		return r.testText(x.X) + " " + x.Op.String() + " " + r.testText(x.Y)
	}
	return ""
}

type condErr string

func (e condErr) Error() string { return string(e) }

// errBadRegex is an =~ pattern that does not compile: [[ ]] returns 2
// without a message, as bash does.
var errBadRegex = condErr("invalid regular expression")

func (r *runner) testExpr(x syntax.TestExpr) (bool, error) {
	switch x := x.(type) {
	case *syntax.Word:
		return r.literal(x) != "", nil
	case *syntax.ParenTest:
		return r.testExpr(x.X)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsNot {
			v, err := r.testExpr(x.X)
			return !v, err
		}
		w, _ := x.X.(*syntax.Word)
		return r.unaryTest(x.Op.String(), r.literal(w)), nil
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.AndTest:
			v, err := r.testExpr(x.X)
			if err != nil || !v {
				return false, err
			}
			return r.testExpr(x.Y)
		case syntax.OrTest:
			v, err := r.testExpr(x.X)
			if err != nil || v {
				return v, err
			}
			return r.testExpr(x.Y)
		}
		lw, _ := x.X.(*syntax.Word)
		rw, _ := x.Y.(*syntax.Word)
		switch x.Op {
		case syntax.TsMatch, syntax.TsMatchShort:
			return r.matchPattern(r.pattern(rw), r.literal(lw), patternOpts{}), nil
		case syntax.TsNoMatch:
			return !r.matchPattern(r.pattern(rw), r.literal(lw), patternOpts{}), nil
		case syntax.TsReMatch:
			return r.regexMatch(r.literal(lw), rw)
		case syntax.TsBefore:
			return r.literal(lw) < r.literal(rw), nil
		case syntax.TsAfter:
			return r.literal(lw) > r.literal(rw), nil
		case syntax.TsEql, syntax.TsNeq, syntax.TsLss, syntax.TsLeq, syntax.TsGtr, syntax.TsGeq:
			a := r.arithString(r.literal(lw))
			b := r.arithString(r.literal(rw))
			return intCompare(x.Op.String(), a, b), nil
		case syntax.TsNewer, syntax.TsOlder, syntax.TsDevIno:
			return r.fileCompare(r.literal(lw), x.Op.String(), r.literal(rw)), nil
		}
	}
	return false, condErr("conditional expression not supported")
}

// regexMatch implements =~: quoted parts of the pattern match literally,
// the rest is a POSIX extended regular expression.
func (r *runner) regexMatch(s string, w *syntax.Word) (bool, error) {
	e := &expander{r: r, ifs: r.ifs()}
	e.word(w.Parts, false, false)
	e.finish()
	var sb strings.Builder
	for i, f := range e.fields {
		if i > 0 {
			sb.WriteByte(' ')
		}
		for _, sg := range f {
			if sg.quoted {
				sb.WriteString(regexp.QuoteMeta(sg.s))
			} else {
				sb.WriteString(sg.s)
			}
		}
	}
	re, err := compileERE(sb.String(), r.shopts["nocasematch"])
	if err != nil {
		return false, errBadRegex
	}
	m := re.FindStringSubmatch(s)
	r.unsetVar("BASH_REMATCH")
	v := r.ensureVar("BASH_REMATCH")
	v.kind, v.arr, v.set = kindIndexed, array{}, true
	if m == nil {
		return false, nil
	}
	v.arr = arrayOf(m...)
	return true, nil
}

// compileERE translates a POSIX ERE to Go's syntax and compiles it with
// leftmost-longest semantics.
func compileERE(p string, nocase bool) (*regexp.Regexp, error) {
	var sb strings.Builder
	if nocase {
		sb.WriteString("(?i)")
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '[':
			end := bracketEnd(p, i)
			if end < 0 {
				// regcomp: unmatched [ (REG_EBRACK).
				return nil, errors.New("unmatched [")
			}
			body := p[i+1 : end]
			sb.WriteByte('[')
			j := 0
			if j < len(body) && body[j] == '^' {
				sb.WriteByte('^')
				j++
			}
			for ; j < len(body); j++ {
				switch {
				case body[j] == '\\':
					sb.WriteString(`\\`)
				case body[j] == '[' && j+1 < len(body) && body[j+1] == ':':
					k := strings.Index(body[j:], ":]")
					sb.WriteString(body[j : j+k+2])
					j += k + 1
				case body[j] == ']' || body[j] == '[':
					sb.WriteByte('\\')
					sb.WriteByte(body[j])
				default:
					sb.WriteByte(body[j])
				}
			}
			sb.WriteByte(']')
			i = end
		case '\\':
			if i+1 < len(p) {
				i++
				n := p[i]
				if isAlnum(n) {
					switch n {
					case 'd', 'D', 'w', 'W', 's', 'S', 'b', 'B':
						sb.WriteByte('\\')
						sb.WriteByte(n)
					default:
						sb.WriteByte(n)
					}
				} else {
					sb.WriteByte('\\')
					sb.WriteByte(n)
				}
			} else {
				sb.WriteString(`\\`)
			}
		case '{':
			// A brace that does not start a valid interval is literal.
			j := i + 1
			for j < len(p) && (p[j] >= '0' && p[j] <= '9' || p[j] == ',') {
				j++
			}
			if j < len(p) && p[j] == '}' && j > i+1 && sb.Len() > 0 {
				sb.WriteString(p[i : j+1])
				i = j
			} else {
				sb.WriteString(`\{`)
			}
		default:
			sb.WriteByte(c)
		}
	}
	re, err := regexp.Compile(sb.String())
	if err != nil {
		return nil, err
	}
	re.Longest()
	return re, nil
}

// devInfo describes a virtual device for test and [[.
type devInfo struct {
	name string
	mode fs.FileMode
}

func (d devInfo) Name() string       { return d.name }
func (d devInfo) Size() int64        { return 0 }
func (d devInfo) Mode() fs.FileMode  { return d.mode }
func (d devInfo) ModTime() (t timeT) { return }
func (d devInfo) IsDir() bool        { return d.mode.IsDir() }
func (d devInfo) Sys() any           { return nil }

type timeT = time.Time
