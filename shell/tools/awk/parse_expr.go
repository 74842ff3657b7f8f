package awk

// Expression grammar, lowest precedence first: assignment, ?:, ||, &&,
// in, ~ !~, comparison, concatenation (and "cmd | getline"), + -, * / %,
// unary + - !, ^, ++ -- $, grouping.

func (p *parser) expr() expr { return p.ternary() }

func isLvalue(e expr) bool {
	switch e.(type) {
	case *varRef, *indexExpr, *fieldExpr:
		return true
	}
	return false
}

func (p *parser) ternary() expr {
	cond := p.or()
	switch k := p.kind(); k {
	case tQuestion:
		p.advance()
		p.optNewlines()
		yes := p.ternary()
		p.optNewlines()
		p.expect(tColon, ":")
		p.optNewlines()
		no := p.ternary()
		return &condExpr{cond, yes, no}
	case tAssign, tAddAssign, tSubAssign, tMulAssign, tDivAssign, tModAssign, tPowAssign:
		if !isLvalue(cond) {
			return cond
		}
		p.advance()
		p.optNewlines()
		return &assignExpr{lhs: cond, op: k, rhs: p.ternary()}
	}
	return cond
}

func (p *parser) or() expr {
	l := p.and()
	for p.kind() == tOr {
		p.advance()
		p.optNewlines()
		l = &binExpr{op: tOr, l: l, r: p.and()}
	}
	return l
}

func (p *parser) and() expr {
	l := p.in()
	for p.kind() == tAnd {
		p.advance()
		p.optNewlines()
		l = &binExpr{op: tAnd, l: l, r: p.in()}
	}
	return l
}

func (p *parser) in() expr {
	l := p.match()
	for p.kind() == tIn && !p.noIn {
		p.advance()
		arr := p.arrRef(p.expect(tName, "array name").text)
		idx := []expr{l}
		if g, ok := l.(*groupExpr); ok {
			idx = g.exprs
		}
		l = &inExpr{index: idx, arr: arr}
	}
	return l
}

func (p *parser) match() expr {
	l := p.compare()
	for p.kind() == tTilde || p.kind() == tNoMatch {
		neg := p.advance().kind == tNoMatch
		l = &matchExpr{l: l, re: p.compare(), neg: neg}
	}
	return l
}

func (p *parser) compare() expr {
	l := p.concat()
	switch k := p.kind(); k {
	case tLess, tLe, tNe, tEq, tGe:
		p.advance()
		return &binExpr{op: k, l: l, r: p.concat()}
	case tGreater:
		if p.noGt {
			return l
		}
		p.advance()
		return &binExpr{op: k, l: l, r: p.concat()}
	}
	return l
}

// startsConcat reports whether the current token can begin a
// concatenation operand (anything but + and -, which would be binary).
func (p *parser) startsConcat() bool {
	switch p.kind() {
	case tNumber, tString, tRegex, tName, tFuncName, tBuiltin, tDollar, tLparen, tIncr, tDecr:
		return true
	case tIn:
		return false
	}
	return false
}

// concat parses a concatenation. In mawk "cmd | getline" binds tighter
// than concatenation: "echo " x | getline runs x.
func (p *parser) concat() expr {
	l := p.pipeGetline(p.additive())
	for p.startsConcat() {
		l = &binExpr{op: tString, l: l, r: p.pipeGetline(p.additive())}
	}
	return l
}

func (p *parser) pipeGetline(l expr) expr {
	for p.kind() == tPipe && p.peek(1) == tGetline && !p.noPipe {
		p.advance()
		p.advance()
		g := &getlineExpr{kind: getCmd, src: l}
		g.lhs = p.optLvalue()
		l = g
	}
	return l
}

func (p *parser) additive() expr {
	l := p.mul()
	for p.kind() == tPlus || p.kind() == tMinus {
		op := p.advance().kind
		l = &binExpr{op: op, l: l, r: p.mul()}
	}
	return l
}

func (p *parser) mul() expr {
	l := p.unary()
	for p.kind() == tStar || p.kind() == tSlash || p.kind() == tPercent {
		op := p.advance().kind
		l = &binExpr{op: op, l: l, r: p.unary()}
	}
	return l
}

func (p *parser) unary() expr {
	switch k := p.kind(); k {
	case tNot:
		p.advance()
		return &unaryExpr{op: k, e: p.unary()}
	case tMinus, tPlus:
		p.advance()
		return &unaryExpr{op: k, e: p.unary()}
	}
	return p.pow()
}

func (p *parser) pow() expr {
	l := p.postfix()
	if p.kind() == tCaret {
		p.advance()
		// right associative; the exponent may carry a unary sign
		var r expr
		if p.kind() == tMinus || p.kind() == tPlus || p.kind() == tNot {
			k := p.advance().kind
			r = &unaryExpr{op: k, e: p.powOperand()}
		} else {
			r = p.powOperand()
		}
		return &binExpr{op: tCaret, l: l, r: r}
	}
	return l
}

func (p *parser) powOperand() expr {
	if p.kind() == tMinus || p.kind() == tPlus || p.kind() == tNot {
		k := p.advance().kind
		return &unaryExpr{op: k, e: p.powOperand()}
	}
	return p.pow()
}

func (p *parser) postfix() expr {
	if p.kind() == tIncr || p.kind() == tDecr {
		d := 1.0
		if p.advance().kind == tDecr {
			d = -1
		}
		e := p.postfix()
		if !isLvalue(e) {
			p.syntaxErr("lvalue")
		}
		return &incrExpr{lhs: e, pre: true, delta: d}
	}
	e := p.primary()
	if isLvalue(e) && (p.kind() == tIncr || p.kind() == tDecr) {
		d := 1.0
		if p.advance().kind == tDecr {
			d = -1
		}
		return &incrExpr{lhs: e, delta: d}
	}
	return e
}

// optLvalue parses the variable after getline, if any.
func (p *parser) optLvalue() expr {
	switch p.kind() {
	case tName:
		return p.nameExpr()
	case tDollar:
		p.advance()
		return &fieldExpr{index: p.dollarOperand()}
	}
	return nil
}

func (p *parser) dollarOperand() expr {
	switch p.kind() {
	case tIncr, tDecr, tMinus, tPlus, tNot:
		return p.unary()
	}
	return p.primary()
}

func (p *parser) nameExpr() expr {
	name := p.advance().text
	if p.kind() == tLbracket {
		p.advance()
		idx := p.exprList(tRbracket)
		p.expect(tRbracket, "]")
		return &indexExpr{arr: p.arrRef(name), index: idx}
	}
	return p.varRef(name)
}

func (p *parser) primary() expr {
	t := p.tok()
	switch t.kind {
	case tNumber:
		p.advance()
		return &numLit{num(t.num)}
	case tString:
		p.advance()
		return &strLit{str(t.text)}
	case tRegex:
		p.advance()
		re, err := compileERE(t.text)
		if err != nil {
			p.fail("regular expression compile failed (%s)\n%s", err, t.text)
		}
		return &regexLit{re: re, src: t.text}
	case tDollar:
		p.advance()
		return &fieldExpr{index: p.dollarOperand()}
	case tName:
		return p.nameExpr()
	case tFuncName:
		p.advance()
		p.advance() // (
		c := &callExpr{name: t.text, line: t.line, caller: p.fn}
		p.optNewlines()
		if p.kind() != tRparen {
			c.args = p.argList()
		}
		p.expect(tRparen, ")")
		p.calls = append(p.calls, c)
		return c
	case tBuiltin:
		return p.builtin()
	case tGetline:
		p.advance()
		g := &getlineExpr{kind: getPlain}
		g.lhs = p.optLvalue()
		if p.kind() == tLess {
			p.advance()
			g.kind = getFile
			g.src = p.getlineSource()
		}
		return g
	case tLparen:
		p.advance()
		saveGt, savePipe, saveIn := p.noGt, p.noPipe, p.noIn
		p.noGt, p.noPipe, p.noIn = false, false, false
		p.optNewlines()
		e := p.expr()
		if p.kind() == tComma {
			list := []expr{e}
			for p.kind() == tComma {
				p.advance()
				p.optNewlines()
				list = append(list, p.expr())
			}
			p.optNewlines()
			p.expect(tRparen, ")")
			p.noGt, p.noPipe, p.noIn = saveGt, savePipe, saveIn
			return &groupExpr{list}
		}
		p.optNewlines()
		p.expect(tRparen, ")")
		p.noGt, p.noPipe, p.noIn = saveGt, savePipe, saveIn
		return e
	case tMinus, tPlus, tNot:
		return p.unary()
	}
	p.syntaxErr("expression")
	return nil
}

func (p *parser) getlineSource() expr {
	switch p.kind() {
	case tIncr, tDecr, tMinus, tPlus, tNot:
		return p.unary()
	}
	e := p.primary()
	if isLvalue(e) && (p.kind() == tIncr || p.kind() == tDecr) {
		d := 1.0
		if p.advance().kind == tDecr {
			d = -1
		}
		return &incrExpr{lhs: e, delta: d}
	}
	return e
}

func (p *parser) argList() []expr {
	var list []expr
	for {
		list = append(list, p.expr())
		p.optNewlines()
		if p.kind() != tComma {
			return list
		}
		p.advance()
		p.optNewlines()
	}
}

func (p *parser) builtin() expr {
	name := p.advance().text
	b := &builtinExpr{name: name}
	if p.kind() != tLparen {
		if name == "length" {
			return b
		}
		p.syntaxErr("(")
	}
	p.advance()
	p.optNewlines()
	if p.kind() != tRparen {
		b.args = p.argList()
	}
	p.expect(tRparen, ")")
	n := len(b.args)
	bad := false
	switch name {
	case "length":
		bad = n > 1
		if n == 1 {
			if v, ok := b.args[0].(*varRef); ok && !v.local {
				p.unmarkScalar(v.name) // length(x) may take an array
			}
		}
	case "substr":
		bad = n < 2 || n > 3
	case "index", "atan2":
		bad = n != 2
	case "split":
		bad = n < 2 || n > 3
		if !bad {
			v, ok := b.args[1].(*varRef)
			if !ok {
				p.fail("split: second argument must be an array")
			}
			if !v.local {
				p.unmarkScalar(v.name)
			}
			b.args[1] = p.arrRef(v.name)
		}
	case "sub", "gsub":
		bad = n < 2 || n > 3
		if n == 3 && !isLvalue(b.args[2]) {
			p.fail("%s: third argument must be a variable", name)
		}
	case "match":
		bad = n != 2
	case "sprintf":
		bad = n == 0
	case "sin", "cos", "exp", "log", "sqrt", "int", "tolower", "toupper", "system":
		bad = n != 1
	case "rand":
		bad = n != 0
	case "srand", "fflush":
		bad = n > 1
	case "close":
		bad = n < 1 || n > 2
	}
	if bad {
		p.fail("wrong number of arguments in call to %s", name)
	}
	return b
}
