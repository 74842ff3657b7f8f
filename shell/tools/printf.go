package tools

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"rung.dev/rung/shell"
)

// printf: coreutils /usr/bin/printf (the interpreter has its own builtin;
// this one serves `env printf`, `xargs printf`, `find -exec printf`).

type printfRun struct {
	c      *shell.Call
	out    *txOut
	status int
	stop   bool // \c seen
}

// printfHexFloat finds %a/%A conversions, which are not implemented.
var printfHexFloat = regexp.MustCompile(`%[-+ #0']*[0-9*]*(\.[0-9*]*)?[hlLjtz]*[aA]`)

// printfCheck refuses --help/--version and a literal format using %a.
func printfCheck(args []string) error {
	if err := trueCheck(args); err != nil {
		return err
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) > 0 && printfHexFloat.MatchString(strings.ReplaceAll(args[0], "%%", "")) {
		return errUnsupportedf("printf %%a")
	}
	return nil
}

func runPrintf(ctx context.Context, c *shell.Call) int {
	args := c.Args[1:]
	if err := printfCheck(args); err != nil {
		return c.Fail(strings.TrimSuffix(err.Error(), ": "+shell.ErrUnsupported.Error()))
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return txUsageMsg(c, "missing operand")
	}
	p := &printfRun{c: c, out: newTxOut(c.Stdout)}
	format, args := args[0], args[1:]
	for first := true; ; first = false {
		used := p.format(format, args)
		if p.stop || ctx.Err() != nil {
			break
		}
		if used == 0 {
			if first && len(args) > 0 {
				p.out.Flush()
				c.Errorf("warning: ignoring excess arguments, starting with %s", txQuote(args[0]))
			}
			break
		}
		args = args[used:]
		if len(args) == 0 {
			break
		}
	}
	if p.out.Flush() != nil {
		return 1
	}
	return p.status
}

// format prints format once, consuming args; it returns how many it used.
func (p *printfRun) format(f string, args []string) int {
	used := 0
	next := func() (string, bool) {
		if used < len(args) {
			used++
			return args[used-1], true
		}
		return "", false
	}
	for i := 0; i < len(f) && !p.stop; {
		ch := f[i]
		if ch == '\\' {
			i = p.escape(f, i, false)
			continue
		}
		if ch != '%' {
			p.out.WriteByte(ch)
			i++
			continue
		}
		if i+1 < len(f) && f[i+1] == '%' {
			p.out.WriteByte('%')
			i += 2
			continue
		}
		start := i
		i++
		var sp cSpec
	flags:
		for ; i < len(f); i++ {
			switch f[i] {
			case '-':
				sp.minus = true
			case '+':
				sp.plus = true
			case ' ':
				sp.space = true
			case '#':
				sp.hash = true
			case '0':
				sp.zero = true
			case '\'':
			default:
				break flags
			}
		}
		if i < len(f) && f[i] == '*' {
			a, _ := next()
			w := p.intArg(a)
			if w < 0 {
				sp.minus, w = true, -w
			}
			sp.width = int(min(w, math.MaxInt32))
			i++
		} else {
			for i < len(f) && isDigit(f[i]) {
				sp.width = min(sp.width*10+int(f[i]-'0'), math.MaxInt32)
				i++
			}
		}
		if i < len(f) && f[i] == '.' {
			sp.hasPrec = true
			i++
			if i < len(f) && f[i] == '*' {
				a, _ := next()
				pr := p.intArg(a)
				if pr < 0 {
					sp.hasPrec = false
				}
				sp.prec = int(max(0, min(pr, math.MaxInt32)))
				i++
			} else {
				for i < len(f) && isDigit(f[i]) {
					sp.prec = min(sp.prec*10+int(f[i]-'0'), math.MaxInt32)
					i++
				}
			}
		}
		for i < len(f) && strings.IndexByte("hlLjtz", f[i]) >= 0 {
			i++
		}
		if i >= len(f) {
			p.out.Flush()
			p.c.Errorf("%s: invalid conversion specification", txQuote(f[start:]))
			p.status = 1
			p.stop = true
			return used
		}
		sp.verb = f[i]
		i++
		a, _ := next()
		switch sp.verb {
		case 'd', 'i':
			p.out.WriteString(cFormatInt(sp, p.intArg(a), 0))
		case 'o', 'u', 'x', 'X':
			p.out.WriteString(cFormatInt(sp, 0, p.uintArg(a)))
		case 'e', 'E', 'f', 'F', 'g', 'G':
			p.out.WriteString(cFormatFloat(sp, p.floatArg(a)))
		case 'c':
			s := "\x00"
			if a != "" {
				s = a[:1]
			}
			p.out.WriteString(cFormatStr(cSpec{minus: sp.minus, width: sp.width}, s))
		case 's':
			p.out.WriteString(cFormatStr(sp, a))
		case 'b':
			var b strings.Builder
			sub := &printfRun{c: p.c, out: newTxOut(&b)}
			for j := 0; j < len(a) && !sub.stop; {
				if a[j] == '\\' {
					j = sub.escape(a, j, true)
					continue
				}
				sub.out.WriteByte(a[j])
				j++
			}
			sub.out.Flush()
			p.out.WriteString(cFormatStr(sp, b.String()))
			if sub.stop {
				p.stop = true
			}
		case 'q':
			p.out.WriteString(cFormatStr(cSpec{minus: sp.minus, width: sp.width}, txShellQuote(a)))
		default:
			p.out.Flush()
			p.c.Errorf("%s: invalid conversion specification", txQuote(f[start:i]))
			p.status = 1
			p.stop = true
			return used
		}
	}
	return used
}

// escape handles a backslash sequence at s[i]; pctB selects %b rules
// (\0NNN). It returns the index after the sequence.
func (p *printfRun) escape(s string, i int, pctB bool) int {
	if i+1 >= len(s) {
		p.out.WriteByte('\\')
		return i + 1
	}
	c := s[i+1]
	j := i + 2
	simple := map[byte]byte{'"': '"', '\\': '\\', 'a': 7, 'b': 8, 'e': 27, 'f': 12, 'n': '\n', 'r': '\r', 't': '\t', 'v': 11}
	switch {
	case c == 'c':
		p.stop = true
		return len(s)
	case simple[c] != 0:
		p.out.WriteByte(simple[c])
	case c == 'x':
		v, k := 0, j
		for k < len(s) && k < j+2 && isHex(s[k]) {
			v = v*16 + hexVal(s[k])
			k++
		}
		if k == j {
			p.out.Flush()
			p.c.Errorf("missing hexadecimal number in escape")
			p.status = 1
			p.stop = true
			return len(s)
		}
		p.out.WriteByte(byte(v))
		j = k
	case c >= '0' && c <= '7':
		k := i + 1
		if pctB && c == '0' {
			k++
		}
		v, end := 0, k+3
		for k < len(s) && k < end && s[k] >= '0' && s[k] <= '7' {
			v = v*8 + int(s[k]-'0')
			k++
		}
		p.out.WriteByte(byte(v))
		j = k
	case c == 'u' || c == 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		v, k := 0, j
		for k < len(s) && k < j+n && isHex(s[k]) {
			v = v*16 + hexVal(s[k])
			k++
		}
		if k-j != n {
			p.out.Flush()
			p.c.Errorf("missing hexadecimal number in escape")
			p.status = 1
			p.stop = true
			return len(s)
		}
		p.out.WriteString(string(rune(v)))
		j = k
	default:
		p.out.WriteByte('\\')
		p.out.WriteByte(c)
	}
	return j
}

func isHex(b byte) bool { return isDigit(b) || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }

func hexVal(b byte) int {
	switch {
	case isDigit(b):
		return int(b - '0')
	case b >= 'a':
		return int(b-'a') + 10
	}
	return int(b-'A') + 10
}

// charArg handles 'c and "c arguments: the code of the (multibyte) char.
func charArg(a string) (int64, bool) {
	if len(a) >= 2 && (a[0] == '\'' || a[0] == '"') {
		r, size := utf8.DecodeRuneInString(a[1:])
		if r == utf8.RuneError && size <= 1 {
			return int64(a[1]), true
		}
		return int64(r), true
	}
	if len(a) == 1 && (a[0] == '\'' || a[0] == '"') {
		return 0, true
	}
	return 0, false
}

func (p *printfRun) numErr(a string, consumed int, err error) {
	p.out.Flush()
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		p.c.Errorf("%s: Numerical result out of range", txQuote(a))
	case consumed == 0:
		p.c.Errorf("%s: expected a numeric value", txQuote(a))
	default:
		p.c.Errorf("%s: value not completely converted", txQuote(a))
	}
	p.status = 1
}

// intPrefix splits a C integer literal prefix (strtoimax base 0).
func intPrefix(a string) (string, int, int) {
	i := 0
	for i < len(a) && (a[i] == ' ' || a[i] >= '\t' && a[i] <= '\r') {
		i++
	}
	s := i
	if i < len(a) && (a[i] == '+' || a[i] == '-') {
		i++
	}
	base := 10
	digits := func(b byte) bool { return isDigit(b) }
	if i+1 < len(a) && a[i] == '0' && (a[i+1] == 'x' || a[i+1] == 'X') && i+2 < len(a) && isHex(a[i+2]) {
		base, i = 16, i+2
		digits = isHex
	} else if i < len(a) && a[i] == '0' {
		base = 8
		digits = func(b byte) bool { return b >= '0' && b <= '7' }
	}
	d := i
	for i < len(a) && digits(a[i]) {
		i++
	}
	if i == d {
		return "", 0, base
	}
	return a[s:i], i, base
}

func (p *printfRun) intArg(a string) int64 {
	if v, ok := charArg(a); ok {
		return v
	}
	if a == "" {
		return 0
	}
	lit, n, base := intPrefix(a)
	if n == 0 {
		p.numErr(a, 0, nil)
		return 0
	}
	t := strings.TrimLeft(lit, "+")
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(t, "-")
	if base == 16 {
		t = t[2:]
	}
	u, err := strconv.ParseUint(t, base, 64)
	var v int64
	switch {
	case err != nil || !neg && u > math.MaxInt64 || neg && u > 1<<63:
		err = strconv.ErrRange
		v = math.MaxInt64
		if neg {
			v = math.MinInt64
		}
	case neg:
		v = -int64(u-1) - 1
	default:
		v = int64(u)
	}
	if err != nil || n < len(a) {
		p.numErr(a, n, err)
	}
	return v
}

func (p *printfRun) uintArg(a string) uint64 {
	if v, ok := charArg(a); ok {
		return uint64(v)
	}
	if a == "" {
		return 0
	}
	lit, n, base := intPrefix(a)
	if n == 0 {
		p.numErr(a, 0, nil)
		return 0
	}
	t := strings.TrimLeft(lit, "+")
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(t, "-")
	if base == 16 {
		t = t[2:]
	}
	u, err := strconv.ParseUint(t, base, 64)
	if err != nil {
		err = strconv.ErrRange
		u = math.MaxUint64
	} else if neg {
		u = -u
	}
	if err != nil || n < len(a) {
		p.numErr(a, n, err)
	}
	return u
}

func (p *printfRun) floatArg(a string) cLongDouble {
	if v, ok := charArg(a); ok {
		return cLD(float64(v))
	}
	if a == "" {
		return cLD(0)
	}
	v, n, over := cParseLD(a)
	if n == 0 || n < len(a) || over {
		var err error
		if over {
			err = strconv.ErrRange
		}
		p.numErr(a, n, err)
	}
	return v
}

// txShellQuote quotes s the way coreutils' %q (shell-escape style) does.
func txShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	need, ctrl, single, dqSpecial := false, false, false, false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r < 0x20, r == 0x7f, r >= 0x80 && !txIsPrint(r):
			need, ctrl = true, true
		case r == '\'':
			need, single = true, true
		case strings.ContainsRune("\t\n !\"$&()*;<=>?[\\^`|", r):
			need = true
			if strings.ContainsRune("$`\"\\!", r) {
				dqSpecial = true
			}
		case (r == '~' || r == '#') && i == 0:
			need = true
		}
		i += size
	}
	if !need {
		return s
	}
	if single && !ctrl && !dqSpecial {
		return "\"" + s + "\""
	}
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		bad := r == utf8.RuneError && size == 1 || r < 0x20 || r == 0x7f || r >= 0x80 && !txIsPrint(r)
		switch {
		case r == '\'':
			b.WriteString(`'\''`)
		case bad:
			b.WriteString(`'$'`)
			for k := 0; k < size; k++ {
				c := s[i+k]
				if e, ok := map[byte]string{7: `\a`, 8: `\b`, 12: `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`, 11: `\v`}[c]; ok {
					b.WriteString(e)
				} else {
					fmt.Fprintf(&b, "\\%03o", c)
				}
			}
			b.WriteString(`''`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('\'')
	out := b.String()
	// A control character at the end leaves an empty '' pair behind.
	out = strings.TrimSuffix(out, "''")
	return out
}
