package tools

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// reMatchFlags are matching options that apply to a whole pattern.
type reMatchFlags struct {
	icase     bool // -i, sed's I flag
	multiline bool // ^ and $ also match around newlines (sed's M flag, grep)
	noNL      bool // nothing matches a newline (grep searches whole buffers)
	dotNL     bool // . and negated classes match a newline (sed)
}

// rePosix is a compiled POSIX pattern. It uses Go's regexp (RE2) in
// leftmost-longest mode when the pattern is regular, and a backtracking
// matcher over the AST otherwise. It is safe for concurrent use only when
// bt is nil; tools use one per invocation.
type rePosix struct {
	lit     []byte // the pattern is this plain string: bytes.Index does it
	re      *regexp.Regexp
	bt      *reBTProg
	ast     *reASTNode
	ngroups int
	fl      reMatchFlags
}

// reCompilePosix parses and compiles pattern. Warnings (GNU prints them on
// stderr) are returned with a nil error too.
func reCompilePosix(pattern string, syn reSyntaxOpts, fl reMatchFlags) (*rePosix, []string, error) {
	ast, ng, warns, err := reParsePosix(pattern, syn)
	if err != nil {
		return nil, warns, err
	}
	r, err := reCompileAST(ast, ng, fl)
	return r, warns, err
}

// reCompileAST compiles a parsed pattern.
func reCompileAST(ast *reASTNode, ngroups int, fl reMatchFlags) (*rePosix, error) {
	r := &rePosix{ast: ast, ngroups: ngroups, fl: fl}
	if lit, ok := reASTLiteral(ast); ok && len(lit) > 0 && !fl.icase {
		r.lit = lit
		return r, nil
	}
	var sb strings.Builder
	if fl.icase {
		sb.WriteString("(?i)")
	}
	if fl.multiline {
		sb.WriteString("(?m)")
	}
	if fl.dotNL {
		sb.WriteString("(?s)")
	}
	err := reEmit(&sb, ast, fl)
	if errors.Is(err, reErrNeedBT) {
		r.bt = &reBTProg{root: ast, ngroups: ngroups, fl: fl}
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(sb.String())
	if err != nil {
		// Anything RE2 refuses (sizes, say) still works by backtracking.
		r.bt = &reBTProg{root: ast, ngroups: ngroups, fl: fl}
		return r, nil
	}
	re.Longest()
	r.re = re
	return r, nil
}

// fullMatcher returns a matcher of the same pattern anchored at both ends
// of its input.
func (r *rePosix) fullMatcher() *rePosix {
	ast := &reASTNode{op: rxConcat, subs: []*reASTNode{{op: rxBufStart}, r.ast, {op: rxBufEnd}}}
	f, err := reCompileAST(ast, r.ngroups, r.fl)
	if err != nil {
		return &rePosix{bt: &reBTProg{root: ast, ngroups: r.ngroups, fl: r.fl}, ast: ast, ngroups: r.ngroups, fl: r.fl}
	}
	return f
}

// find returns the leftmost-longest match in b as submatch index pairs
// (like regexp's FindSubmatchIndex), or nil.
func (r *rePosix) find(b []byte) []int {
	if r.lit != nil {
		i := bytes.Index(b, r.lit)
		if i < 0 {
			return nil
		}
		return []int{i, i + len(r.lit)}
	}
	if r.re != nil {
		return r.re.FindSubmatchIndex(b)
	}
	return r.bt.find(b, 0)
}

// findIndex is find without submatches.
func (r *rePosix) findIndex(b []byte) []int {
	if r.lit != nil {
		return r.find(b)
	}
	if r.re != nil {
		return r.re.FindIndex(b)
	}
	m := r.bt.find(b, 0)
	if m == nil {
		return nil
	}
	return m[:2]
}

// match reports whether b contains a match.
func (r *rePosix) match(b []byte) bool {
	if r.lit != nil {
		return bytes.Contains(b, r.lit)
	}
	if r.re != nil {
		return r.re.Match(b)
	}
	return r.bt.find(b, 0) != nil
}

// findAll returns up to n (all when n < 0) successive matches with the
// same rules as regexp's FindAllSubmatchIndex: an empty match right after
// the previous match is skipped (this is also GNU sed's s///g rule).
func (r *rePosix) findAll(b []byte, n int) [][]int {
	if r.lit != nil {
		var out [][]int
		for off := 0; n < 0 || len(out) < n; {
			i := bytes.Index(b[off:], r.lit)
			if i < 0 {
				break
			}
			out = append(out, []int{off + i, off + i + len(r.lit)})
			off += i + len(r.lit)
		}
		return out
	}
	if r.re != nil {
		return r.re.FindAllSubmatchIndex(b, n)
	}
	var out [][]int
	prevEnd := -1
	for pos := 0; pos <= len(b) && (n < 0 || len(out) < n); {
		m := r.bt.find(b, pos)
		if m == nil {
			break
		}
		accept := true
		if m[1] == pos {
			if m[0] == prevEnd {
				accept = false
			}
			if pos < len(b) {
				_, w := utf8.DecodeRune(b[pos:])
				pos += w
			} else {
				pos++
			}
		} else {
			pos = m[1]
		}
		prevEnd = m[1]
		if accept {
			out = append(out, m)
		}
	}
	return out
}

// reEmit writes n in Go regexp syntax, or returns reErrNeedBT.
func reEmit(sb *strings.Builder, n *reASTNode, fl reMatchFlags) error {
	switch n.op {
	case rxLit:
		sb.WriteString(regexp.QuoteMeta(string(n.r)))
	case rxAny:
		if fl.noNL || fl.dotNL {
			sb.WriteString(".")
		} else {
			sb.WriteString("(?s:.)")
		}
	case rxClass:
		reEmitClass(sb, n.cls, fl)
	case rxBol:
		sb.WriteString("^")
	case rxEol:
		sb.WriteString("$")
	case rxBufStart:
		sb.WriteString(`\A`)
	case rxBufEnd:
		sb.WriteString(`\z`)
	case rxWordB:
		sb.WriteString(`\b`)
	case rxNotWordB:
		sb.WriteString(`\B`)
	case rxWordStart, rxWordEnd, rxBackref:
		// Handled in context by rxConcat; alone they need the backtracker.
		return reErrNeedBT
	case rxEmpty:
		sb.WriteString("(?:)")
	case rxGroup:
		sb.WriteString("(")
		if err := reEmit(sb, n.subs[0], fl); err != nil {
			return err
		}
		sb.WriteString(")")
	case rxAlt:
		sb.WriteString("(?:")
		for i, s := range n.subs {
			if i > 0 {
				sb.WriteString("|")
			}
			if err := reEmit(sb, s, fl); err != nil {
				return err
			}
		}
		sb.WriteString(")")
	case rxConcat:
		for i, s := range n.subs {
			switch {
			case s.op == rxWordStart && i+1 < len(n.subs) && reStartsWord(n.subs[i+1]):
				sb.WriteString(`\b`)
			case s.op == rxWordEnd && i > 0 && reEndsWord(n.subs[i-1]):
				sb.WriteString(`\b`)
			default:
				if err := reEmit(sb, s, fl); err != nil {
					return err
				}
			}
		}
	case rxRepeat:
		if n.min > 1000 || n.max > 1000 {
			return reErrNeedBT
		}
		sb.WriteString("(?:")
		if err := reEmit(sb, n.subs[0], fl); err != nil {
			return err
		}
		sb.WriteString(")")
		switch {
		case n.min == 0 && n.max < 0:
			sb.WriteString("*")
		case n.min == 1 && n.max < 0:
			sb.WriteString("+")
		case n.min == 0 && n.max == 1:
			sb.WriteString("?")
		case n.max < 0:
			fmt.Fprintf(sb, "{%d,}", n.min)
		case n.min == n.max:
			fmt.Fprintf(sb, "{%d}", n.min)
		default:
			fmt.Fprintf(sb, "{%d,%d}", n.min, n.max)
		}
	default:
		return reErrNeedBT
	}
	return nil
}

// reStartsWord reports whether every match of n begins with a word
// character, so that a preceding \< is RE2's \b.
func reStartsWord(n *reASTNode) bool {
	switch n.op {
	case rxLit:
		return reClassHas("w", n.r)
	case rxClass:
		return !n.cls.neg && len(n.cls.ranges) == 0 && len(n.cls.named) == 1 && n.cls.named[0] == "w"
	case rxGroup:
		return reStartsWord(n.subs[0])
	case rxConcat:
		return reStartsWord(n.subs[0])
	case rxRepeat:
		return n.min >= 1 && reStartsWord(n.subs[0])
	case rxAlt:
		for _, s := range n.subs {
			if !reStartsWord(s) {
				return false
			}
		}
		return true
	}
	return false
}

// reEndsWord is reStartsWord for the last character.
func reEndsWord(n *reASTNode) bool {
	switch n.op {
	case rxConcat:
		return reEndsWord(n.subs[len(n.subs)-1])
	case rxGroup:
		return reEndsWord(n.subs[0])
	case rxRepeat:
		return n.min >= 1 && reEndsWord(n.subs[0])
	case rxAlt:
		for _, s := range n.subs {
			if !reEndsWord(s) {
				return false
			}
		}
		return true
	}
	return reStartsWord(n)
}

var reGoClassText = map[string]string{
	"w":      `\p{L}\p{Nd}_`,
	"alpha":  `\p{L}`,
	"digit":  `0-9`,
	"alnum":  `\p{L}\p{Nd}`,
	"upper":  `\p{Lu}`,
	"lower":  `\p{Ll}`,
	"space":  `\t-\r \x{85}\p{Z}`,
	"blank":  ` \t`,
	"punct":  "!-/:-@\\[-`{-~",
	"print":  ` -~\x{a0}-\x{10ffff}`,
	"graph":  `!-~\x{a1}-\x{10ffff}`,
	"cntrl":  `\x00-\x1f\x7f`,
	"xdigit": `0-9A-Fa-f`,
}

// reNoNLClassText overrides classes that contain a newline in grep mode.
var reNoNLClassText = map[string]string{
	"space": `\t\x0b-\r \x{85}\p{Z}`,
	"cntrl": `\x00-\x09\x0b-\x1f\x7f`,
}

func reEmitClass(sb *strings.Builder, c *reBracket, fl reMatchFlags) {
	sb.WriteString("[")
	if c.neg {
		sb.WriteString("^")
		if fl.noNL {
			sb.WriteString(`\n`)
		}
	}
	for i := 0; i < len(c.ranges); i += 2 {
		lo, hi := c.ranges[i], c.ranges[i+1]
		if fl.noNL && !c.neg && lo <= '\n' && hi >= '\n' {
			if lo < '\n' {
				fmt.Fprintf(sb, `\x{%x}-\x{%x}`, lo, '\n'-1)
			}
			if hi > '\n' {
				fmt.Fprintf(sb, `\x{%x}-\x{%x}`, '\n'+1, hi)
			}
			continue
		}
		fmt.Fprintf(sb, `\x{%x}`, lo)
		if hi != lo {
			fmt.Fprintf(sb, `-\x{%x}`, hi)
		}
	}
	for _, name := range c.named {
		t := reGoClassText[name]
		if fl.noNL && !c.neg {
			if o, ok := reNoNLClassText[name]; ok {
				t = o
			}
		}
		sb.WriteString(t)
	}
	if len(c.ranges) == 0 && len(c.named) == 0 {
		// An empty set cannot be written in RE2 syntax as []; this
		// happens only for impossible classes.
		sb.WriteString(`\x{10ffff}`)
	}
	sb.WriteString("]")
}

// reRequiredLiteral returns the longest run of literal characters that
// every match of n contains (from its top-level concatenation), or nil.
func reRequiredLiteral(n *reASTNode) []byte {
	for n.op == rxGroup {
		n = n.subs[0]
	}
	if n.op == rxLit {
		return utf8.AppendRune(nil, n.r)
	}
	if n.op != rxConcat {
		return nil
	}
	var best, cur []byte
	for _, s := range n.subs {
		for s.op == rxGroup && s.subs[0].op == rxLit {
			s = s.subs[0]
		}
		if s.op == rxLit && s.r != utf8.RuneError {
			cur = utf8.AppendRune(cur, s.r)
			if len(cur) > len(best) {
				best = append(best[:0], cur...)
			}
			continue
		}
		cur = cur[:0]
		if sub := reRequiredLiteral(s); s.op == rxGroup && len(sub) > len(best) {
			best = sub
		}
	}
	return best
}
