package tools

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file parses POSIX regular expressions (BRE and ERE, GNU flavour)
// into a small AST. posixcompile.go turns the AST into a Go RE2 regexp
// when it can, and posixbt.go matches it by backtracking when it cannot
// (back-references, \< and \> in positions RE2 cannot express).

type reOp uint8

const (
	rxLit       reOp = iota // r
	rxAny                   // .
	rxClass                 // cls
	rxBol                   // ^
	rxEol                   // $
	rxBufStart              // \`
	rxBufEnd                // \'
	rxWordB                 // \b
	rxNotWordB              // \B
	rxWordStart             // \<
	rxWordEnd               // \>
	rxGroup                 // ( subs[0] ), n = group index
	rxConcat                // subs...
	rxAlt                   // subs[0] | subs[1] | ...
	rxRepeat                // subs[0]{min,max}; max < 0 means unbounded
	rxBackref               // \n
	rxEmpty                 // matches the empty string
)

type reASTNode struct {
	op       reOp
	r        rune
	cls      *reBracket
	subs     []*reASTNode
	min, max int
	n        int
}

// reBracket is a bracket expression (or \w \s and friends).
type reBracket struct {
	neg    bool
	ranges []rune   // pairs lo, hi
	named  []string // alpha, digit, ... ; "w" for word characters
}

// reSyntaxOpts says how to read a pattern.
type reSyntaxOpts struct {
	ere    bool // extended syntax (grep -E, sed -E)
	sedEsc bool // \n \t \f \v \r \a \xHH \dNNN \oNNN \cX mean characters (sed)
	emacs  bool // find's default: BRE, but + and ? are operators and \{ is not
}

// rePatternError is a pattern error worded as GNU's regex library words it.
type rePatternError struct{ msg string }

func (e *rePatternError) Error() string { return e.msg }

var (
	reErrBrack    = &rePatternError{"Unmatched [, [^, [:, [., or [="}
	reErrParen    = &rePatternError{"Unmatched ( or \\("}
	reErrRParen   = &rePatternError{"Unmatched ) or \\)"}
	reErrBrace    = &rePatternError{"Unmatched \\{"}
	reErrBadBrace = &rePatternError{"Invalid content of \\{\\}"}
	reErrBackref  = &rePatternError{"Invalid back reference"}
	reErrTrailing = &rePatternError{"Trailing backslash"}
	reErrCtype    = &rePatternError{"Invalid character class name"}
	reErrRange    = &rePatternError{"Invalid range end"}
	reErrPreceed  = &rePatternError{"Invalid preceding regular expression"}
	reErrTooBig   = &rePatternError{"Regular expression too big"}
)

// reASTParser holds the state of one parse.
type reASTParser struct {
	syn      reSyntaxOpts
	s        string
	pos      int
	ngroups  int
	closed   []bool // closed[i] is true once group i+1 is closed
	depth    int
	warnings []string
}

// reParsePosix parses pattern and returns its AST and number of groups.
func reParsePosix(pattern string, syn reSyntaxOpts) (*reASTNode, int, []string, error) {
	p := &reASTParser{syn: syn, s: pattern}
	n, err := p.parseAlt()
	if err != nil {
		return nil, 0, p.warnings, err
	}
	if p.pos < len(p.s) {
		// Only an unmatched close paren stops parseAlt early.
		return nil, 0, p.warnings, reErrRParen
	}
	return n, p.ngroups, p.warnings, nil
}

func (p *reASTParser) more() bool { return p.pos < len(p.s) }

// atAltSep reports whether the input is at "|" (ERE) or "\|" (BRE).
func (p *reASTParser) atAltSep() bool {
	if p.syn.ere {
		return p.more() && p.s[p.pos] == '|'
	}
	return strings.HasPrefix(p.s[p.pos:], `\|`)
}

func (p *reASTParser) atClose() bool {
	if p.depth == 0 {
		return false
	}
	if p.syn.ere {
		return p.more() && p.s[p.pos] == ')'
	}
	return strings.HasPrefix(p.s[p.pos:], `\)`)
}

func (p *reASTParser) parseAlt() (*reASTNode, error) {
	var alts []*reASTNode
	for {
		n, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		alts = append(alts, n)
		if !p.atAltSep() {
			break
		}
		if p.syn.ere {
			p.pos++
		} else {
			p.pos += 2
		}
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &reASTNode{op: rxAlt, subs: alts}, nil
}

func (p *reASTParser) parseConcat() (*reASTNode, error) {
	var items []*reASTNode
	start := true // at the start of an RE: '*' is literal, '^' an anchor
	for p.more() && !p.atAltSep() && !p.atClose() {
		c := p.s[p.pos]
		// Repetition operators.
		if op, ok := p.repeatOp(); ok {
			if start || len(items) == 1 && items[0].op == rxBol {
				switch {
				case p.syn.ere && c == '{':
					p.pos++
					items = append(items, &reASTNode{op: rxLit, r: '{'})
				case p.syn.ere:
					// GNU ignores a leading *, + or ? in an ERE, with a warning.
					p.warnings = append(p.warnings, fmt.Sprintf("%c at start of expression", c))
					p.pos++
				case c == '\\' && p.s[p.pos+1] == '{':
					return nil, reErrPreceed
				case c == '\\':
					// \+ and \? at the start of a BRE are literal.
					p.pos += 2
					items = append(items, &reASTNode{op: rxLit, r: rune(p.s[p.pos-1])})
				default:
					p.pos++
					items = append(items, &reASTNode{op: rxLit, r: rune(c)})
				}
				start = false
				continue
			}
			if len(items) == 0 {
				p.pos += op.width
				continue
			}
			rep, err := p.parseRepeat(op)
			if err != nil {
				return nil, err
			}
			if rep == nil { // ERE "{" that is not an interval: literal
				p.pos++
				items = append(items, &reASTNode{op: rxLit, r: '{'})
				continue
			}
			last := items[len(items)-1]
			if last.op == rxBol || last.op == rxEol {
				// GNU: a repeated anchor matches the anchor; keep it.
				continue
			}
			rep.subs = []*reASTNode{last}
			items[len(items)-1] = rep
			continue
		}
		n, err := p.parseAtom(start, len(items))
		if err != nil {
			return nil, err
		}
		items = append(items, n)
		start = false
		if n.op == rxBol && !p.syn.ere {
			start = false
		}
	}
	switch len(items) {
	case 0:
		return &reASTNode{op: rxEmpty}, nil
	case 1:
		return items[0], nil
	}
	return &reASTNode{op: rxConcat, subs: items}, nil
}

type reRepOp struct {
	kind  byte // '*', '+', '?', '{'
	width int
}

func (p *reASTParser) repeatOp() (reRepOp, bool) {
	c := p.s[p.pos]
	if p.syn.ere {
		switch c {
		case '*', '+', '?', '{':
			return reRepOp{c, 1}, true
		}
		return reRepOp{}, false
	}
	if c == '*' || p.syn.emacs && (c == '+' || c == '?') {
		return reRepOp{c, 1}, true
	}
	if c == '\\' && p.pos+1 < len(p.s) && !p.syn.emacs {
		switch p.s[p.pos+1] {
		case '+', '?', '{':
			return reRepOp{p.s[p.pos+1], 2}, true
		}
	}
	return reRepOp{}, false
}

// parseRepeat parses a repetition operator at p.pos. For an ERE "{" that
// does not start a valid interval it returns nil, nil and consumes nothing.
func (p *reASTParser) parseRepeat(op reRepOp) (*reASTNode, error) {
	switch op.kind {
	case '*':
		p.pos += op.width
		return &reASTNode{op: rxRepeat, min: 0, max: -1}, nil
	case '+':
		p.pos += op.width
		return &reASTNode{op: rxRepeat, min: 1, max: -1}, nil
	case '?':
		p.pos += op.width
		return &reASTNode{op: rxRepeat, min: 0, max: 1}, nil
	}
	i := p.pos + op.width
	readNum := func() (int, bool) {
		j := i
		for i < len(p.s) && p.s[i] >= '0' && p.s[i] <= '9' {
			i++
		}
		if j == i {
			return 0, false
		}
		v, err := strconv.Atoi(p.s[j:i])
		if err != nil || v > 32767 {
			return 32768, true
		}
		return v, true
	}
	lo, haveLo := readNum()
	hi := lo
	if i < len(p.s) && p.s[i] == ',' {
		i++
		var haveHi bool
		hi, haveHi = readNum()
		if !haveHi {
			hi = -1
		}
	} else if !haveLo {
		if p.syn.ere {
			return nil, nil
		}
		if i >= len(p.s) {
			return nil, reErrBrace
		}
		return nil, reErrBadBrace
	}
	if !haveLo {
		lo = 0
	}
	closer := `\}`
	if p.syn.ere {
		closer = "}"
	}
	if !strings.HasPrefix(p.s[i:], closer) {
		if p.syn.ere {
			return nil, nil
		}
		if i >= len(p.s) || !strings.Contains(p.s[i:], `\}`) {
			return nil, reErrBrace
		}
		return nil, reErrBadBrace
	}
	if (hi >= 0 && hi < lo) || lo > 32767 || hi > 32767 {
		if lo > 32767 || hi > 32767 {
			return nil, reErrTooBig
		}
		return nil, reErrBadBrace
	}
	p.pos = i + len(closer)
	return &reASTNode{op: rxRepeat, min: lo, max: hi}, nil
}

func (p *reASTParser) parseAtom(start bool, nitems int) (*reASTNode, error) {
	c := p.s[p.pos]
	switch c {
	case '.':
		p.pos++
		return &reASTNode{op: rxAny}, nil
	case '[':
		p.pos++
		cls, err := p.parseBracket()
		if err != nil {
			return nil, err
		}
		return &reASTNode{op: rxClass, cls: cls}, nil
	case '^':
		if p.syn.ere || start {
			p.pos++
			return &reASTNode{op: rxBol}, nil
		}
	case '$':
		p.pos++
		if p.syn.ere || !p.more() || p.atAltSep() || strings.HasPrefix(p.s[p.pos:], `\)`) {
			return &reASTNode{op: rxEol}, nil
		}
		return &reASTNode{op: rxLit, r: '$'}, nil
	case '(':
		if p.syn.ere {
			p.pos++
			return p.parseGroup()
		}
	case ')':
		// An unmatched ')' in an ERE is an ordinary character (GNU).
	case '\\':
		return p.parseEscape()
	}
	r, w := utf8.DecodeRuneInString(p.s[p.pos:])
	p.pos += w
	return &reASTNode{op: rxLit, r: r}, nil
}

func (p *reASTParser) parseGroup() (*reASTNode, error) {
	p.ngroups++
	idx := p.ngroups
	p.closed = append(p.closed, false)
	p.depth++
	sub, err := p.parseAlt()
	p.depth--
	if err != nil {
		return nil, err
	}
	if p.syn.ere {
		if !p.more() || p.s[p.pos] != ')' {
			return nil, reErrParen
		}
		p.pos++
	} else {
		if !strings.HasPrefix(p.s[p.pos:], `\)`) {
			return nil, reErrParen
		}
		p.pos += 2
	}
	p.closed[idx-1] = true
	return &reASTNode{op: rxGroup, n: idx, subs: []*reASTNode{sub}}, nil
}

func (p *reASTParser) parseEscape() (*reASTNode, error) {
	if p.pos+1 >= len(p.s) {
		return nil, reErrTrailing
	}
	c := p.s[p.pos+1]
	p.pos += 2
	switch c {
	case '(':
		if !p.syn.ere {
			return p.parseGroup()
		}
	case ')':
		if !p.syn.ere {
			return nil, reErrRParen
		}
	case '{':
		if !p.syn.ere && !p.syn.emacs {
			return nil, reErrPreceed
		}
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		n := int(c - '0')
		if n > len(p.closed) || !p.closed[n-1] {
			return nil, reErrBackref
		}
		return &reASTNode{op: rxBackref, n: n}, nil
	case 'w', 'W':
		return &reASTNode{op: rxClass, cls: &reBracket{neg: c == 'W', named: []string{"w"}}}, nil
	case 's', 'S':
		return &reASTNode{op: rxClass, cls: &reBracket{neg: c == 'S', named: []string{"space"}}}, nil
	case 'b':
		return &reASTNode{op: rxWordB}, nil
	case 'B':
		return &reASTNode{op: rxNotWordB}, nil
	case '<':
		return &reASTNode{op: rxWordStart}, nil
	case '>':
		return &reASTNode{op: rxWordEnd}, nil
	case '`':
		return &reASTNode{op: rxBufStart}, nil
	case '\'':
		return &reASTNode{op: rxBufEnd}, nil
	}
	if p.syn.sedEsc {
		if r, ok := p.sedEscape(c); ok {
			return &reASTNode{op: rxLit, r: r}, nil
		}
	}
	p.pos--
	r, w := utf8.DecodeRuneInString(p.s[p.pos:])
	p.pos += w
	return &reASTNode{op: rxLit, r: r}, nil
}

// sedEscape decodes GNU sed's character escapes after the backslash; c
// has been consumed already.
func (p *reASTParser) sedEscape(c byte) (rune, bool) {
	switch c {
	case 'n':
		return '\n', true
	case 't':
		return '\t', true
	case 'f':
		return '\f', true
	case 'v':
		return '\v', true
	case 'r':
		return '\r', true
	case 'a':
		return '\a', true
	case 'c':
		if p.more() {
			x := p.s[p.pos]
			p.pos++
			return rune(unicode.ToUpper(rune(x)) ^ 0x40), true
		}
	case 'd', 'o', 'x':
		base, max := 10, 3
		switch c {
		case 'o':
			base = 8
		case 'x':
			base, max = 16, 2
		}
		j := p.pos
		for j < len(p.s) && j-p.pos < max && reDigitVal(p.s[j]) < base {
			j++
		}
		if j == p.pos {
			return 0, false
		}
		v, _ := strconv.ParseInt(p.s[p.pos:j], base, 32)
		p.pos = j
		return rune(v & 0xff), true
	}
	return 0, false
}

// bracketSedEscape decodes a character escape (\t, \n, \xHH...) at the
// parser's position inside a bracket expression, as GNU sed does before
// compiling; other backslashes stay literal there.
func (p *reASTParser) bracketSedEscape() (rune, bool) {
	if !p.syn.sedEsc || p.s[p.pos] != '\\' || p.pos+1 >= len(p.s) {
		return 0, false
	}
	save := p.pos
	p.pos += 2
	if r, ok := p.sedEscape(p.s[save+1]); ok {
		return r, true
	}
	p.pos = save
	return 0, false
}

func reDigitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return 99
}

var reClassNames = map[string]bool{
	"alpha": true, "digit": true, "alnum": true, "upper": true, "lower": true, "space": true,
	"blank": true, "punct": true, "print": true, "graph": true, "cntrl": true, "xdigit": true,
}

// parseBracket parses a bracket expression after its "[".
func (p *reASTParser) parseBracket() (*reBracket, error) {
	cls := &reBracket{}
	if p.more() && p.s[p.pos] == '^' {
		cls.neg = true
		p.pos++
	}
	if !p.more() {
		// GNU's message for a "[" (or "[^") that ends the pattern.
		return nil, &rePatternError{"Invalid regular expression"}
	}
	first := true
	for {
		if !p.more() {
			return nil, reErrBrack
		}
		c := p.s[p.pos]
		if c == ']' && !first {
			p.pos++
			break
		}
		first = false
		var lo rune
		if c == '[' && p.pos+1 < len(p.s) && strings.IndexByte(":.=", p.s[p.pos+1]) >= 0 {
			kind := p.s[p.pos+1]
			end := strings.Index(p.s[p.pos+2:], string(kind)+"]")
			if end < 0 {
				return nil, reErrBrack
			}
			name := p.s[p.pos+2 : p.pos+2+end]
			p.pos += 2 + end + 2
			if kind == ':' {
				if !reClassNames[name] {
					return nil, reErrCtype
				}
				cls.named = append(cls.named, name)
				continue
			}
			r, w := utf8.DecodeRuneInString(name)
			if w == 0 || w != len(name) {
				return nil, &rePatternError{"Invalid collation character"}
			}
			lo = r
		} else if r, ok := p.bracketSedEscape(); ok {
			lo = r
		} else {
			r, w := utf8.DecodeRuneInString(p.s[p.pos:])
			p.pos += w
			lo = r
		}
		hi := lo
		if p.pos+1 < len(p.s) && p.s[p.pos] == '-' && p.s[p.pos+1] != ']' {
			p.pos++
			if strings.HasPrefix(p.s[p.pos:], "[.") || strings.HasPrefix(p.s[p.pos:], "[=") {
				end := strings.Index(p.s[p.pos+2:], string(p.s[p.pos+1])+"]")
				if end < 0 {
					return nil, reErrBrack
				}
				hi, _ = utf8.DecodeRuneInString(p.s[p.pos+2:])
				p.pos += 2 + end + 2
			} else {
				r, w := utf8.DecodeRuneInString(p.s[p.pos:])
				p.pos += w
				hi = r
			}
			if hi < lo {
				return nil, reErrRange
			}
		}
		cls.ranges = append(cls.ranges, lo, hi)
	}
	// "[:alpha:]" written without the outer brackets is an error in GNU.
	if len(cls.named) == 0 && len(cls.ranges) >= 4 && !cls.neg {
		raw := p.s[:p.pos]
		if i := strings.LastIndexByte(raw[:len(raw)-1], '['); i >= 0 {
			inner := raw[i+1 : len(raw)-1]
			if len(inner) >= 2 && inner[0] == ':' && inner[len(inner)-1] == ':' {
				return nil, &rePatternError{fmt.Sprintf("character class syntax is [[:space:]], not [%s]", inner)}
			}
		}
	}
	return cls, nil
}

// reClassHas reports whether r is in the named class.
func reClassHas(name string, r rune) bool {
	switch name {
	case "w":
		return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
	case "alpha":
		return unicode.IsLetter(r)
	case "digit":
		return r >= '0' && r <= '9'
	case "alnum":
		return unicode.IsLetter(r) || unicode.IsDigit(r)
	case "upper":
		return unicode.IsUpper(r)
	case "lower":
		return unicode.IsLower(r)
	case "space":
		return r == ' ' || (r >= '\t' && r <= '\r') || (r > 127 && unicode.IsSpace(r))
	case "blank":
		return r == ' ' || r == '\t'
	case "punct":
		return r < 128 && unicode.IsPunct(r) || r < 128 && unicode.IsSymbol(r)
	case "print":
		return r >= 32 && r != 127 && (r < 128 || unicode.IsPrint(r))
	case "graph":
		return r > 32 && r != 127 && (r < 128 || unicode.IsGraphic(r) && !unicode.IsSpace(r))
	case "cntrl":
		return r < 32 || r == 127
	case "xdigit":
		return reDigitVal(byte(r)) < 16 && r < 128
	}
	return false
}

func (c *reBracket) has(r rune, icase bool) bool {
	in := c.hasExact(r)
	if !in && icase {
		for f := unicode.SimpleFold(r); f != r && !in; f = unicode.SimpleFold(f) {
			in = c.hasExact(f)
		}
	}
	return in != c.neg
}

func (c *reBracket) hasExact(r rune) bool {
	for i := 0; i < len(c.ranges); i += 2 {
		if r >= c.ranges[i] && r <= c.ranges[i+1] {
			return true
		}
	}
	for _, n := range c.named {
		if reClassHas(n, r) {
			return true
		}
	}
	return false
}

var reErrNeedBT = errors.New("pattern needs the backtracking matcher")
