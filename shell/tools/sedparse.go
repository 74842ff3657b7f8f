package tools

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// sedAddrKind is the kind of a sed address.
type sedAddrKind uint8

const (
	sedAddrLine  sedAddrKind = iota + 1 // n
	sedAddrLast                         // $
	sedAddrRE                           // /re/
	sedAddrStep                         // first~step
	sedAddrZero                         // 0 (only as 0,/re/)
	sedAddrPlus                         // +n (second address only)
	sedAddrTilde                        // ~n (second address only)
)

type sedAddr struct {
	kind    sedAddrKind
	n, step int64
	re      *sedRegex
}

// sedRegex is a regex as written in a script; an empty one means the last
// regex used at run time.
type sedRegex struct {
	re    *rePosix
	empty bool
}

// sedRepl is one piece of an s replacement.
type sedRepl struct {
	lit   string
	group int  // -1 for a literal, 0 for &, 1-9 for \n
	conv  byte // 'U', 'L', 'u', 'l', 'E' case conversion, or 0
}

type sedCmd struct {
	a1, a2 *sedAddr
	neg    bool
	name   byte

	re      *sedRegex // s
	repl    []sedRepl
	global  bool
	nth     int
	print   int
	wfile   string
	text    string // a i c text; label for b t T :; file for r R w W
	ymap    map[rune]rune
	num     int  // q Q exit code, l width; -1 when not given
	hasNum  bool //
	jump    int  // b t T target index; '{' index of its '}'
	inRange bool // range state
	rangeTo int64
	done    bool // 0,/re/ and similar one-shot ranges that ended
}

// sedParser reads a whole script.
type sedParser struct {
	s       string
	pos     int
	ere     bool
	cmds    []*sedCmd
	blocks  []int
	sandbox bool
	// starts are where each -e expression begins in s (they are joined
	// with newlines), so that errors name the expression as GNU does.
	starts []int
}

// sedError is a script error, worded like GNU sed's.
type sedError struct {
	msg    string
	status int
}

func (e *sedError) Error() string { return e.msg }

func (p *sedParser) errf(format string, args ...any) error {
	n, pos := 1, p.pos
	for i, st := range p.starts {
		if i > 0 && p.pos >= st {
			n, pos = i+1, p.pos-st
		}
	}
	return &sedError{fmt.Sprintf("-e expression #%d, char %d: %s", n, pos, fmt.Sprintf(format, args...)), 1}
}

func (p *sedParser) more() bool { return p.pos < len(p.s) }
func (p *sedParser) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *sedParser) skipSpace() {
	for p.more() && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

// parseSed parses script into commands with jumps resolved.
func parseSed(script string, ere, sandbox bool) ([]*sedCmd, error) {
	return parseSedExprs(script, nil, ere, sandbox)
}

// parseSedExprs is parseSed for -e expressions joined with newlines,
// starting at starts.
func parseSedExprs(script string, starts []int, ere, sandbox bool) ([]*sedCmd, error) {
	p := &sedParser{s: script, ere: ere, sandbox: sandbox, starts: starts}
	for {
		for p.more() && (strings.IndexByte(" \t\n;", p.s[p.pos]) >= 0) {
			p.pos++
		}
		if !p.more() {
			break
		}
		if err := p.parseCmd(); err != nil {
			return nil, err
		}
	}
	if len(p.blocks) > 0 {
		p.pos = len(p.s)
		return nil, p.errf("unmatched `{'")
	}
	labels := map[string]int{}
	for i, c := range p.cmds {
		if c.name == ':' {
			if _, dup := labels[c.text]; dup {
				return nil, &sedError{fmt.Sprintf("-e expression #1, char 0: duplicate label `%s'", c.text), 1}
			}
			labels[c.text] = i
		}
	}
	for _, c := range p.cmds {
		if c.name != 'b' && c.name != 't' && c.name != 'T' {
			continue
		}
		if c.text == "" {
			c.jump = len(p.cmds)
			continue
		}
		i, ok := labels[c.text]
		if !ok {
			return nil, &sedError{fmt.Sprintf("can't find label for jump to `%s'", c.text), 4}
		}
		c.jump = i
	}
	return p.cmds, nil
}

func (p *sedParser) parseCmd() error {
	if p.peek() == '#' {
		for p.more() && p.s[p.pos] != '\n' {
			p.pos++
		}
		return nil
	}
	c := &sedCmd{num: -1}
	var err error
	if c.a1, err = p.parseAddr(true); err != nil {
		return err
	}
	if c.a1 != nil {
		p.skipSpace()
		if p.peek() == ',' {
			p.pos++
			p.skipSpace()
			if c.a2, err = p.parseAddr(false); err != nil {
				return err
			}
			if c.a2 == nil {
				return p.errf("unexpected `,'")
			}
		}
		if c.a1.kind == sedAddrZero && (c.a2 == nil || c.a2.kind != sedAddrRE) {
			return p.errf("invalid usage of line address 0")
		}
	}
	p.skipSpace()
	if p.peek() == '!' {
		c.neg = true
		p.pos++
		for p.peek() == ' ' || p.peek() == '\t' || p.peek() == '!' {
			if p.peek() == '!' {
				return p.errf("multiple `!'s")
			}
			p.pos++
		}
	}
	if !p.more() {
		return p.errf("missing command")
	}
	c.name = p.s[p.pos]
	p.pos++
	switch c.name {
	case '{':
		p.blocks = append(p.blocks, len(p.cmds))
		p.cmds = append(p.cmds, c)
		return nil
	case '}':
		if c.a1 != nil {
			return p.errf("} doesn't want any addresses")
		}
		if len(p.blocks) == 0 {
			return p.errf("unexpected `}'")
		}
		open := p.blocks[len(p.blocks)-1]
		p.blocks = p.blocks[:len(p.blocks)-1]
		p.cmds[open].jump = len(p.cmds) + 1
		p.cmds = append(p.cmds, c)
		return p.endCmd()
	case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
	case 'l', 'L', 'q', 'Q':
		if (c.name == 'q' || c.name == 'Q') && c.a2 != nil {
			return p.errf("command only uses one address")
		}
		if c.name == 'L' {
			return p.errf("unknown command: `L'")
		}
		p.skipSpace()
		st := p.pos
		for p.more() && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
		}
		if p.pos > st {
			c.num, _ = strconv.Atoi(p.s[st:p.pos])
			c.hasNum = true
		}
	case ':':
		if c.a1 != nil {
			return p.errf(": doesn't want any addresses")
		}
		p.skipSpace()
		c.text = p.readLabel()
		if c.text == "" {
			return p.errf("\":\" lacks a label")
		}
	case 'b', 't', 'T':
		p.skipSpace()
		c.text = p.readLabel()
	case 'a', 'i', 'c':
		t, err := p.readText()
		if err != nil {
			return err
		}
		c.text = t
		p.cmds = append(p.cmds, c)
		return nil
	case 'r', 'R', 'w', 'W':
		p.skipSpace()
		c.text = p.readToEOL()
		if c.text == "" {
			return p.errf("missing filename in r/R/w/W commands")
		}
		if p.sandbox {
			return p.errf("e/r/w commands disabled in sandbox mode")
		}
		p.cmds = append(p.cmds, c)
		return nil
	case 's':
		if err := p.parseSubst(c); err != nil {
			return err
		}
		p.cmds = append(p.cmds, c)
		if c.wfile != "" {
			return nil
		}
		return p.endCmd()
	case 'y':
		if err := p.parseY(c); err != nil {
			return err
		}
	case 'e':
		return &sedUnsupported{"the e command"}
	case 'v':
		p.readLabel()
	default:
		return p.errf("unknown command: `%c'", c.name)
	}
	p.cmds = append(p.cmds, c)
	return p.endCmd()
}

// sedUnsupported reports a command the isolate tier does not run.
type sedUnsupported struct{ what string }

func (e *sedUnsupported) Error() string { return e.what }

// endCmd accepts what may follow a command: spaces, then ; } # newline.
func (p *sedParser) endCmd() error {
	p.skipSpace()
	if !p.more() {
		return nil
	}
	switch p.s[p.pos] {
	case ';', '\n':
		p.pos++
		return nil
	case '}', '#':
		return nil
	}
	return p.errf("extra characters after command")
}

func (p *sedParser) readLabel() string {
	st := p.pos
	for p.more() && p.s[p.pos] != '\n' && p.s[p.pos] != ';' {
		p.pos++
	}
	return strings.TrimRight(p.s[st:p.pos], " \t")
}

func (p *sedParser) readToEOL() string {
	st := p.pos
	for p.more() && p.s[p.pos] != '\n' {
		p.pos++
	}
	s := p.s[st:p.pos]
	if p.more() {
		p.pos++
	}
	return s
}

// readText reads the text of a, i or c (GNU one-liner and classic forms).
func (p *sedParser) readText() (string, error) {
	p.skipSpace()
	if p.peek() == '\\' {
		p.pos++
		if p.peek() == '\n' {
			p.pos++
		}
	} else if !p.more() || p.peek() == '\n' {
		return "", p.errf("expected \\ after `a', `c' or `i'")
	}
	var sb strings.Builder
	start := p.pos
	for p.more() {
		ch := p.s[p.pos]
		if ch == '\n' {
			p.pos++
			break
		}
		if ch == '\\' {
			p.pos++
			if !p.more() {
				break
			}
			e := p.s[p.pos]
			p.pos++
			switch e {
			case '\n':
				sb.WriteByte('\n')
			default:
				if r, ok := sedTextEscape(e); ok {
					sb.WriteByte(r)
				} else {
					sb.WriteByte(e)
				}
			}
			continue
		}
		sb.WriteByte(ch)
		p.pos++
	}
	// The text keeps its newline; "i\" at the very end inserts nothing.
	if p.pos > start {
		sb.WriteByte('\n')
	}
	return sb.String(), nil
}

func sedTextEscape(e byte) (byte, bool) {
	switch e {
	case 't':
		return '\t', true
	case 'n':
		return '\n', true
	case 'a':
		return '\a', true
	case 'f':
		return '\f', true
	case 'v':
		return '\v', true
	case 'r':
		return '\r', true
	}
	return 0, false
}

// parseAddr parses an address, or returns nil when there is none.
func (p *sedParser) parseAddr(first bool) (*sedAddr, error) {
	if !p.more() {
		return nil, nil
	}
	ch := p.s[p.pos]
	switch {
	case ch >= '0' && ch <= '9':
		n := p.readNum()
		if p.peek() == '~' && first {
			p.pos++
			step := p.readNum()
			return &sedAddr{kind: sedAddrStep, n: n, step: step}, nil
		}
		if n == 0 {
			if !first {
				return nil, p.errf("invalid usage of line address 0")
			}
			return &sedAddr{kind: sedAddrZero}, nil
		}
		return &sedAddr{kind: sedAddrLine, n: n}, nil
	case ch == '$':
		p.pos++
		return &sedAddr{kind: sedAddrLast}, nil
	case (ch == '+' || ch == '~') && !first:
		p.pos++
		if p.peek() < '0' || p.peek() > '9' {
			return nil, p.errf("expected newer version of sed")
		}
		n := p.readNum()
		if ch == '+' {
			return &sedAddr{kind: sedAddrPlus, n: n}, nil
		}
		return &sedAddr{kind: sedAddrTilde, n: n}, nil
	case ch == '/' || ch == '\\':
		p.pos++
		delim := byte('/')
		if ch == '\\' {
			if !p.more() {
				return nil, p.errf("unexpected end of file")
			}
			delim = p.s[p.pos]
			p.pos++
		}
		raw, ok := p.readDelimited(delim, true)
		if !ok {
			return nil, p.errf("unterminated address regex")
		}
		var fl reMatchFlags
		for p.more() && (p.peek() == 'I' || p.peek() == 'M') {
			if p.peek() == 'I' {
				fl.icase = true
			} else {
				fl.multiline = true
			}
			p.pos++
		}
		re, err := p.compile(raw, fl)
		if err != nil {
			return nil, err
		}
		return &sedAddr{kind: sedAddrRE, re: re}, nil
	}
	return nil, nil
}

func (p *sedParser) readNum() int64 {
	st := p.pos
	for p.more() && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		p.pos++
	}
	n, err := strconv.ParseInt(p.s[st:p.pos], 10, 64)
	if err != nil {
		n = 1<<63 - 1
	}
	return n
}

// readDelimited reads up to an unescaped delim. "\delim" becomes delim;
// "\n" stays an escape for the regex layer; a newline ends it unless
// escaped. In a regex, a bracket expression may hold the delimiter.
func (p *sedParser) readDelimited(delim byte, regex bool) (string, bool) {
	var sb strings.Builder
	for p.more() {
		ch := p.s[p.pos]
		switch {
		case ch == '\\':
			if p.pos+1 >= len(p.s) {
				return "", false
			}
			nx := p.s[p.pos+1]
			p.pos += 2
			switch {
			case nx == delim && delim != '\n':
				sb.WriteByte(delim)
			case nx == '\n':
				sb.WriteString(`\n`)
			default:
				sb.WriteByte('\\')
				sb.WriteByte(nx)
			}
		case ch == delim:
			p.pos++
			return sb.String(), true
		case ch == '\n' && regex:
			return "", false
		case ch == '[' && regex:
			end := sedBracketEnd(p.s, p.pos)
			if end < 0 {
				// GNU sed reads an unclosed bracket to the end of the
				// line, so the delimiter is never found.
				if nl := strings.IndexByte(p.s[p.pos:], '\n'); nl >= 0 {
					p.pos += nl
				} else {
					p.pos = len(p.s)
				}
				return "", false
			}
			sb.WriteString(p.s[p.pos:end])
			p.pos = end
		default:
			sb.WriteByte(ch)
			p.pos++
		}
	}
	return "", false
}

// sedBracketEnd returns the index after the bracket expression starting at
// s[i] == '[', or -1 when it is not terminated on this line.
func sedBracketEnd(s string, i int) int {
	j := i + 1
	if j < len(s) && s[j] == '^' {
		j++
	}
	if j < len(s) && s[j] == ']' {
		j++
	}
	for j < len(s) && s[j] != '\n' {
		switch {
		case s[j] == ']':
			return j + 1
		case s[j] == '[' && j+1 < len(s) && strings.IndexByte(":.=", s[j+1]) >= 0:
			end := strings.Index(s[j+2:], string(s[j+1])+"]")
			if end < 0 {
				return -1
			}
			j += 2 + end + 2
		default:
			j++
		}
	}
	return -1
}

func (p *sedParser) compile(raw string, fl reMatchFlags) (*sedRegex, error) {
	if raw == "" {
		return &sedRegex{empty: true}, nil
	}
	fl.dotNL = true
	re, _, err := reCompilePosix(raw, reSyntaxOpts{ere: p.ere, sedEsc: true}, fl)
	if err != nil {
		return nil, p.errf("%s", err)
	}
	return &sedRegex{re: re}, nil
}

func (p *sedParser) parseSubst(c *sedCmd) error {
	if !p.more() || p.peek() == '\n' || p.peek() == '\\' {
		return p.errf("unterminated `s' command")
	}
	delim := p.s[p.pos]
	p.pos++
	raw, ok := p.readDelimited(delim, true)
	if !ok {
		return p.errf("unterminated `s' command")
	}
	repl, ok := p.readRepl(delim)
	if !ok {
		return p.errf("unterminated `s' command")
	}
	var fl reMatchFlags
	for p.more() {
		ch := p.s[p.pos]
		switch {
		case ch == 'g':
			if c.global {
				return p.errf("multiple `g' options to `s' command")
			}
			c.global = true
		case ch == 'p':
			if c.print > 0 {
				return p.errf("multiple `p' options to `s' command")
			}
			c.print++
		case ch == 'i' || ch == 'I':
			fl.icase = true
		case ch == 'm' || ch == 'M':
			fl.multiline = true
		case ch == 'e':
			return &sedUnsupported{"the s///e flag"}
		case ch >= '0' && ch <= '9':
			if c.nth > 0 {
				return p.errf("multiple number options to `s' command")
			}
			n := p.readNum()
			if n == 0 {
				return p.errf("number option to `s' command may not be zero")
			}
			c.nth = int(min(n, 1<<30))
			continue
		case ch == 'w':
			p.pos++
			p.skipSpace()
			c.wfile = p.readToEOL()
			if c.wfile == "" {
				return p.errf("missing filename in r/R/w/W commands")
			}
			if p.sandbox {
				return p.errf("e/r/w commands disabled in sandbox mode")
			}
			goto done
		case ch == ';' || ch == '\n' || ch == ' ' || ch == '\t' || ch == '}' || ch == '#':
			goto done
		default:
			return p.errf("unknown option to `s'")
		}
		p.pos++
	}
done:
	re, err := p.compile(raw, fl)
	if err != nil {
		return err
	}
	c.re = re
	if !re.empty {
		for _, r := range repl {
			if r.group > re.re.ngroups {
				return p.errf("invalid reference \\%d on `s' command's RHS", r.group)
			}
		}
	}
	c.repl = repl
	return nil
}

// readRepl reads an s replacement up to delim.
func (p *sedParser) readRepl(delim byte) ([]sedRepl, bool) {
	var out []sedRepl
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, sedRepl{lit: lit.String(), group: -1})
			lit.Reset()
		}
	}
	for p.more() {
		ch := p.s[p.pos]
		p.pos++
		switch {
		case ch == delim:
			flush()
			return out, true
		case ch == '&':
			flush()
			out = append(out, sedRepl{group: 0})
		case ch == '\n':
			return nil, false
		case ch == '\\':
			if !p.more() {
				return nil, false
			}
			e := p.s[p.pos]
			p.pos++
			switch {
			case e == delim:
				lit.WriteByte(e)
			case e >= '0' && e <= '9':
				flush()
				out = append(out, sedRepl{group: int(e - '0')})
			case e == '&':
				lit.WriteByte('&')
			case e == '\n':
				lit.WriteByte('\n')
			case e == 'U' || e == 'L' || e == 'u' || e == 'l' || e == 'E':
				flush()
				out = append(out, sedRepl{group: -1, conv: e})
			case e == 'c' && p.more():
				x := p.s[p.pos]
				p.pos++
				lit.WriteByte(byte(sedUpperASCII(x)) ^ 0x40)
			case e == 'x' || e == 'o' || e == 'd':
				rp := &reASTParser{s: p.s, pos: p.pos}
				if r, ok := rp.sedEscape(e); ok {
					p.pos = rp.pos
					lit.WriteRune(r)
				} else {
					lit.WriteByte(e)
				}
			default:
				if r, ok := sedTextEscape(e); ok {
					lit.WriteByte(r)
				} else {
					lit.WriteByte(e)
				}
			}
		default:
			lit.WriteByte(ch)
		}
	}
	return nil, false
}

func sedUpperASCII(b byte) byte {
	if b >= 'a' && b <= 'z' {
		return b - 32
	}
	return b
}

func (p *sedParser) parseY(c *sedCmd) error {
	if !p.more() || p.peek() == '\n' || p.peek() == '\\' {
		return p.errf("unterminated `y' command")
	}
	delim := p.s[p.pos]
	p.pos++
	src, ok1 := p.readY(delim)
	dst, ok2 := p.readY(delim)
	if !ok1 || !ok2 {
		return p.errf("unterminated `y' command")
	}
	if utf8.RuneCountInString(src) != utf8.RuneCountInString(dst) {
		return p.errf("strings for `y' command are different lengths")
	}
	c.ymap = map[rune]rune{}
	d := []rune(dst)
	for i, r := range []rune(src) {
		c.ymap[r] = d[i]
	}
	return nil
}

func (p *sedParser) readY(delim byte) (string, bool) {
	var sb strings.Builder
	for p.more() {
		ch := p.s[p.pos]
		p.pos++
		switch ch {
		case delim:
			return sb.String(), true
		case '\\':
			if !p.more() {
				return "", false
			}
			e := p.s[p.pos]
			p.pos++
			switch {
			case e == delim:
				sb.WriteByte(e)
			case e == '\\':
				sb.WriteByte('\\')
			case e == '\n':
				sb.WriteByte('\n')
			default:
				if r, ok := sedTextEscape(e); ok {
					sb.WriteByte(r)
				} else {
					sb.WriteByte('\\')
					sb.WriteByte(e)
				}
			}
		default:
			sb.WriteByte(ch)
		}
	}
	return "", false
}
