package awk

import "fmt"

// Special variables occupy the first global slots.
const (
	vNF = iota
	vNR
	vFNR
	vFS
	vOFS
	vORS
	vRS
	vFILENAME
	vSUBSEP
	vRSTART
	vRLENGTH
	vCONVFMT
	vOFMT
	vARGC
	vENVIRON
	vARGV
	numSpecial
)

var specialNames = []string{"NF", "NR", "FNR", "FS", "OFS", "ORS", "RS", "FILENAME", "SUBSEP",
	"RSTART", "RLENGTH", "CONVFMT", "OFMT", "ARGC", "ENVIRON", "ARGV"}

type parser struct {
	toks  []token
	pos   int
	prog  *program
	fn    *funcDef       // function being parsed, nil at top level
	local map[string]int // its parameters
	calls []*callExpr
	// noGt and noPipe are set while parsing a print's unparenthesized
	// argument list, where > and | are redirections.
	noGt, noPipe bool
	noIn         bool // in a for (...) init, "in" would be ambiguous
	loops        int
	inBeginEnd   bool
}

// parse parses a whole program.
func parse(src string) (*program, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, prog: &program{funcs: map[string]*funcDef{}, globals: map[string]int{}, arrays: map[string]bool{}, scalars: map[string][]int{}}}
	for i, n := range specialNames {
		p.prog.globals[n] = i
	}
	p.prog.arrays["ENVIRON"], p.prog.arrays["ARGV"] = true, true
	if err := p.catch(p.program); err != nil {
		return nil, err
	}
	if err := p.resolve(); err != nil {
		return nil, err
	}
	return p.prog, nil
}

type parseError struct{ err error }

// catch runs f, turning a parse panic into an error. The parser panics
// on the first syntax error to keep the recursive descent readable.
func (p *parser) catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(parseError)
			if !ok {
				panic(r)
			}
			err = pe.err
		}
	}()
	f()
	return nil
}

func (p *parser) fail(format string, args ...any) {
	panic(parseError{&SyntaxError{Line: p.tok().line, Msg: fmt.Sprintf(format, args...)}})
}

func (p *parser) tok() token { return p.toks[p.pos] }
func (p *parser) kind() tok  { return p.toks[p.pos].kind }
func (p *parser) peek(n int) tok {
	if p.pos+n < len(p.toks) {
		return p.toks[p.pos+n].kind
	}
	return tEOF
}
func (p *parser) advance() token { t := p.toks[p.pos]; p.pos++; return t }

func (p *parser) expect(k tok, what string) token {
	if p.kind() != k {
		p.syntaxErr(what)
	}
	return p.advance()
}

func (p *parser) syntaxErr(want string) {
	t := p.tok()
	switch t.kind {
	case tEOF:
		p.fail("syntax error at end of program (expected %s)", want)
	case tNewline:
		p.fail("syntax error at newline (expected %s)", want)
	}
	p.fail("syntax error at or near %s", tokText(t))
}

func tokText(t token) string {
	if t.text != "" {
		return t.text
	}
	for s, k := range twoCharOps {
		if k == t.kind {
			return s
		}
	}
	for c, k := range oneCharOps {
		if k == t.kind {
			return string(c)
		}
	}
	return fmt.Sprintf("token %d", t.kind)
}

func (p *parser) optNewlines() {
	for p.kind() == tNewline {
		p.advance()
	}
}

func (p *parser) terminators() {
	for p.kind() == tNewline || p.kind() == tSemi {
		p.advance()
	}
}

func (p *parser) program() {
	p.optNewlines()
	for p.kind() != tEOF {
		switch p.kind() {
		case tBEGIN:
			p.advance()
			p.inBeginEnd = true
			p.prog.begins = append(p.prog.begins, p.block())
			p.inBeginEnd = false
		case tEND:
			p.advance()
			p.inBeginEnd = true
			p.prog.ends = append(p.prog.ends, p.block())
			p.inBeginEnd = false
		case tFunction:
			p.function()
		default:
			it := &item{}
			if p.kind() != tLbrace {
				it.pattern = p.expr()
				if p.kind() == tComma {
					p.advance()
					p.optNewlines()
					it.end = p.expr()
				}
			}
			if p.kind() == tLbrace {
				it.body, it.hasBody = p.block(), true
			}
			p.prog.items = append(p.prog.items, it)
			if !it.hasBody {
				if k := p.kind(); k != tNewline && k != tSemi && k != tEOF {
					p.syntaxErr("newline or ;")
				}
			}
		}
		if k := p.toks[p.pos-1].kind; k != tRbrace && p.kind() != tNewline && p.kind() != tSemi && p.kind() != tEOF {
			p.syntaxErr("newline or ;")
		}
		// mawk takes one ; between items, and any newlines
		if p.kind() == tSemi {
			p.advance()
		}
		p.optNewlines()
	}
}

func (p *parser) function() {
	p.advance()
	var name string
	switch p.kind() {
	case tName, tFuncName:
		name = p.advance().text
	default:
		p.syntaxErr("function name")
	}
	if _, dup := p.prog.funcs[name]; dup {
		p.fail("function %s redefined", name)
	}
	fd := &funcDef{name: name}
	p.prog.funcs[name] = fd
	p.expect(tLparen, "(")
	p.local = map[string]int{}
	for p.kind() != tRparen {
		t := p.expect(tName, "parameter name")
		p.local[t.text] = len(fd.params)
		fd.params = append(fd.params, t.text)
		if p.kind() == tComma {
			p.advance()
			p.optNewlines()
		} else if p.kind() != tRparen {
			p.syntaxErr(")")
		}
	}
	p.advance()
	fd.isArray = make([]bool, len(fd.params))
	p.fn = fd
	p.optNewlines()
	fd.body = p.block()
	fd.nlocals = len(fd.params)
	p.fn, p.local = nil, nil
}

func (p *parser) block() []stmt {
	p.expect(tLbrace, "{")
	var body []stmt
	p.terminators()
	for p.kind() != tRbrace {
		if p.kind() == tEOF {
			p.syntaxErr("}")
		}
		body = append(body, p.stmt())
		p.terminators()
	}
	p.advance()
	return body
}

// endSimple consumes the end of a simple statement.
func (p *parser) endSimple() {
	switch p.kind() {
	case tSemi, tNewline:
		p.advance()
		p.optNewlines()
	case tRbrace, tEOF:
	default:
		p.syntaxErr("; or newline")
	}
}

// bodyStmt parses the statement of an if/while/for, possibly empty (";").
func (p *parser) bodyStmt() []stmt {
	p.optNewlines()
	if p.kind() == tSemi {
		p.advance()
		p.optNewlines()
		return nil
	}
	s := p.stmt()
	if b, ok := s.(*blockStmt); ok {
		return b.body
	}
	return []stmt{s}
}

func (p *parser) stmt() stmt {
	switch p.kind() {
	case tLbrace:
		body := p.block()
		return &blockStmt{body}
	case tIf:
		p.advance()
		p.expect(tLparen, "(")
		cond := p.expr()
		p.expect(tRparen, ")")
		s := &ifStmt{cond: cond, yes: p.bodyStmt()}
		// look past terminators for else
		save := p.pos
		p.terminators()
		if p.kind() == tElse {
			p.advance()
			s.no = p.bodyStmt()
		} else {
			p.pos = save
		}
		return s
	case tWhile:
		p.advance()
		p.expect(tLparen, "(")
		cond := p.expr()
		p.expect(tRparen, ")")
		p.loops++
		body := p.bodyStmt()
		p.loops--
		return &whileStmt{cond: cond, body: body}
	case tDo:
		p.advance()
		p.loops++
		body := p.bodyStmt()
		p.loops--
		p.terminators()
		p.expect(tWhile, "while")
		p.expect(tLparen, "(")
		cond := p.expr()
		p.expect(tRparen, ")")
		p.endSimple()
		return &doStmt{body: body, cond: cond}
	case tFor:
		return p.forStmt()
	case tSemi:
		p.advance()
		return &blockStmt{}
	}
	s := p.simpleStmt()
	p.endSimple()
	return s
}

func (p *parser) forStmt() stmt {
	p.advance()
	p.expect(tLparen, "(")
	// for (name in array)
	if p.kind() == tName && p.peek(1) == tIn && (p.peek(2) == tName) && p.peek(3) == tRparen {
		v := p.varRef(p.advance().text)
		p.advance()
		arr := p.arrRef(p.advance().text)
		p.advance()
		p.loops++
		body := p.bodyStmt()
		p.loops--
		return &forInStmt{v: v, arr: arr, body: body}
	}
	if p.kind() == tLparen && p.peek(1) == tName && p.peek(2) == tIn && p.peek(3) == tName && p.peek(4) == tRparen && p.peek(5) == tRparen {
		p.advance()
		v := p.varRef(p.advance().text)
		p.advance()
		arr := p.arrRef(p.advance().text)
		p.advance()
		p.advance()
		p.loops++
		body := p.bodyStmt()
		p.loops--
		return &forInStmt{v: v, arr: arr, body: body}
	}
	s := &forStmt{}
	if p.kind() != tSemi {
		s.init = p.simpleStmt()
	}
	p.expect(tSemi, ";")
	p.optNewlines()
	if p.kind() != tSemi {
		s.cond = p.expr()
	}
	p.expect(tSemi, ";")
	p.optNewlines()
	if p.kind() != tRparen {
		s.post = p.simpleStmt()
	}
	p.expect(tRparen, ")")
	p.loops++
	s.body = p.bodyStmt()
	p.loops--
	return s
}

func (p *parser) isEndOfSimple() bool {
	switch p.kind() {
	case tSemi, tNewline, tRbrace, tEOF:
		return true
	}
	return false
}

func (p *parser) simpleStmt() stmt {
	switch p.kind() {
	case tPrint, tPrintf:
		return p.printStmt()
	case tBreak, tContinue:
		k := p.advance().kind
		if p.loops == 0 {
			p.fail("%s statement outside of loop", map[tok]string{tBreak: "break", tContinue: "continue"}[k])
		}
		if k == tBreak {
			return &breakStmt{}
		}
		return &continueStmt{}
	case tNext:
		p.advance()
		if p.fn != nil || p.inBeginEnd {
			p.fail("improper use of next")
		}
		return &nextStmt{}
	case tNextfile:
		p.advance()
		if p.fn != nil || p.inBeginEnd {
			p.fail("improper use of nextfile")
		}
		return &nextfileStmt{}
	case tExit:
		p.advance()
		s := &exitStmt{}
		if !p.isEndOfSimple() {
			s.e = p.expr()
		}
		return s
	case tReturn:
		p.advance()
		if p.fn == nil {
			p.fail("return outside function body")
		}
		s := &returnStmt{}
		if !p.isEndOfSimple() {
			s.e = p.expr()
		}
		return s
	case tDelete:
		p.advance()
		name := p.expect(tName, "array name").text
		arr := p.arrRef(name)
		s := &deleteStmt{arr: arr}
		if p.kind() == tLbracket {
			p.advance()
			s.index = p.exprList(tRbracket)
			p.expect(tRbracket, "]")
		}
		return s
	}
	return &exprStmt{p.expr()}
}

func (p *parser) printStmt() stmt {
	s := &printStmt{printf: p.advance().kind == tPrintf}
	if !p.isEndOfSimple() && p.kind() != tGreater && p.kind() != tAppend && p.kind() != tPipe {
		saveGt, savePipe := p.noGt, p.noPipe
		p.noGt, p.noPipe = true, true
		s.args = p.exprList(tEOF)
		p.noGt, p.noPipe = saveGt, savePipe
		if len(s.args) == 1 {
			if g, ok := s.args[0].(*groupExpr); ok {
				s.args = g.exprs
			}
		}
	}
	if s.printf && len(s.args) == 0 {
		p.syntaxErr("printf format")
	}
	switch p.kind() {
	case tGreater, tAppend, tPipe:
		s.redir = p.advance().kind
		saveGt, savePipe := p.noGt, p.noPipe
		p.noGt, p.noPipe = true, true
		s.dest = p.concat()
		p.noGt, p.noPipe = saveGt, savePipe
	}
	return s
}

// exprList parses comma-separated expressions.
func (p *parser) exprList(end tok) []expr {
	var list []expr
	for {
		list = append(list, p.expr())
		if p.kind() != tComma {
			return list
		}
		p.advance()
		p.optNewlines()
	}
}

func (p *parser) varRef(name string) *varRef {
	if p.local != nil {
		if i, ok := p.local[name]; ok {
			return &varRef{local: true, idx: i, name: name}
		}
	}
	if _, ok := p.prog.funcs[name]; ok && p.fn != nil && p.fn.name == name {
		p.fail("function name %s used as a variable", name)
	}
	p.prog.scalars[name] = append(p.prog.scalars[name], p.tok().line)
	return &varRef{idx: p.global(name), name: name}
}

func (p *parser) arrRef(name string) *arrRef {
	if p.local != nil {
		if i, ok := p.local[name]; ok {
			p.fn.isArray[i] = true
			return &arrRef{local: true, idx: i, name: name}
		}
	}
	p.prog.arrays[name] = true
	return &arrRef{idx: p.global(name), name: name}
}

func (p *parser) global(name string) int {
	if i, ok := p.prog.globals[name]; ok {
		return i
	}
	i := len(p.prog.globals)
	p.prog.globals[name] = i
	return i
}
