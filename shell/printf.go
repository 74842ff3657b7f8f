package shell

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

func biPrintf(r *runner, args []string) int {
	a := args[1:]
	varName, hasV := "", false
	if len(a) > 0 && a[0] == "-v" {
		if len(a) < 2 {
			r.errorf("printf: -v: option requires an argument")
			r.write(2, "printf: usage: printf [-v var] format [arguments]\n")
			return 2
		}
		varName, hasV = a[1], true
		a = a[2:]
	} else if len(a) > 0 && strings.HasPrefix(a[0], "-v") && len(a[0]) > 2 {
		varName, hasV = a[0][2:], true
		a = a[1:]
	}
	if hasV {
		base, idx, isElem := strings.Cut(varName, "[")
		if !validName(base) || isElem && (len(idx) < 2 || !strings.HasSuffix(idx, "]")) {
			r.errorf("printf: `%s': not a valid identifier", varName)
			return 2
		}
	}
	if len(a) > 0 && a[0] == "--" {
		a = a[1:]
	}
	if len(a) == 0 {
		r.write(2, "printf: usage: printf [-v var] format [arguments]\n") // bash's builtin_usage: no shell name
		return 2
	}
	p := &printer{r: r, args: a[1:]}
	format := a[0]
	for {
		used := p.argi
		if p.format(format) {
			break
		}
		if p.argi >= len(p.args) || p.argi == used {
			break
		}
	}
	out := p.out.String()
	r.checkString(out)
	if hasV {
		name, idx, hasIdx := strings.Cut(varName, "[")
		var ip *string
		if hasIdx {
			s := strings.TrimSuffix(idx, "]")
			ip = &s
		}
		if err := r.assign(name, ip, out, false); err != nil {
			r.errorf("printf: %s", err)
			return 1
		}
		return p.status
	}
	if err := r.write(1, out); err != nil {
		return r.writeErr("printf", err)
	}
	return p.status
}

type printer struct {
	r      *runner
	args   []string
	argi   int
	out    strings.Builder
	status int
}

func (p *printer) next() (string, bool) {
	if p.argi >= len(p.args) {
		return "", false
	}
	s := p.args[p.argi]
	p.argi++
	return s, true
}

// format writes one pass of the format; it reports true when output
// must stop (\c in %b).
func (p *printer) format(f string) bool {
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c == '\\' {
			j := i + 1
			for j < len(f) && j < i+4 && f[j] >= '0' && f[j] <= '7' && f[i+1] == '0' {
				j++
			}
			end := escapeEnd(f, i)
			s, _ := decodeEscapes(f[i:end], escapePrintf)
			if f[i+1:end] == "c" {
				return true
			}
			p.out.WriteString(s)
			i = end - 1
			continue
		}
		if c != '%' {
			p.out.WriteByte(c)
			continue
		}
		if i+1 < len(f) && f[i+1] == '%' {
			p.out.WriteByte('%')
			i++
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("-+ #0'", f[j]) >= 0 {
			j++
		}
		// ' groups thousands, which the C.UTF-8 locale does not do.
		flags := strings.ReplaceAll(f[i+1:j], "'", "")
		width, prec := "", ""
		hasPrec := false
		if j < len(f) && f[j] == '*' {
			a, _ := p.next()
			width = strconv.Itoa(int(p.toInt(a)))
			j++
		} else {
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				width += string(f[j])
				j++
			}
		}
		if j < len(f) && f[j] == '.' {
			hasPrec = true
			j++
			if j < len(f) && f[j] == '*' {
				a, _ := p.next()
				prec = strconv.Itoa(int(p.toInt(a)))
				j++
			} else {
				for j < len(f) && f[j] >= '0' && f[j] <= '9' {
					prec += string(f[j])
					j++
				}
			}
		}
		// length modifiers are accepted and ignored (bash's LENMODS)
		for j < len(f) && strings.IndexByte("hjlLtz", f[j]) >= 0 {
			j++
		}
		if j >= len(f) {
			p.r.errorf("printf: `%s': missing format character", f[i:])
			p.status = 1
			return true
		}
		conv := f[j]
		wn, _ := strconv.Atoi(strings.TrimPrefix(width, "-"))
		pn, _ := strconv.Atoi(prec)
		if int64(wn) > p.r.sh.limits.StringBytes || int64(pn) > p.r.sh.limits.StringBytes {
			p.r.sh.breach("string_bytes", p.r.sh.limits.StringBytes)
			panic(fatal{})
		}
		if strings.HasPrefix(width, "-") {
			flags += "-"
			width = width[1:]
		}
		spec := "%" + flags + width
		if hasPrec {
			if prec == "" {
				prec = "0"
			}
			spec += "." + prec
		}
		if conv == '(' {
			end := strings.Index(f[j:], ")T")
			if end < 0 {
				p.r.errorf("printf: `(': invalid format character")
				p.status = 1
				return true
			}
			tf := f[j+1 : j+end]
			a, _ := p.next()
			p.out.WriteString(fmt.Sprintf("%"+flags+width+"s", p.strftime(tf, a)))
			i = j + end + 1
			continue
		}
		if p.directive(conv, spec, flags, hasPrec, prec) {
			return true
		}
		i = j
	}
	return false
}

// escapeEnd returns the index after the escape sequence starting at i.
func escapeEnd(f string, i int) int {
	if i+1 >= len(f) {
		return i + 1
	}
	c := f[i+1]
	switch {
	case c >= '0' && c <= '7':
		j := i + 1
		max := 3
		if c == '0' {
			max = 4
		}
		for j < len(f) && j < i+1+max && f[j] >= '0' && f[j] <= '7' {
			j++
		}
		return j
	case c == 'x':
		j := i + 2
		for j < len(f) && j < i+4 && isHex(f[j]) {
			j++
		}
		return j
	case c == 'u' || c == 'U':
		max := 4
		if c == 'U' {
			max = 8
		}
		j := i + 2
		for j < len(f) && j < i+2+max && isHex(f[j]) {
			j++
		}
		return j
	}
	return i + 2
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (p *printer) directive(conv byte, spec, flags string, hasPrec bool, prec string) bool {
	switch conv {
	case 's':
		a, _ := p.next()
		p.out.WriteString(padBytes(spec, a))
	case 'q':
		a, _ := p.next()
		p.out.WriteString(padBytes(spec, printfQuote(a)))
	case 'b':
		a, _ := p.next()
		s, stop := decodeEscapes(a, escapeB)
		p.out.WriteString(padBytes(spec, s))
		if stop {
			return true
		}
	case 'c':
		a, _ := p.next()
		ch := "\x00" // C's %c of the empty string's NUL
		if a != "" {
			_, size := utf8.DecodeRuneInString(a)
			ch = a[:size]
		}
		p.out.WriteString(padBytes(spec, ch))
	case 'd', 'i':
		a, _ := p.next()
		n := p.toInt(a)
		p.out.WriteString(fmt.Sprintf(cIntSpec(spec)+"d", n))
	case 'u':
		a, _ := p.next()
		n := p.toUint(a)
		p.out.WriteString(fmt.Sprintf(cIntSpec(spec)+"d", uint64(n)))
	case 'o':
		a, _ := p.next()
		n := p.toUint(a)
		s := strings.Replace(cIntSpec(spec), "#", "", 1)
		str := fmt.Sprintf(s+"o", uint64(n))
		if strings.Contains(flags, "#") && !strings.HasPrefix(strings.TrimSpace(str), "0") {
			str = fmt.Sprintf(strings.Replace(s, "%", "%", 1)+"s", "0"+strconv.FormatUint(uint64(n), 8))
		}
		p.out.WriteString(str)
	case 'x', 'X':
		a, _ := p.next()
		n := p.toUint(a)
		if n == 0 {
			spec = strings.Replace(spec, "#", "", 1)
		}
		p.out.WriteString(fmt.Sprintf(cIntSpec(spec)+string(conv), uint64(n)))
	case 'e', 'E', 'f', 'F', 'g', 'G', 'a', 'A':
		a, _ := p.next()
		x := p.toFloat(a)
		if !hasPrec && (conv == 'g' || conv == 'G') {
			spec += ".6"
		}
		c := conv
		if c == 'F' {
			c = 'f'
		}
		if c == 'a' || c == 'A' {
			p.out.WriteString(hexFloat(spec, conv, x, longMant(a, x), hasPrec, prec))
			break
		}
		if math.IsNaN(x) || math.IsInf(x, 0) && !longFinite(a) {
			body := "inf"
			if math.IsNaN(x) {
				body = "nan"
			}
			if conv >= 'A' && conv <= 'Z' {
				body = strings.ToUpper(body)
			}
			p.out.WriteString(padNum(spec, math.Signbit(x), body, false, 0))
			break
		}
		p.out.WriteString(decFloat(spec, conv, bigLong(a, x), hasPrec, prec))
	default:
		p.r.errorf("printf: `%c': invalid format character", conv)
		p.status = 1
		return true
	}
	return false
}

// padBytes applies a %s spec's width and precision counting bytes, as C
// printf does.
func padBytes(spec, s string) string {
	body := spec[1:]
	left := strings.Contains(body, "-")
	body = strings.TrimLeft(body, "-+ #0")
	w, prec, hasPrec := body, "", false
	if i := strings.IndexByte(body, '.'); i >= 0 {
		w, prec, hasPrec = body[:i], body[i+1:], true
	}
	if hasPrec {
		if n, err := strconv.Atoi(prec); err == nil && n < len(s) {
			s = s[:n]
		} else if prec == "" {
			s = ""
		}
	}
	width, _ := strconv.Atoi(w)
	if pad := width - len(s); pad > 0 {
		if left {
			return s + strings.Repeat(" ", pad)
		}
		return strings.Repeat(" ", pad) + s
	}
	return s
}

// cIntSpec turns a C integer spec into Go's: precision means minimum
// digits, which Go does with the same syntax; "0" flag with precision is
// ignored by C.
func cIntSpec(spec string) string {
	if strings.Contains(spec, ".") && strings.Contains(spec, "0") {
		flagsEnd := 1
		for flagsEnd < len(spec) && strings.IndexByte("-+ #0", spec[flagsEnd]) >= 0 {
			flagsEnd++
		}
		spec = "%" + strings.ReplaceAll(spec[1:flagsEnd], "0", "") + spec[flagsEnd:]
	}
	return spec
}

// toInt parses a printf numeric argument as bash does: 'c gives the
// character code; otherwise a C integer, with an error for trailing junk.
// Out of range, it warns and takes the nearest limit, as strtoimax does.
func (p *printer) toInt(a string) int64 {
	return p.toNumber(a, false)
}

// toUint is toInt for %u %o %x %X, which bash reads with strtoumax.
func (p *printer) toUint(a string) int64 {
	return p.toNumber(a, true)
}

func (p *printer) toNumber(a string, unsigned bool) int64 {
	if a == "" {
		return 0
	}
	if a[0] == '\'' || a[0] == '"' {
		if len(a) == 1 {
			return 0
		}
		c, _ := utf8.DecodeRuneInString(a[1:])
		return int64(c)
	}
	s := strings.TrimLeft(a, " \t\n")
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	base := 10
	digits := s
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		base, digits = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	end := 0
	for end < len(digits) && digitVal(digits[end]) < base {
		end++
	}
	n, err := strconv.ParseUint(digits[:end], base, 64)
	if end == 0 {
		n = 0
	}
	if end != len(digits) || (end == 0 && base != 8) {
		p.r.errorf("printf: %s: invalid number", a)
		p.status = 1
	}
	switch {
	case err != nil && end > 0 || unsigned && neg && n > 1<<63:
		p.r.errorf("printf: warning: %s: Numerical result out of range", a)
		if unsigned {
			return -1 // all ones
		}
		if neg {
			return math.MinInt64
		}
		return math.MaxInt64
	case !unsigned && !neg && n > math.MaxInt64, !unsigned && neg && n > 1<<63:
		p.r.errorf("printf: warning: %s: Numerical result out of range", a)
		if neg {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	if neg {
		return -int64(n)
	}
	return int64(n)
}

func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return 99
}

func (p *printer) toFloat(a string) float64 {
	if a == "" {
		return 0
	}
	if a[0] == '\'' || a[0] == '"' {
		if len(a) == 1 {
			return 0
		}
		c, _ := utf8.DecodeRuneInString(a[1:])
		return float64(c)
	}
	s := strings.TrimSpace(a)
	x, err := strconv.ParseFloat(s, 64)
	if err != nil && errors.Is(err, strconv.ErrRange) {
		err = nil // a long double may still hold it; ±Inf or 0 here
	}
	if err != nil {
		// Accept a numeric prefix, as strtod does.
		end := len(s)
		for end > 0 {
			if y, e := strconv.ParseFloat(s[:end], 64); e == nil {
				x = y
				break
			}
			end--
		}
		p.r.errorf("printf: %s: invalid number", a)
		p.status = 1
	}
	return x
}

// strftime formats %(fmt)T; arg is seconds since the epoch, -1 for now,
// -2 for the shell's start.
func (p *printer) strftime(f, arg string) string {
	var t time.Time
	switch arg {
	case "", "-1":
		t = time.Now()
	case "-2":
		t = p.r.sh.start
	default:
		t = time.Unix(p.toInt(arg), 0)
	}
	t = t.UTC()
	if f == "" {
		f = "%X"
	}
	return strftime(f, t)
}

func strftime(f string, t time.Time) string {
	var sb strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			sb.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'Y':
			sb.WriteString(strconv.Itoa(t.Year()))
		case 'C':
			fmt.Fprintf(&sb, "%02d", t.Year()/100)
		case 'y':
			fmt.Fprintf(&sb, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&sb, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&sb, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&sb, "%2d", t.Day())
		case 'H':
			fmt.Fprintf(&sb, "%02d", t.Hour())
		case 'k':
			fmt.Fprintf(&sb, "%2d", t.Hour())
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			fmt.Fprintf(&sb, "%02d", h)
		case 'l':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			fmt.Fprintf(&sb, "%2d", h)
		case 'M':
			fmt.Fprintf(&sb, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&sb, "%02d", t.Second())
		case 'j':
			fmt.Fprintf(&sb, "%03d", t.YearDay())
		case 'a':
			sb.WriteString(t.Weekday().String()[:3])
		case 'A':
			sb.WriteString(t.Weekday().String())
		case 'b', 'h':
			sb.WriteString(t.Month().String()[:3])
		case 'B':
			sb.WriteString(t.Month().String())
		case 'p':
			if t.Hour() < 12 {
				sb.WriteString("AM")
			} else {
				sb.WriteString("PM")
			}
		case 'Z':
			sb.WriteString("UTC")
		case 'z':
			sb.WriteString("+0000")
		case 's':
			sb.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'F':
			sb.WriteString(strftime("%Y-%m-%d", t))
		case 'T', 'X':
			sb.WriteString(strftime("%H:%M:%S", t))
		case 'D', 'x':
			sb.WriteString(strftime("%m/%d/%y", t))
		case 'R':
			sb.WriteString(strftime("%H:%M", t))
		case 'c':
			sb.WriteString(strftime("%a %b %e %H:%M:%S %Y", t))
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			sb.WriteString(strconv.Itoa(wd))
		case 'w':
			sb.WriteString(strconv.Itoa(int(t.Weekday())))
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		case '%':
			sb.WriteByte('%')
		default:
			sb.WriteByte('%')
			sb.WriteByte(f[i])
		}
	}
	return sb.String()
}

// longDouble is a number as an x87 long double holds it: value =
// mant/2^64 * 2^exp, with mant's top bit set.
type longDouble struct {
	mant uint64
	exp  int
}

// longMant reads a as a long double (64-bit mantissa, as strtold does),
// or takes x when a is no plain decimal or hex number.
func longMant(a string, x float64) longDouble {
	if f, _, err := big.ParseFloat(strings.TrimSpace(a), 0, 64, big.ToNearestEven); err == nil && f.Sign() != 0 && !f.IsInf() {
		var mant big.Float
		exp := f.MantExp(&mant)
		mant.Abs(&mant)
		mant.SetMantExp(&mant, 64)
		if u, acc := mant.Uint64(); acc == big.Exact {
			return longDouble{u, exp}
		}
	}
	frac, exp := math.Frexp(math.Abs(x))
	return longDouble{uint64(frac * (1 << 63) * 2), exp}
}

// hexFloat formats x as glibc's %La does for bash's long double: the
// 64-bit mantissa shown from its leading bit, so 1 is 0x8p-3.
func hexFloat(spec string, conv byte, x float64, lm longDouble, hasPrec bool, prec string) string {
	var body string
	switch {
	case math.IsInf(x, 0) || math.IsNaN(x):
		body = strings.TrimLeft(fmt.Sprint(math.Abs(x)), "+")
		body = strings.ToLower(body)
		if math.IsNaN(x) {
			body = "nan"
		}
	case x == 0:
		body = "0x0p+0"
		if n, _ := strconv.Atoi(prec); hasPrec && n > 0 {
			body = "0x0." + strings.Repeat("0", n) + "p+0"
		}
	default:
		m, exp := lm.mant, lm.exp-4
		digits := fmt.Sprintf("%016x", m)
		lead, rest := digits[:1], digits[1:]
		if hasPrec {
			n, _ := strconv.Atoi(prec)
			if n < 15 {
				// Round to n digits after the point, half to even.
				shift := uint(4 * (15 - n))
				q, r := m>>shift, m&(1<<shift-1)
				half := uint64(1) << (shift - 1)
				if r > half || r == half && q&1 == 1 {
					q++
				}
				if q>>(4*uint(n)+4) != 0 { // carried into a new digit
					q >>= 1
					exp++
				}
				digits = fmt.Sprintf("%0*x", n+1, q)
				lead, rest = digits[:1], digits[1:]
			} else {
				rest += strings.Repeat("0", n-15)
			}
		} else {
			rest = strings.TrimRight(rest, "0")
		}
		body = "0x" + lead
		if rest != "" {
			body += "." + rest
		}
		body += fmt.Sprintf("p%+d", exp)
	}
	if conv == 'A' {
		body = strings.ToUpper(body)
	}
	return padNum(spec, math.Signbit(x), body, !math.IsInf(x, 0) && !math.IsNaN(x), 2)
}

// longFinite reports whether a is a number a long double holds finitely
// (1e400 is, though no float64 is).
func longFinite(a string) bool {
	f, _, err := big.ParseFloat(strings.TrimSpace(a), 0, 64, big.ToNearestEven)
	return err == nil && !f.IsInf() && f.MantExp(nil) < 16384
}

// bigLong reads a as a long double would hold it (see longMant).
func bigLong(a string, x float64) *big.Float {
	if f, _, err := big.ParseFloat(strings.TrimSpace(a), 0, 64, big.ToNearestEven); err == nil && !f.IsInf() {
		return f
	}
	return new(big.Float).SetPrec(64).SetFloat64(x)
}

// decFloat formats f with %e, %f or %g as C does, from its long double
// value (so %.20f of 0.1 shows what bash shows).
func decFloat(spec string, conv byte, f *big.Float, hasPrec bool, prec string) string {
	p := 6
	if hasPrec {
		p, _ = strconv.Atoi(prec)
	}
	alt := strings.Contains(spec[:len(spec)-len(strings.TrimLeft(spec[1:], "-+ #0"))], "#")
	abs := new(big.Float).Abs(f)
	var body string
	switch conv {
	case 'f', 'F':
		body = abs.Text('f', p)
		if alt && p == 0 {
			body += "."
		}
	case 'e', 'E':
		body = abs.Text('e', p)
		if alt && p == 0 {
			body = strings.Replace(body, "e", ".e", 1)
		}
	default: // g, G
		if p == 0 {
			p = 1
		}
		body = abs.Text('e', p-1)
		x, _ := strconv.Atoi(body[strings.IndexByte(body, 'e')+1:])
		if p > x && x >= -4 {
			body = abs.Text('f', p-1-x)
		}
		if !alt {
			mant, exp, _ := strings.Cut(body, "e")
			if strings.Contains(mant, ".") {
				mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
			}
			body = mant
			if exp != "" {
				body += "e" + exp
			}
		} else if !strings.Contains(body, ".") {
			mant, exp, hasExp := strings.Cut(body, "e")
			body = mant + "."
			if hasExp {
				body += "e" + exp
			}
		}
	}
	if conv >= 'A' && conv <= 'Z' {
		body = strings.ToUpper(body)
	}
	return padNum(spec, f.Signbit(), body, true, 0)
}

// padNum puts a number's sign and padding around its digits as C printf
// does for spec: zeros go after the sign and a prefix of prefix bytes.
func padNum(spec string, neg bool, body string, zeroOK bool, prefix int) string {
	sign := ""
	switch {
	case neg:
		sign = "-"
	case strings.Contains(spec, "+"):
		sign = "+"
	case strings.Contains(spec, " "):
		sign = " "
	}
	s := sign + body
	fl := strings.TrimLeft(spec[1:], "-+ #0")
	flags := spec[1 : len(spec)-len(fl)]
	if i := strings.IndexByte(fl, '.'); i >= 0 {
		fl = fl[:i]
	}
	width, _ := strconv.Atoi(fl)
	if pad := width - len(s); pad > 0 {
		switch {
		case strings.Contains(flags, "-"):
			s += strings.Repeat(" ", pad)
		case strings.Contains(flags, "0") && zeroOK:
			k := len(sign) + prefix
			s = s[:k] + strings.Repeat("0", pad) + s[k:]
		default:
			s = strings.Repeat(" ", pad) + s
		}
	}
	return s
}
