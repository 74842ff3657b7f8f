package shell

import (
	"regexp"
	"strings"
	"sync"
)

// patternOpts modify how a glob pattern matches.
type patternOpts struct {
	nocase   bool
	pathname bool // * and ? do not match '/' (pathname expansion)
}

// matcher matches whole strings against one compiled glob pattern.
type matcher struct {
	re *regexp.Regexp
	// negation: prefix !(alts) suffix, matched by trying every split.
	pre, alts, suf *matcher
	literal        string
	isLiteral      bool
}

func (m *matcher) match(s string) bool {
	if m.isLiteral {
		return s == m.literal
	}
	if m.re != nil {
		return m.re.MatchString(s)
	}
	for i := 0; i <= len(s); i++ {
		if !m.pre.match(s[:i]) {
			continue
		}
		for j := len(s); j >= i; j-- {
			if m.suf.match(s[j:]) && !m.alts.match(s[i:j]) {
				return true
			}
		}
	}
	return false
}

var patCache sync.Map // key string -> *matcher

// compilePattern compiles a bash glob pattern (with extglob forms).
func (r *runner) compilePattern(pat string, o patternOpts) *matcher {
	ext := r == nil || r.shopts["extglob"] || r.inCond
	key := pat
	if !ext {
		key = "n\x00" + key
	}
	if o.nocase {
		key = "i\x00" + key
	}
	if o.pathname {
		key = "p\x00" + key
	}
	if m, ok := patCache.Load(key); ok {
		return m.(*matcher)
	}
	m := buildMatcher(pat, o, ext)
	patCache.Store(key, m)
	return m
}

func buildMatcher(pat string, o patternOpts, ext bool) *matcher {
	if !strings.ContainsAny(pat, "*?[\\+@!(") && !o.nocase {
		return &matcher{literal: pat, isLiteral: true}
	}
	if ext {
		if i := findNegation(pat); i >= 0 {
			end := matchParen(pat, i+1)
			if end > 0 {
				return &matcher{
					pre:  buildMatcher(pat[:i], o, ext),
					alts: buildMatcher("@"+pat[i+1:end+1], o, ext),
					suf:  buildMatcher(pat[end+1:], o, ext),
				}
			}
		}
	}
	expr, ok := globToRegexp(pat, o, ext)
	if !ok {
		return &matcher{literal: pat, isLiteral: true}
	}
	flags := "(?s)"
	if o.nocase {
		flags = "(?si)"
	}
	re, err := regexp.Compile(flags + "^(?:" + expr + ")$")
	if err != nil {
		return &matcher{literal: pat, isLiteral: true}
	}
	return &matcher{re: re}
}

// findNegation returns the index of the first unescaped "!(" or -1.
func findNegation(p string) int {
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' {
			i++
			continue
		}
		if p[i] == '[' {
			if j := bracketEnd(p, i); j > 0 {
				i = j
				continue
			}
		}
		if p[i] == '!' && i+1 < len(p) && p[i+1] == '(' {
			return i
		}
	}
	return -1
}

// matchParen returns the index of the ')' closing the '(' at i, or -1.
func matchParen(p string, i int) int {
	depth := 0
	for ; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// bracketEnd returns the index of the ']' closing the bracket expression
// starting at i, or -1 when it is not one.
func bracketEnd(p string, i int) int {
	j := i + 1
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++
	}
	for ; j < len(p); j++ {
		switch {
		case p[j] == '\\':
			j++
		case p[j] == '[' && j+1 < len(p) && (p[j+1] == ':' || p[j+1] == '.' || p[j+1] == '='):
			close := strings.Index(p[j+2:], string(p[j+1])+"]")
			if close < 0 {
				return -1
			}
			j += close + 3
		case p[j] == ']':
			return j
		}
	}
	return -1
}

// globToRegexp translates a glob pattern to a Go regexp body.
func globToRegexp(p string, o patternOpts, ext bool) (string, bool) {
	var sb strings.Builder
	any := "."
	if o.pathname {
		any = "[^/]"
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if ext && (c == '?' || c == '*' || c == '+' || c == '@' || c == '!') && i+1 < len(p) && p[i+1] == '(' {
			end := matchParen(p, i+1)
			if end > 0 {
				var alts []string
				for _, a := range splitAlts(p[i+2 : end]) {
					x, ok := globToRegexp(a, o, ext)
					if !ok {
						return "", false
					}
					alts = append(alts, x)
				}
				group := "(?:" + strings.Join(alts, "|") + ")"
				switch c {
				case '?':
					sb.WriteString(group + "?")
				case '*':
					sb.WriteString(group + "*")
				case '+':
					sb.WriteString(group + "+")
				default:
					sb.WriteString(group)
				}
				i = end
				continue
			}
		}
		switch c {
		case '*':
			sb.WriteString(any + "*")
		case '?':
			sb.WriteString(any)
		case '\\':
			if i+1 < len(p) {
				i++
				sb.WriteString(regexp.QuoteMeta(p[i : i+1]))
			} else {
				sb.WriteString(`\\`)
			}
		case '[':
			end := bracketEnd(p, i)
			if end < 0 {
				sb.WriteString(`\[`)
				continue
			}
			sb.WriteString(bracketToRegexp(p[i+1 : end]))
			i = end
		default:
			sb.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return sb.String(), true
}

func splitAlts(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			depth--
		case '|':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func bracketToRegexp(body string) string {
	var sb strings.Builder
	sb.WriteByte('[')
	i := 0
	if i < len(body) && (body[i] == '!' || body[i] == '^') {
		sb.WriteByte('^')
		i++
	}
	for ; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '[' && i+1 < len(body) && body[i+1] == ':':
			end := strings.Index(body[i:], ":]")
			if end > 0 {
				sb.WriteString(body[i : i+end+2])
				i += end + 1
				continue
			}
			sb.WriteString(`\[`)
		case c == '\\':
			if i+1 < len(body) {
				i++
				if isAlnum(body[i]) {
					sb.WriteByte(body[i])
				} else {
					sb.WriteByte('\\')
					sb.WriteByte(body[i])
				}
			}
		case c == ']' || c == '[' || c == '^':
			sb.WriteByte('\\')
			sb.WriteByte(c)
		default:
			sb.WriteByte(c)
		}
	}
	sb.WriteByte(']')
	return sb.String()
}

// matchPattern reports whether s matches the glob pattern pat.
func (r *runner) matchPattern(pat, s string, o patternOpts) bool {
	if r.shopts["nocasematch"] {
		o.nocase = true
	}
	return r.compilePattern(pat, o).match(s)
}

func isAlnum(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' }
