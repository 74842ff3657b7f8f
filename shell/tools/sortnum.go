package tools

import (
	"bytes"
	"math"
	"strconv"
)

// Numeric comparisons of sort (-n -g -h) and GNU filevercmp (-V), in the
// C.UTF-8 locale: decimal point '.', no thousands separator.

type sortNumber struct {
	neg    bool
	intg   []byte // integer digits without leading zeros
	frac   []byte // fraction digits without trailing zeros
	end    int    // index just past the number
	nonneg bool
}

func parseSortNumber(t []byte) sortNumber {
	i := 0
	for i < len(t) && sortBlank(t[i]) {
		i++
	}
	var n sortNumber
	if i < len(t) && t[i] == '-' {
		n.neg = true
		i++
	}
	s := i
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	n.intg = bytes.TrimLeft(t[s:i], "0")
	if i < len(t) && t[i] == '.' {
		i++
		s = i
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		n.frac = bytes.TrimRight(t[s:i], "0")
	}
	n.end = i
	return n
}

func (n sortNumber) zero() bool { return len(n.intg) == 0 && len(n.frac) == 0 }

func sortNumCompare(a, b []byte) int {
	return sortNumCompareParsed(parseSortNumber(a), parseSortNumber(b))
}

func sortNumCompareParsed(x, y sortNumber) int {
	xneg := x.neg && !x.zero()
	yneg := y.neg && !y.zero()
	if xneg != yneg {
		if xneg {
			return -1
		}
		return 1
	}
	m := sortMagCompare(x, y)
	if xneg {
		return -m
	}
	return m
}

func sortMagCompare(x, y sortNumber) int {
	if len(x.intg) != len(y.intg) {
		if len(x.intg) < len(y.intg) {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(x.intg, y.intg); c != 0 {
		return c
	}
	return bytes.Compare(x.frac, y.frac)
}

// sortUnitOrder is GNU find_unit_order.
func sortUnitOrder(t []byte) int {
	i := 0
	for i < len(t) && sortBlank(t[i]) {
		i++
	}
	t = t[i:]
	n := parseSortNumber(t)
	if n.zero() {
		return 0
	}
	order := 0
	if n.end < len(t) {
		order = bytes.IndexByte([]byte("KMGTPEZY"), t[n.end]) + 1
		if t[n.end] == 'k' {
			order = 1
		}
	}
	if n.neg {
		return -order
	}
	return order
}

func sortHumanCompare(a, b []byte) int {
	if d := sortUnitOrder(a) - sortUnitOrder(b); d != 0 {
		return d
	}
	return sortNumCompare(a, b)
}

// txStrtod parses the longest prefix of t that C strtod accepts; ok is
// false when there is none.
func txStrtod(t []byte) (float64, int, bool) {
	i := 0
	for i < len(t) && (t[i] == ' ' || t[i] >= '\t' && t[i] <= '\r') {
		i++
	}
	start := i
	if i < len(t) && (t[i] == '+' || t[i] == '-') {
		i++
	}
	rest := t[i:]
	lower := func(n int) string {
		if len(rest) < n {
			return ""
		}
		return string(bytes.ToLower(rest[:n]))
	}
	neg := i > start && t[start] == '-'
	sign := 1.0
	if neg {
		sign = -1
	}
	switch {
	case lower(8) == "infinity":
		return sign * math.Inf(1), i + 8, true
	case lower(3) == "inf":
		return sign * math.Inf(1), i + 3, true
	case lower(3) == "nan":
		j := i + 3
		if j < len(t) && t[j] == '(' {
			k := j + 1
			for k < len(t) && (t[k] == '_' || t[k] >= '0' && t[k] <= '9' || t[k] >= 'a' && t[k] <= 'z' || t[k] >= 'A' && t[k] <= 'Z') {
				k++
			}
			if k < len(t) && t[k] == ')' {
				j = k + 1
			}
		}
		return math.NaN(), j, true
	}
	hex := len(rest) > 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X')
	j := i
	if hex {
		j += 2
	}
	digits := 0
	isDigit := func(c byte) bool {
		if hex {
			return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
		}
		return c >= '0' && c <= '9'
	}
	for j < len(t) && isDigit(t[j]) {
		j++
		digits++
	}
	if j < len(t) && t[j] == '.' {
		j++
		for j < len(t) && isDigit(t[j]) {
			j++
			digits++
		}
	}
	if digits == 0 {
		if hex { // "0x" alone parses as 0 followed by "x"
			return 0, i + 1, true
		}
		return 0, 0, false
	}
	mant := j
	expCh := byte('e')
	if hex {
		expCh = 'p'
	}
	if j < len(t) && (t[j]|0x20) == expCh {
		k := j + 1
		if k < len(t) && (t[k] == '+' || t[k] == '-') {
			k++
		}
		if k < len(t) && t[k] >= '0' && t[k] <= '9' {
			for k < len(t) && t[k] >= '0' && t[k] <= '9' {
				k++
			}
			j = k
		}
	}
	text := string(t[start:j])
	if hex && j == mant {
		text += "p0"
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, 0, false
		}
	}
	return f, j, true
}

func sortGeneralCompare(a, b []byte) int {
	x, _, okx := txStrtod(a)
	y, _, oky := txStrtod(b)
	switch {
	case !okx && !oky:
		return 0
	case !okx:
		return -1
	case !oky:
		return 1
	case x < y:
		return -1
	case x > y:
		return 1
	case x == y:
		return 0
	case y == y: // x is NaN
		return -1
	case x == x:
		return 1
	}
	return 0
}

// sortFilevercmp is gnulib's filenvercmp: version order that treats file
// suffixes and leading dots specially.
func sortFilevercmp(a, b []byte) int {
	if len(a) == 0 {
		if len(b) == 0 {
			return 0
		}
		return -1
	}
	if len(b) == 0 {
		return 1
	}
	if a[0] == '.' {
		if b[0] != '.' {
			return -1
		}
		adot, bdot := len(a) == 1, len(b) == 1
		if adot {
			if bdot {
				return 0
			}
			return -1
		}
		if bdot {
			return 1
		}
		add := a[1] == '.' && len(a) == 2
		bdd := b[1] == '.' && len(b) == 2
		if add {
			if bdd {
				return 0
			}
			return -1
		}
		if bdd {
			return 1
		}
	} else if b[0] == '.' {
		return 1
	}
	ap, bp := sortFilePrefixLen(a), sortFilePrefixLen(b)
	onePass := ap == len(a) && bp == len(b)
	r := sortVerrevcmp(a[:ap], b[:bp])
	if r != 0 || onePass {
		return r
	}
	return sortVerrevcmp(a, b)
}

func vIsAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func vIsDigit(c byte) bool { return c >= '0' && c <= '9' }

// sortFilePrefixLen is the length of s without its suffix (/(\.[A-Za-z~][A-Za-z0-9~]*)*$/).
func sortFilePrefixLen(s []byte) int {
	n := len(s)
	prefix := 0
	for i := 0; ; {
		if i == n {
			return prefix
		}
		i++
		prefix = i
		for i+1 < n && s[i] == '.' && (vIsAlpha(s[i+1]) || s[i+1] == '~') {
			for i += 2; i < n && (vIsAlpha(s[i]) || vIsDigit(s[i]) || s[i] == '~'); i++ {
			}
		}
	}
}

func vOrder(s []byte, pos int) int {
	if pos >= len(s) {
		return -1
	}
	c := s[pos]
	switch {
	case vIsDigit(c):
		return 0
	case vIsAlpha(c):
		return int(c)
	case c == '~':
		return -2 // before the end of the string (-1): "foo~" < "foo"
	}
	return int(c) + 256
}

func sortVerrevcmp(s1, s2 []byte) int {
	p1, p2 := 0, 0
	for p1 < len(s1) || p2 < len(s2) {
		firstDiff := 0
		for p1 < len(s1) && !vIsDigit(s1[p1]) || p2 < len(s2) && !vIsDigit(s2[p2]) {
			c1, c2 := vOrder(s1, p1), vOrder(s2, p2)
			if c1 != c2 {
				return c1 - c2
			}
			p1++
			p2++
		}
		for p1 < len(s1) && s1[p1] == '0' {
			p1++
		}
		for p2 < len(s2) && s2[p2] == '0' {
			p2++
		}
		for p1 < len(s1) && p2 < len(s2) && vIsDigit(s1[p1]) && vIsDigit(s2[p2]) {
			if firstDiff == 0 {
				firstDiff = int(s1[p1]) - int(s2[p2])
			}
			p1++
			p2++
		}
		if p1 < len(s1) && vIsDigit(s1[p1]) {
			return 1
		}
		if p2 < len(s2) && vIsDigit(s2[p2]) {
			return -1
		}
		if firstDiff != 0 {
			return firstDiff
		}
	}
	return 0
}
