package tools

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// C printf conversions as glibc formats them, for printf, seq and od.
// Floating values are long doubles emulated with a 64-bit mantissa
// big.Float (x87 extended precision), so rounding matches glibc's.

// cSpec is one parsed conversion: %[flags][width][.prec]verb.
type cSpec struct {
	minus, plus, space, hash, zero bool
	width                          int
	prec                           int
	hasPrec                        bool
	verb                           byte
}

// cLongDouble is a long double value; nan is separate since big.Float has
// no NaN.
type cLongDouble struct {
	f   *big.Float
	nan bool
	neg bool // sign of a NaN
}

const cLDPrec = 64

func cLD(f float64) cLongDouble {
	if math.IsNaN(f) {
		return cLongDouble{nan: true, neg: math.Signbit(f)}
	}
	return cLongDouble{f: new(big.Float).SetPrec(cLDPrec).SetFloat64(f)}
}

// cParseLD parses the longest prefix of s that strtold accepts. It returns
// the value, the bytes consumed (0 when nothing parsed) and whether the
// value overflowed.
func cParseLD(s string) (cLongDouble, int, bool) {
	_, n, ok := txStrtod([]byte(s))
	if !ok || n == 0 {
		return cLongDouble{f: new(big.Float).SetPrec(cLDPrec)}, 0, false
	}
	text := strings.TrimLeft(s[:n], " \t\n\v\f\r")
	neg := strings.HasPrefix(text, "-")
	body := strings.TrimLeft(text, "+-")
	lower := strings.ToLower(body)
	switch {
	case strings.HasPrefix(lower, "inf"):
		return cLongDouble{f: new(big.Float).SetPrec(cLDPrec).SetInf(neg)}, n, false
	case strings.HasPrefix(lower, "nan"):
		return cLongDouble{nan: true, neg: neg}, n, false
	}
	if strings.HasPrefix(lower, "0x") && !strings.ContainsAny(lower, "p") {
		body += "p0"
	}
	f, _, err := big.ParseFloat(body, 0, cLDPrec, big.ToNearestEven)
	if err != nil {
		return cLongDouble{f: new(big.Float).SetPrec(cLDPrec)}, 0, false
	}
	over := false
	if f.IsInf() {
		over = true
	} else if exp := f.MantExp(nil); exp > 16384 {
		over = true
		f.SetInf(false)
	}
	if neg {
		f.Neg(f)
	}
	return cLongDouble{f: f}, n, over
}

// cFormatFloat formats v for verb e E f F g G.
func cFormatFloat(sp cSpec, v cLongDouble) string {
	upper := sp.verb == 'E' || sp.verb == 'F' || sp.verb == 'G'
	neg := v.neg
	if !v.nan {
		neg = v.f.Signbit()
	}
	sign := ""
	switch {
	case neg:
		sign = "-"
	case sp.plus:
		sign = "+"
	case sp.space:
		sign = " "
	}
	var body string
	switch {
	case v.nan:
		body = "nan"
	case v.f.IsInf():
		body = "inf"
	}
	if body != "" {
		if upper {
			body = strings.ToUpper(body)
		}
		sp.zero = false
		return cPad(sp, sign, body)
	}
	abs := new(big.Float).SetPrec(cLDPrec).Abs(v.f)
	prec := 6
	if sp.hasPrec {
		prec = sp.prec
	}
	switch sp.verb {
	case 'f', 'F':
		body = abs.Text('f', prec)
		if sp.hash && prec == 0 {
			body += "."
		}
	case 'e', 'E':
		body = cExp(abs, prec, sp.hash)
	case 'g', 'G':
		if prec == 0 {
			prec = 1
		}
		x := cExponent(abs, prec-1)
		if prec > x && x >= -4 {
			body = abs.Text('f', prec-1-x)
			if sp.hash && !strings.Contains(body, ".") {
				body += "."
			}
		} else {
			body = cExp(abs, prec-1, sp.hash)
		}
		if !sp.hash {
			body = cTrimZeros(body)
		}
	}
	if upper {
		body = strings.ToUpper(body)
	}
	return cPad(sp, sign, body)
}

// cExp formats abs in C's %e style: d.ddde+XX.
func cExp(abs *big.Float, prec int, hash bool) string {
	s := abs.Text('e', prec)
	mant, exp, _ := strings.Cut(s, "e")
	if hash && prec == 0 {
		mant += "."
	}
	sign := exp[0]
	digits := exp[1:]
	if len(digits) < 2 {
		digits = "0" + digits
	}
	return mant + "e" + string(sign) + digits
}

// cExponent is the decimal exponent abs has once rounded to prec+1
// significant digits.
func cExponent(abs *big.Float, prec int) int {
	if abs.Sign() == 0 {
		return 0
	}
	s := abs.Text('e', prec)
	_, exp, _ := strings.Cut(s, "e")
	x, _ := strconv.Atoi(exp)
	return x
}

// cTrimZeros removes trailing zeros of a fraction, and the point if bare.
func cTrimZeros(s string) string {
	mant, exp, hasExp := strings.Cut(s, "e")
	if strings.Contains(mant, ".") {
		mant = strings.TrimRight(mant, "0")
		mant = strings.TrimSuffix(mant, ".")
	}
	if hasExp {
		return mant + "e" + exp
	}
	return mant
}

// cPad applies width, '-' and '0' to a sign and a body.
func cPad(sp cSpec, sign, body string) string {
	n := len(sign) + len(body)
	if n >= sp.width {
		return sign + body
	}
	pad := sp.width - n
	switch {
	case sp.minus:
		return sign + body + strings.Repeat(" ", pad)
	case sp.zero:
		return sign + strings.Repeat("0", pad) + body
	}
	return strings.Repeat(" ", pad) + sign + body
}

// cFormatInt formats a signed (d, i) or unsigned (o u x X) integer; for
// unsigned verbs u holds the value.
func cFormatInt(sp cSpec, i int64, u uint64) string {
	sign, digits, prefix := "", "", ""
	switch sp.verb {
	case 'd', 'i':
		if i < 0 {
			sign = "-"
			digits = strconv.FormatUint(uint64(-(i+1))+1, 10)
		} else {
			if sp.plus {
				sign = "+"
			} else if sp.space {
				sign = " "
			}
			digits = strconv.FormatInt(i, 10)
		}
	case 'u':
		digits = strconv.FormatUint(u, 10)
	case 'o':
		digits = strconv.FormatUint(u, 8)
	case 'x', 'X':
		digits = strconv.FormatUint(u, 16)
		if sp.hash && u != 0 {
			prefix = "0x"
		}
	}
	if sp.hasPrec {
		if sp.prec == 0 && digits == "0" {
			digits = ""
		}
		if len(digits) < sp.prec {
			digits = strings.Repeat("0", sp.prec-len(digits)) + digits
		}
		sp.zero = false
	}
	if sp.verb == 'o' && sp.hash && !strings.HasPrefix(digits, "0") {
		digits = "0" + digits
	}
	if sp.verb == 'X' {
		digits = strings.ToUpper(digits)
		prefix = strings.ToUpper(prefix)
	}
	return cPad(sp, sign+prefix, digits)
}

// cFormatStr formats %s (precision truncates bytes) or %c.
func cFormatStr(sp cSpec, s string) string {
	if sp.hasPrec && len(s) > sp.prec {
		s = s[:sp.prec]
	}
	sp.zero = false
	return cPad(sp, "", s)
}
