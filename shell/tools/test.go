package tools

import (
	"context"
	"golang.org/x/sys/unix"
	"io/fs"
	"strings"

	"rung.dev/rung/shell"
)

// test and [: coreutils test 9.1 (POSIX argument-count rules, then a
// recursive-descent parse for longer expressions). Exit 0 true, 1 false,
// 2 error. File tests use the sandbox's view; access tests (-r -w -x)
// answer as root does, since the sandbox's processes run as root.

type testErr struct{ msg string }

func (e *testErr) Error() string { return e.msg }

type tester struct {
	c    *shell.Call
	args []string
	pos  int
}

func testCheck(args []string) error {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "--version") {
		return errUnsupportedf("option %s", args[0])
	}
	return nil
}

func runTest(ctx context.Context, c *shell.Call) int {
	args := c.Args[1:]
	if c.Name() == "[" {
		if len(args) == 1 && (args[0] == "--help" || args[0] == "--version") {
			return c.Fail("option " + args[0])
		}
		if len(args) == 0 || args[len(args)-1] != "]" {
			c.Errorf("missing ']'")
			return 2
		}
		args = args[:len(args)-1]
	}
	t := &tester{c: c, args: args}
	v, err := t.eval()
	if err != nil {
		c.Errorf("%s", err)
		return 2
	}
	if v {
		return 0
	}
	return 1
}

func (t *tester) eval() (bool, error) {
	a := t.args
	switch len(a) {
	case 0:
		return false, nil
	case 1:
		return a[0] != "", nil
	case 2:
		return t.two(a[0], a[1])
	case 3:
		return t.three(a)
	case 4:
		if a[0] == "!" {
			v, err := t.three(a[1:])
			return !v, err
		}
		if a[0] == "(" && a[3] == ")" {
			return t.two(a[1], a[2])
		}
	}
	v, err := t.or()
	if err == nil && t.pos < len(t.args) {
		return false, &testErr{"extra argument " + txQuote(t.args[t.pos])}
	}
	return v, err
}

func (t *tester) two(a, b string) (bool, error) {
	if a == "!" {
		return b == "", nil
	}
	if testUnary(a) {
		return t.unary(a, b)
	}
	return false, &testErr{txQuote(a) + ": unary operator expected"}
}

func (t *tester) three(a []string) (bool, error) {
	if testBinary(a[1]) {
		return t.binary(a[0], a[1], a[2])
	}
	if a[1] == "-a" || a[1] == "-o" {
		x, y := a[0] != "", a[2] != ""
		if a[1] == "-a" {
			return x && y, nil
		}
		return x || y, nil
	}
	if a[0] == "!" {
		v, err := t.two(a[1], a[2])
		return !v, err
	}
	if a[0] == "(" && a[2] == ")" {
		return a[1] != "", nil
	}
	return false, &testErr{txQuote(a[1]) + ": binary operator expected"}
}

func testUnary(op string) bool {
	return len(op) == 2 && op[0] == '-' && strings.IndexByte("bcdefgGhkLNOprsStuwxzn", op[1]) >= 0
}

func testBinary(op string) bool {
	switch op {
	case "=", "==", "!=", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef":
		return true
	}
	return false
}

func (t *tester) peek() (string, bool) {
	if t.pos < len(t.args) {
		return t.args[t.pos], true
	}
	return "", false
}

func (t *tester) or() (bool, error) {
	v, err := t.and()
	for err == nil {
		if s, ok := t.peek(); !ok || s != "-o" {
			break
		}
		t.pos++
		var w bool
		w, err = t.and()
		v = v || w
	}
	return v, err
}

func (t *tester) and() (bool, error) {
	v, err := t.term()
	for err == nil {
		if s, ok := t.peek(); !ok || s != "-a" {
			break
		}
		t.pos++
		var w bool
		w, err = t.term()
		v = v && w
	}
	return v, err
}

func (t *tester) term() (bool, error) {
	s, ok := t.peek()
	if !ok {
		return false, &testErr{"argument expected"}
	}
	rest := len(t.args) - t.pos
	switch {
	case s == "!":
		t.pos++
		v, err := t.term()
		return !v, err
	case s == "(":
		t.pos++
		v, err := t.or()
		if err != nil {
			return false, err
		}
		if c, ok := t.peek(); !ok || c != ")" {
			got := "end of arguments"
			if ok {
				got = txQuote(c)
			}
			return false, &testErr{"')' expected, found " + got}
		}
		t.pos++
		return v, nil
	case rest >= 3 && testBinary(t.args[t.pos+1]):
		a, op, b := s, t.args[t.pos+1], t.args[t.pos+2]
		t.pos += 3
		return t.binary(a, op, b)
	case testUnary(s):
		if rest < 2 {
			return false, &testErr{"argument expected"}
		}
		t.pos += 2
		return t.unary(s, t.args[t.pos-1])
	}
	t.pos++
	return s != "", nil
}

func (t *tester) stat(name string, follow bool) (fs.FileInfo, error) {
	if name == "" {
		return nil, fs.ErrNotExist
	}
	if follow {
		return t.c.FS.Stat(t.c.Abs(name))
	}
	return t.c.FS.Lstat(t.c.Abs(name))
}

func (t *tester) unary(op, a string) (bool, error) {
	switch op {
	case "-z":
		return a == "", nil
	case "-n":
		return a != "", nil
	case "-t":
		if _, err := testInt(a); err != nil {
			return false, err
		}
		return false, nil
	}
	fi, err := t.stat(a, op != "-h" && op != "-L")
	if err != nil {
		return false, nil
	}
	m := fi.Mode()
	switch op {
	case "-e", "-r", "-w":
		return true, nil
	case "-f":
		return m.IsRegular(), nil
	case "-d":
		return m.IsDir(), nil
	case "-h", "-L":
		return m&fs.ModeSymlink != 0, nil
	case "-p":
		return m&fs.ModeNamedPipe != 0, nil
	case "-S":
		return m&fs.ModeSocket != 0, nil
	case "-b":
		return m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0, nil
	case "-c":
		return m&fs.ModeCharDevice != 0, nil
	case "-s":
		return fi.Size() > 0, nil
	case "-x":
		return m.IsDir() || m.Perm()&0o111 != 0, nil
	case "-u":
		return m&fs.ModeSetuid != 0, nil
	case "-g":
		return m&fs.ModeSetgid != 0, nil
	case "-k":
		return m&fs.ModeSticky != 0, nil
	case "-O", "-G":
		st, ok := fi.Sys().(*unix.Stat_t)
		if !ok {
			return true, nil
		}
		if op == "-O" {
			return st.Uid == 0, nil
		}
		return st.Gid == 0, nil
	case "-N":
		st, ok := fi.Sys().(*unix.Stat_t)
		if !ok {
			return false, nil
		}
		return st.Mtim.Sec > st.Atim.Sec || st.Mtim.Sec == st.Atim.Sec && st.Mtim.Nsec > st.Atim.Nsec, nil
	}
	return false, nil
}

// testInt validates an integer operand and returns its canonical digits
// with sign, for comparison without overflow.
func testInt(s string) (string, error) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if t != "" && (t[0] == '-' || t[0] == '+') {
		neg = t[0] == '-'
		t = t[1:]
	}
	t = strings.TrimRight(t, " \t\n\v\f\r")
	if t == "" || strings.Trim(t, "0123456789") != "" {
		return "", &testErr{"invalid integer " + txQuote(s)}
	}
	t = strings.TrimLeft(t, "0")
	if t == "" {
		return "0", nil
	}
	if neg {
		return "-" + t, nil
	}
	return t, nil
}

func testIntCmp(a, b string) int {
	an, bn := strings.HasPrefix(a, "-"), strings.HasPrefix(b, "-")
	if an != bn {
		if an {
			return -1
		}
		return 1
	}
	a, b = strings.TrimPrefix(a, "-"), strings.TrimPrefix(b, "-")
	c := len(a) - len(b)
	if c == 0 {
		c = strings.Compare(a, b)
	}
	if an {
		return -c
	}
	return c
}

func (t *tester) binary(a, op, b string) (bool, error) {
	switch op {
	case "=", "==":
		return a == b, nil
	case "!=":
		return a != b, nil
	case "-nt", "-ot":
		fa, ea := t.stat(a, true)
		fb, eb := t.stat(b, true)
		if op == "-ot" {
			fa, ea, fb, eb = fb, eb, fa, ea
		}
		switch {
		case ea != nil:
			return false, nil
		case eb != nil:
			return true, nil
		}
		return fa.ModTime().After(fb.ModTime()), nil
	case "-ef":
		fa, ea := t.stat(a, true)
		fb, eb := t.stat(b, true)
		if ea != nil || eb != nil {
			return false, nil
		}
		sa, ok1 := fa.Sys().(*unix.Stat_t)
		sb, ok2 := fb.Sys().(*unix.Stat_t)
		return ok1 && ok2 && sa.Dev == sb.Dev && sa.Ino == sb.Ino, nil
	}
	x, err := testInt(a)
	if err != nil {
		return false, err
	}
	y, err := testInt(b)
	if err != nil {
		return false, err
	}
	c := testIntCmp(x, y)
	switch op {
	case "-eq":
		return c == 0, nil
	case "-ne":
		return c != 0, nil
	case "-lt":
		return c < 0, nil
	case "-le":
		return c <= 0, nil
	case "-gt":
		return c > 0, nil
	}
	return c >= 0, nil
}
