package awk

import (
	"math"
	"strconv"
	"strings"
)

// kind is a value's type in awk's string/number duality.
type kind uint8

const (
	kUninit kind = iota // never assigned: "" and 0
	kNum                // a number
	kStr                // a string
	kStrNum             // input that looks numeric: compares as a number
	kMaybe              // a field not yet examined: becomes kStr or kStrNum on use
)

// value is an awk scalar. For kStrNum both s and n are valid.
type value struct {
	k kind
	s string
	n float64
}

func num(n float64) value { return value{k: kNum, n: n} }
func str(s string) value  { return value{k: kStr, s: s} }

// strnum makes a value from input text (fields, getline, ARGV, -v,
// ENVIRON, split): numeric-looking text compares as a number.
func strnum(s string) value {
	if n, ok := looksNumeric(s); ok {
		return value{k: kStrNum, s: s, n: n}
	}
	return value{k: kStr, s: s}
}

// looksNumeric reports whether all of s (but surrounding blanks) is a
// number as strtod reads it, which is mawk's test.
func looksNumeric(s string) (float64, bool) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i == len(s) {
		return 0, false
	}
	// fast path: plain digits
	j := i
	if j < len(s) && (s[j] == '-' || s[j] == '+') {
		j++
	}
	if j < len(s) && isDigit(s[j]) {
		k := j
		var n int64
		for k < len(s) && isDigit(s[k]) && k-j < 15 {
			n = n*10 + int64(s[k]-'0')
			k++
		}
		if k == len(s) {
			if s[i] == '-' {
				return -float64(n), true
			}
			return float64(n), true
		}
	}
	v, n := strtod(s[i:])
	if n == 0 {
		return 0, false
	}
	for k := i + n; k < len(s); k++ {
		if !isSpace(s[k]) {
			return 0, false
		}
	}
	return v, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// strtod parses the longest prefix of s that C's strtod accepts (after
// leading white space) and returns the value and the bytes consumed, 0
// when there is no number.
func strtod(s string) (float64, int) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	start := i
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	rest := s[i:]
	if len(rest) >= 3 && (rest[0]|0x20 == 'i' || rest[0]|0x20 == 'n') {
		low := strings.ToLower(rest[:min(len(rest), 8)])
		switch {
		case strings.HasPrefix(low, "infinity"):
			return sign(math.Inf(1), neg), i + 8
		case strings.HasPrefix(low, "inf"):
			return sign(math.Inf(1), neg), i + 3
		case strings.HasPrefix(low, "nan"):
			n := i + 3
			if n < len(s) && s[n] == '(' {
				if e := strings.IndexByte(s[n:], ')'); e >= 0 {
					n += e + 1
				}
			}
			return sign(math.NaN(), neg), n
		}
	}
	if len(rest) >= 2 && rest[0] == '0' && (rest[1]|0x20) == 'x' {
		if v, n := hexFloat(rest[2:]); n > 0 {
			return sign(v, neg), i + 2 + n
		}
		return 0, i + 1 // just "0"
	}
	j := i
	digits := 0
	for j < len(s) && isDigit(s[j]) {
		j++
		digits++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	if j < len(s) && (s[j]|0x20) == 'e' {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	v, err := strconv.ParseFloat(s[start:j], 64)
	if err != nil {
		// out of range: ParseFloat returns ±Inf or 0 with the error, as strtod does
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, 0
		}
	}
	return v, j
}

func sign(v float64, neg bool) float64 {
	if neg {
		return -v
	}
	return v
}

func hexFloat(s string) (float64, int) {
	var v float64
	i, digits := 0, 0
	for i < len(s) && isHex(s[i]) {
		v = v*16 + float64(hexVal(s[i]))
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		f := 1.0 / 16
		for i < len(s) && isHex(s[i]) {
			v += float64(hexVal(s[i])) * f
			f /= 16
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	if i < len(s) && (s[i]|0x20) == 'p' {
		k := i + 1
		neg := false
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			neg = s[k] == '-'
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			e := 0
			for k < len(s) && isDigit(s[k]) {
				e = min(e*10+int(s[k]-'0'), 100000)
				k++
			}
			if neg {
				e = -e
			}
			v = math.Ldexp(v, e)
			i = k
		}
	}
	return v, i
}

func hexVal(c byte) int {
	if isDigit(c) {
		return int(c - '0')
	}
	return int(c|0x20) - 'a' + 10
}

// maxInt is mawk's Max_Int: integral values within ±maxInt convert to
// strings as integers; others go through CONVFMT/OFMT.
const maxInt = 0x7fffffff

// numToStr converts n with format (CONVFMT or OFMT) the way mawk does.
func numToStr(n float64, format string) string {
	if n == math.Trunc(n) && n >= -maxInt && n <= maxInt {
		return strconv.Itoa(int(n))
	}
	if format == "%.6g" {
		return formatG(n, 6, false)
	}
	return sprintfNum(format, n)
}

// formatG formats like C's %.<prec>g.
func formatG(n float64, prec int, upper bool) string {
	if s, ok := special(n, upper); ok {
		return s
	}
	b := strconv.AppendFloat(make([]byte, 0, 24), n, 'g', max(prec, 1), 64)
	if upper {
		return strings.ToUpper(string(b))
	}
	// Go writes e+06 as e+06: same two-digit minimum as C.
	return string(b)
}

// special formats infinities and NaNs as glibc does.
func special(n float64, upper bool) (string, bool) {
	var s string
	switch {
	case math.IsInf(n, 1):
		s = "inf"
	case math.IsInf(n, -1):
		s = "-inf"
	case math.IsNaN(n):
		s = "nan"
		if math.Signbit(n) {
			s = "-nan"
		}
	default:
		return "", false
	}
	if upper {
		s = strings.ToUpper(s)
	}
	return s, true
}

// toInt converts like mawk's d_to_I: clamped to ±maxInt, NaN to -maxInt.
func toInt(d float64) int {
	if d >= maxInt {
		return maxInt
	}
	if d > -maxInt {
		return int(d)
	}
	return -maxInt
}

func boolNum(b bool) value {
	if b {
		return num(1)
	}
	return num(0)
}
