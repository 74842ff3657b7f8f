package awk

import (
	"fmt"
	"regexp"
	"strings"
)

// compileERE compiles an awk regular expression (POSIX ERE with awk's
// escapes, as mawk 1.3.4 reads it) into a leftmost-longest Go regexp.
// mawk 20200120 has no interval expressions, so braces are literal.
func compileERE(src string) (*regexp.Regexp, error) {
	tr, err := translateERE(src)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(tr)
	if err != nil {
		return nil, err
	}
	re.Longest()
	return re, nil
}

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
			b.WriteByte(c)
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
		return string([]byte{c})
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
	m map[string]*regexp.Regexp
}

func (rc *regexCache) get(src string) (*regexp.Regexp, error) {
	if re, ok := rc.m[src]; ok {
		return re, nil
	}
	re, err := compileERE(src)
	if err != nil {
		return nil, err
	}
	if rc.m == nil || len(rc.m) > 500 {
		rc.m = map[string]*regexp.Regexp{}
	}
	rc.m[src] = re
	return re, nil
}
