package awk

import (
	"fmt"
	"strings"
)

// tok is a lexical token kind.
type tok int

const (
	tEOF tok = iota
	tNewline
	tNumber
	tString
	tRegex
	tName
	tFuncName // a name immediately followed by "(": a call
	tBuiltin  // a built-in function name
	// keywords
	tBEGIN
	tEND
	tFunction
	tIf
	tElse
	tWhile
	tFor
	tDo
	tBreak
	tContinue
	tNext
	tNextfile
	tExit
	tReturn
	tDelete
	tGetline
	tPrint
	tPrintf
	tIn
	// punctuation and operators
	tLbrace
	tRbrace
	tLparen
	tRparen
	tLbracket
	tRbracket
	tSemi
	tComma
	tPlus
	tMinus
	tStar
	tSlash
	tPercent
	tCaret
	tNot
	tGreater
	tLess
	tPipe
	tQuestion
	tColon
	tTilde
	tNoMatch
	tDollar
	tIncr
	tDecr
	tAssign
	tAddAssign
	tSubAssign
	tMulAssign
	tDivAssign
	tModAssign
	tPowAssign
	tEq
	tNe
	tLe
	tGe
	tAnd
	tOr
	tAppend // >>
)

var keywords = map[string]tok{
	"BEGIN": tBEGIN, "END": tEND, "function": tFunction,
	"if": tIf, "else": tElse, "while": tWhile, "for": tFor, "do": tDo,
	"break": tBreak, "continue": tContinue, "next": tNext, "nextfile": tNextfile,
	"exit": tExit, "return": tReturn, "delete": tDelete, "getline": tGetline,
	"print": tPrint, "printf": tPrintf, "in": tIn,
}

var builtins = map[string]bool{
	"length": true, "substr": true, "index": true, "split": true, "sub": true,
	"gsub": true, "match": true, "sprintf": true, "sin": true, "cos": true,
	"atan2": true, "exp": true, "log": true, "sqrt": true, "int": true,
	"rand": true, "srand": true, "tolower": true, "toupper": true,
	"system": true, "close": true, "fflush": true,
}

// token is one lexed token with its source line.
type token struct {
	kind tok
	text string // name, string value (escapes processed), regex source, number text
	num  float64
	line int
}

// SyntaxError is a program that does not parse.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

type lexer struct {
	src  string
	pos  int
	line int
	last tok // previous significant token, for regex/division
	toks []token
}

// lex tokenizes a whole program.
func lex(src string) ([]token, error) {
	lx := &lexer{src: src, line: 1, last: tNewline}
	for {
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		lx.toks = append(lx.toks, t)
		lx.last = t.kind
		if t.kind == tEOF {
			return lx.toks, nil
		}
	}
}

func (lx *lexer) errorf(format string, args ...any) error {
	return &SyntaxError{Line: lx.line, Msg: fmt.Sprintf(format, args...)}
}

// regexAllowed reports whether a "/" here starts a regex rather than a division.
func (lx *lexer) regexAllowed() bool {
	switch lx.last {
	case tName, tNumber, tString, tRparen, tRbracket, tDollar, tIncr, tDecr, tBuiltin, tRegex:
		return false
	}
	return true
}

func (lx *lexer) next() (token, error) {
	// skip blanks, comments and escaped newlines
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			lx.pos++
		case c == '\\' && lx.pos+1 < len(lx.src) && lx.src[lx.pos+1] == '\n':
			lx.pos += 2
			lx.line++
		case c == '\\' && lx.pos+2 < len(lx.src) && lx.src[lx.pos+1] == '\r' && lx.src[lx.pos+2] == '\n':
			lx.pos += 3
			lx.line++
		case c == '#':
			for lx.pos < len(lx.src) && lx.src[lx.pos] != '\n' {
				lx.pos++
			}
		default:
			goto done
		}
	}
done:
	t := token{line: lx.line}
	if lx.pos >= len(lx.src) {
		t.kind = tEOF
		return t, nil
	}
	c := lx.src[lx.pos]
	switch {
	case c == '\n':
		lx.pos++
		lx.line++
		t.kind = tNewline
		return t, nil
	case isAlpha(c):
		start := lx.pos
		for lx.pos < len(lx.src) && (isAlpha(lx.src[lx.pos]) || isDigit(lx.src[lx.pos])) {
			lx.pos++
		}
		t.text = lx.src[start:lx.pos]
		if k, ok := keywords[t.text]; ok {
			t.kind = k
		} else if builtins[t.text] {
			t.kind = tBuiltin
		} else if lx.pos < len(lx.src) && lx.src[lx.pos] == '(' {
			t.kind = tFuncName
		} else {
			t.kind = tName
		}
		return t, nil
	case isDigit(c) || (c == '.' && lx.pos+1 < len(lx.src) && isDigit(lx.src[lx.pos+1])):
		return lx.number(t)
	case c == '"':
		return lx.str(t)
	case c == '/' && lx.regexAllowed():
		return lx.regex(t)
	}
	return lx.punct(t)
}

func isAlpha(c byte) bool { return c == '_' || (c|0x20) >= 'a' && (c|0x20) <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (lx *lexer) number(t token) (token, error) {
	start := lx.pos
	s := lx.src
	for lx.pos < len(s) && isDigit(s[lx.pos]) {
		lx.pos++
	}
	if lx.pos < len(s) && s[lx.pos] == '.' {
		lx.pos++
		for lx.pos < len(s) && isDigit(s[lx.pos]) {
			lx.pos++
		}
	}
	if lx.pos < len(s) && (s[lx.pos]|0x20) == 'e' {
		p := lx.pos + 1
		if p < len(s) && (s[p] == '+' || s[p] == '-') {
			p++
		}
		if p < len(s) && isDigit(s[p]) {
			for p < len(s) && isDigit(s[p]) {
				p++
			}
			lx.pos = p
		}
	}
	t.kind, t.text = tNumber, s[start:lx.pos]
	t.num, _ = strtod(t.text)
	return t, nil
}

func isHex(c byte) bool { return isDigit(c) || (c|0x20) >= 'a' && (c|0x20) <= 'f' }

func (lx *lexer) str(t token) (token, error) {
	lx.pos++ // opening quote
	var b strings.Builder
	for {
		if lx.pos >= len(lx.src) || lx.src[lx.pos] == '\n' {
			return t, lx.errorf("runaway string constant \"%.10s ...", b.String())
		}
		c := lx.src[lx.pos]
		if c == '"' {
			lx.pos++
			break
		}
		if c == '\\' && lx.pos+1 < len(lx.src) {
			lx.pos++
			if lx.src[lx.pos] == '\n' {
				lx.pos++
				lx.line++
				continue
			}
			lx.pos += unescape(&b, lx.src[lx.pos:], '"')
			continue
		}
		b.WriteByte(c)
		lx.pos++
	}
	t.kind, t.text = tString, b.String()
	return t, nil
}

// unescape writes the character for the escape sequence at the start of s
// (just after a backslash) and returns the bytes consumed.
func unescape(b *strings.Builder, s string, quote byte) int {
	c := s[0]
	switch c {
	case 'n':
		b.WriteByte('\n')
	case 't':
		b.WriteByte('\t')
	case 'r':
		b.WriteByte('\r')
	case '\\':
		b.WriteByte('\\')
	case '"':
		b.WriteByte('"')
	case 'a':
		b.WriteByte(7)
	case 'b':
		b.WriteByte(8)
	case 'f':
		b.WriteByte(12)
	case 'v':
		b.WriteByte(11)
	case '0', '1', '2', '3', '4', '5', '6', '7':
		n, i := 0, 0
		for i < 3 && i < len(s) && s[i] >= '0' && s[i] <= '7' {
			n = n*8 + int(s[i]-'0')
			i++
		}
		b.WriteByte(byte(n))
		return i
	default:
		// mawk keeps the backslash of an unknown escape.
		b.WriteByte('\\')
		b.WriteByte(c)
	}
	return 1
}

func (lx *lexer) regex(t token) (token, error) {
	lx.pos++
	var b strings.Builder
	inBracket := false
	for {
		if lx.pos >= len(lx.src) || lx.src[lx.pos] == '\n' {
			return t, lx.errorf("runaway regular expression /%.10s ...", b.String())
		}
		c := lx.src[lx.pos]
		if c == '/' && !inBracket {
			lx.pos++
			break
		}
		if c == '[' && !inBracket {
			inBracket = true
			b.WriteByte(c)
			lx.pos++
			// a ] right after [ or [^ is literal
			if lx.pos < len(lx.src) && lx.src[lx.pos] == '^' {
				b.WriteByte('^')
				lx.pos++
			}
			if lx.pos < len(lx.src) && lx.src[lx.pos] == ']' {
				b.WriteByte(']')
				lx.pos++
			}
			continue
		}
		if c == '[' && inBracket && lx.pos+1 < len(lx.src) && lx.src[lx.pos+1] == ':' {
			if end := strings.Index(lx.src[lx.pos+2:], ":]"); end >= 0 {
				b.WriteString(lx.src[lx.pos : lx.pos+4+end])
				lx.pos += 4 + end
				continue
			}
		}
		if c == ']' && inBracket {
			inBracket = false
		}
		if c == '\\' && lx.pos+1 < len(lx.src) {
			if lx.src[lx.pos+1] == '/' {
				b.WriteByte('/')
			} else {
				b.WriteString(lx.src[lx.pos : lx.pos+2])
			}
			lx.pos += 2
			continue
		}
		b.WriteByte(c)
		lx.pos++
	}
	t.kind, t.text = tRegex, b.String()
	return t, nil
}

func (lx *lexer) punct(t token) (token, error) {
	s := lx.src[lx.pos:]
	if len(s) >= 3 && s[:3] == "**=" {
		lx.pos += 3
		t.kind = tPowAssign
		return t, nil
	}
	if len(s) >= 2 {
		if k, ok := twoCharOps[s[:2]]; ok {
			lx.pos += 2
			t.kind = k
			return t, nil
		}
	}
	if k, ok := oneCharOps[s[0]]; ok {
		lx.pos++
		t.kind = k
		return t, nil
	}
	return t, lx.errorf("unexpected character '%c'", s[0])
}

var twoCharOps = map[string]tok{
	"++": tIncr, "--": tDecr, "+=": tAddAssign, "-=": tSubAssign, "*=": tMulAssign,
	"/=": tDivAssign, "%=": tModAssign, "^=": tPowAssign, "==": tEq, "!=": tNe,
	"<=": tLe, ">=": tGe, "&&": tAnd, "||": tOr, ">>": tAppend, "!~": tNoMatch,
	"**": tCaret,
}

var oneCharOps = map[byte]tok{
	'{': tLbrace, '}': tRbrace, '(': tLparen, ')': tRparen, '[': tLbracket, ']': tRbracket,
	';': tSemi, ',': tComma, '+': tPlus, '-': tMinus, '*': tStar, '/': tSlash, '%': tPercent,
	'^': tCaret, '!': tNot, '>': tGreater, '<': tLess, '|': tPipe, '?': tQuestion,
	':': tColon, '~': tTilde, '$': tDollar, '=': tAssign,
}
