package tools

import (
	"errors"
	"regexp"
	"strings"
)

// txCompileBRE translates a GNU basic regular expression (as expr, nl -bp
// and csplit use) into an RE2 regexp with POSIX leftmost-longest matching.
// Back-references and \< \> have no RE2 form: they return errBREUnsupported.
func txCompileBRE(pat string) (*regexp.Regexp, error) {
	var b strings.Builder
	atStart := true // where '*' is literal and '^' is an anchor
	depth := 0
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c == '\\' && i+1 < len(pat):
			i++
			d := pat[i]
			switch {
			case d == '(':
				b.WriteString("(")
				depth++
				atStart = true
				continue
			case d == ')':
				if depth == 0 {
					return nil, errors.New("Unmatched ) or \\)")
				}
				depth--
				b.WriteString(")")
			case d == '|':
				b.WriteString("|")
				atStart = true
				continue
			case d == '{':
				j := strings.Index(pat[i:], `\}`)
				if j < 0 {
					return nil, errors.New("Unmatched \\{")
				}
				if atStart {
					b.WriteString(`\{`)
					break
				}
				b.WriteString("{" + pat[i+1:i+j] + "}")
				i += j + 1
			case d == '+' || d == '?':
				if atStart {
					b.WriteString(`\` + string(d))
				} else {
					b.WriteByte(d)
				}
			case d >= '1' && d <= '9', d == '<', d == '>', d == '`', d == '\'':
				return nil, errBREUnsupported
			case d == 'w' || d == 'W' || d == 's' || d == 'S' || d == 'b' || d == 'B':
				b.WriteString(`\` + string(d))
			case d == 'n':
				b.WriteString(`\n`)
			default:
				b.WriteString(regexp.QuoteMeta(string(d)))
			}
		case c == '*' && atStart:
			b.WriteString(`\*`)
		case c == '^':
			if atStart {
				b.WriteString("^")
				continue
			}
			b.WriteString(`\^`)
		case c == '$':
			rest := pat[i+1:]
			if rest == "" || strings.HasPrefix(rest, `\)`) || strings.HasPrefix(rest, `\|`) {
				b.WriteString("$")
			} else {
				b.WriteString(`\$`)
			}
		case c == '[':
			j, cls := breBracket(pat, i)
			if j < 0 {
				return nil, errors.New("Unmatched [, [^, [:, [., or [=")
			}
			b.WriteString(cls)
			i = j
		case c == '.' || c == '*':
			b.WriteByte(c)
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
		atStart = false
	}
	if depth != 0 {
		return nil, errors.New("Unmatched ( or \\(")
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, err
	}
	re.Longest()
	return re, nil
}

var errBREUnsupported = errors.New("back-references are not supported in the isolate tier")

// breBracket translates the bracket expression starting at pat[i]; it
// returns the index of its closing ']' and the RE2 text.
func breBracket(pat string, i int) (int, string) {
	var b strings.Builder
	b.WriteByte('[')
	j := i + 1
	if j < len(pat) && pat[j] == '^' {
		b.WriteByte('^')
		j++
	}
	first := true
	for ; j < len(pat); j++ {
		c := pat[j]
		if c == ']' && !first {
			b.WriteByte(']')
			return j, b.String()
		}
		first = false
		if c == '[' && j+1 < len(pat) && (pat[j+1] == ':' || pat[j+1] == '=' || pat[j+1] == '.') {
			end := strings.Index(pat[j+2:], string(pat[j+1])+"]")
			if end < 0 {
				return -1, ""
			}
			inner := pat[j+2 : j+2+end]
			switch pat[j+1] {
			case ':':
				b.WriteString("[:" + inner + ":]")
			default:
				b.WriteString(regexp.QuoteMeta(inner))
			}
			j += end + 3
			continue
		}
		if c == '\\' || c == '[' || c == ']' || c == '^' && j > i+1 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return -1, ""
}
