package awk

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// ere is a compiled awk regular expression. Like mawk it matches bytes,
// not UTF-8 characters: patterns and subjects with bytes >= 0x80 are
// matched with each such byte standing for one character (U+0080-U+00FF)
// and positions are mapped back to bytes.
type ere struct {
	re *regexp.Regexp
}

// compileERE compiles an awk regular expression (POSIX ERE with awk's
// escapes, as mawk 1.3.4 reads it) into a leftmost-longest Go regexp.
// mawk 20200120 has no interval expressions, so braces are literal.
func compileERE(src string) (*ere, error) {
	tr, err := translateERE(src)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(tr)
	if err != nil {
		return nil, err
	}
	re.Longest()
	return &ere{re}, nil
}

// widen re-encodes s so every byte is one character; ok is false when s
// is ASCII and needs nothing.
func widen(s string) (string, bool) {
	i := 0
	for i < len(s) && s[i] < 0x80 {
		i++
	}
	if i == len(s) {
		return s, false
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		b = utf8.AppendRune(b, rune(s[i]))
	}
	return string(b), true
}

// narrow maps a position in widen(s) back to a position in s.
func narrow(w string, pos int) int {
	n := 0
	for i := 0; i < pos; {
		_, size := utf8.DecodeRuneInString(w[i:])
		i += size
		n++
	}
	return n
}

func (e *ere) MatchString(s string) bool {
	w, _ := widen(s)
	return e.re.MatchString(w)
}

func (e *ere) FindStringIndex(s string) []int {
	w, wide := widen(s)
	loc := e.re.FindStringIndex(w)
	if wide && loc != nil {
		loc[0], loc[1] = narrow(w, loc[0]), narrow(w, loc[1])
	}
	return loc
}

func (e *ere) FindAllStringIndex(s string, n int) [][]int {
	w, wide := widen(s)
	locs := e.re.FindAllStringIndex(w, n)
	if wide {
		for _, loc := range locs {
			loc[0], loc[1] = narrow(w, loc[0]), narrow(w, loc[1])
		}
	}
	return locs
}

// FindIndex is FindStringIndex over bytes (for RS).
func (e *ere) FindIndex(b []byte) []int { return e.FindStringIndex(string(b)) }

func translateERE(src string) (string, error) {
	var b strings.Builder
	b.WriteString("(?s)")
	// empty alternatives and leading repetition operators are literal or
	// empty in POSIX but errors in RE2; track whether an atom precedes.
	atom := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '\\':
			if i+1 >= len(src) {
				b.WriteString(`\\`)
				atom = true
				continue
			}
			i++
			b.WriteString(escapeChar(src, &i))
			atom = true
		case '[':
			end, cls, err := bracket(src, i)
			if err != nil {
				return "", err
			}
			b.WriteString(cls)
			i = end
			atom = true
		case '{', '}':
			b.WriteByte('\\')
			b.WriteByte(c)
			atom = true
		case '*', '+', '?':
			if !atom {
				b.WriteByte('\\')
				b.WriteByte(c)
				atom = true
				continue
			}
			b.WriteByte(c)
			// collapse stacked repetitions (a** is a* in POSIX, an error in RE2)
			for i+1 < len(src) && (src[i+1] == '*' || src[i+1] == '+' || src[i+1] == '?') {
				i++
				if src[i] != c {
					// a+? and the like: RE2 would read it as non-greedy
					// mawk reads them as nested repetitions: (a+)? == a*
					b.WriteString("")
				}
			}
		case '(':
			if i+1 < len(src) && src[i+1] == ')' {
				b.WriteString("()")
				i++
				atom = true
				continue
			}
			b.WriteByte('(')
			atom = false
		case '|':
			b.WriteByte('|')
			atom = false
		case ')':
			b.WriteByte(')')
			atom = true
		case '^', '$':
			b.WriteByte(c)
			atom = false
		case '.':
			b.WriteByte('.')
			atom = true
		default:
			if c >= 0x80 {
				fmt.Fprintf(&b, `\x{%x}`, c) // one byte, see [ere]
			} else {
				b.WriteByte(c)
			}
			atom = true
		}
	}
	return b.String(), nil
}

// escapeChar translates the escape at src[*i] (after the backslash),
// advancing *i past it, into Go syntax matching one literal character.
func escapeChar(src string, i *int) string {
	c := src[*i]
	lit := func(b byte) string { return regexp.QuoteMeta(string([]byte{b})) }
	switch c {
	case 'n':
		return `\n`
	case 't':
		return `\t`
	case 'r':
		return `\r`
	case 'f':
		return `\f`
	case 'v':
		return `\v`
	case 'a':
		return `\x07`
	case 'b':
		return `\x08`
	case '0', '1', '2', '3', '4', '5', '6', '7':
		n, k := 0, 0
		for k < 3 && *i < len(src) && src[*i] >= '0' && src[*i] <= '7' {
			n = n*8 + int(src[*i]-'0')
			*i++
			k++
		}
		*i--
		return fmt.Sprintf(`\x{%x}`, n)
	}
	if c >= 0x80 {
		return fmt.Sprintf(`\x{%x}`, c)
	}
	return lit(c)
}

// bracket translates the bracket expression starting at src[i] and
// returns the index of its closing ']'.
func bracket(src string, i int) (int, string, error) {
	var b strings.Builder
	b.WriteByte('[')
	j := i + 1
	if j < len(src) && src[j] == '^' {
		b.WriteByte('^')
		j++
	}
	first := true
	for ; j < len(src); j++ {
		c := src[j]
		switch {
		case c == ']' && !first:
			b.WriteByte(']')
			return j, b.String(), nil
		case c == '[' && j+1 < len(src) && (src[j+1] == ':' || src[j+1] == '.' || src[j+1] == '='):
			delim := src[j+1]
			end := strings.Index(src[j+2:], string([]byte{delim, ']'}))
			if end < 0 {
				b.WriteString(`\[`)
				break
			}
			name := src[j+2 : j+2+end]
			switch delim {
			case ':':
				if !validClass(name) {
					return 0, "", fmt.Errorf("bad class -- [], [^] or [")
				}
				b.WriteString("[:" + name + ":]")
			default:
				for k := 0; k < len(name); k++ {
					b.WriteString(regexp.QuoteMeta(name[k : k+1]))
				}
			}
			j += 2 + end + 1
		case c == '\\' && j+1 < len(src):
			j++
			s := escapeChar(src, &j)
			b.WriteString(s)
		case c >= 0x80:
			fmt.Fprintf(&b, `\x{%x}`, c)
		case c == '[':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
		first = false
	}
	return 0, "", fmt.Errorf("bad class -- [], [^] or [")
}

func validClass(name string) bool {
	switch name {
	case "alpha", "digit", "alnum", "upper", "lower", "space", "blank", "punct", "print", "graph", "cntrl", "xdigit":
		return true
	}
	return false
}

// regexCache compiles dynamic regular expressions once per source text.
type regexCache struct {
	m map[string]*ere
}

func (rc *regexCache) get(src string) (*ere, error) {
	if re, ok := rc.m[src]; ok {
		return re, nil
	}
	re, err := compileERE(src)
	if err != nil {
		return nil, err
	}
	if rc.m == nil || len(rc.m) > 500 {
		rc.m = map[string]*ere{}
	}
	rc.m[src] = re
	return re, nil
}
