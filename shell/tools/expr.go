package tools

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"unicode/utf8"

	"rung.dev/rung/shell"
)

// expr: GNU expr 9.1 (arbitrary-precision integers, BRE ':' matching,
// match/substr/index/length, '+' quoting). Exit 0 when the result is
// neither empty nor 0, 1 when it is, 2 for invalid expressions, 3 for
// other errors.

type exprVal struct {
	s     string
	n     *big.Int // non-nil for integers
	isInt bool
}

func exprStr(s string) exprVal { return exprVal{s: s} }
func exprNum(n *big.Int) exprVal {
	return exprVal{n: n, isInt: true}
}

func (v exprVal) String() string {
	if v.isInt {
		return v.n.String()
	}
	return v.s
}

// toInt converts v when it looks like an integer ("-"? digits).
func (v exprVal) toInt() (*big.Int, bool) {
	if v.isInt {
		return v.n, true
	}
	s := v.s
	t := strings.TrimPrefix(s, "-")
	if t == "" || strings.Trim(t, "0123456789") != "" {
		return nil, false
	}
	n, ok := new(big.Int).SetString(s, 10)
	return n, ok
}

func (v exprVal) null() bool {
	if v.isInt {
		return v.n.Sign() == 0
	}
	s := strings.TrimPrefix(v.s, "-")
	if v.s == "" {
		return true
	}
	return s != "" && strings.Trim(s, "0") == ""
}

type exprErr struct {
	msg    string
	status int
}

func (e *exprErr) Error() string { return e.msg }

type exprParser struct {
	args []string
	i    int
}

func runExpr(ctx context.Context, c *shell.Call) int {
	args := c.Args[1:]
	if err := trueCheck(args); err != nil {
		return c.Fail("option " + args[0])
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return txUsageStatus(c, "missing operand", 2)
	}
	p := &exprParser{args: args}
	v, err := p.or(true)
	if err == nil && p.i < len(args) {
		err = &exprErr{"syntax error: unexpected argument " + txQuote(args[p.i]), 2}
	}
	if err != nil {
		var ee *exprErr
		if errors.As(err, &ee) {
			c.Errorf("%s", ee.msg)
			return ee.status
		}
		if errors.Is(err, errBREUnsupported) {
			return c.Fail("regular expression " + err.Error())
		}
		c.Errorf("%s", err)
		return 2
	}
	out := newTxOut(c.Stdout)
	out.WriteString(v.String())
	out.WriteByte('\n')
	if out.Flush() != nil {
		return 3
	}
	if v.null() {
		return 1
	}
	return 0
}

func (p *exprParser) peek() (string, bool) {
	if p.i < len(p.args) {
		return p.args[p.i], true
	}
	return "", false
}

func (p *exprParser) nextIs(ops ...string) (string, bool) {
	t, ok := p.peek()
	if !ok {
		return "", false
	}
	for _, o := range ops {
		if t == o {
			p.i++
			return t, true
		}
	}
	return "", false
}

func (p *exprParser) or(eval bool) (exprVal, error) {
	l, err := p.and(eval)
	for err == nil {
		if _, ok := p.nextIs("|"); !ok {
			break
		}
		var r exprVal
		r, err = p.and(eval && l.null())
		if eval && l.null() {
			l = r
			if l.null() {
				l = exprNum(big.NewInt(0))
			}
		}
	}
	return l, err
}

func (p *exprParser) and(eval bool) (exprVal, error) {
	l, err := p.cmp(eval)
	for err == nil {
		if _, ok := p.nextIs("&"); !ok {
			break
		}
		var r exprVal
		r, err = p.cmp(eval && !l.null())
		if eval && (l.null() || r.null()) {
			l = exprNum(big.NewInt(0))
		}
	}
	return l, err
}

func (p *exprParser) cmp(eval bool) (exprVal, error) {
	l, err := p.add(eval)
	for err == nil {
		op, ok := p.nextIs("<", "<=", "=", "==", "!=", ">=", ">")
		if !ok {
			break
		}
		var r exprVal
		if r, err = p.add(eval); err != nil {
			break
		}
		var c int
		a, aok := l.toInt()
		b, bok := r.toInt()
		if aok && bok {
			c = a.Cmp(b)
		} else {
			c = strings.Compare(l.String(), r.String())
		}
		res := map[string]bool{"<": c < 0, "<=": c <= 0, "=": c == 0, "==": c == 0, "!=": c != 0, ">=": c >= 0, ">": c > 0}[op]
		l = exprNum(big.NewInt(map[bool]int64{false: 0, true: 1}[res]))
	}
	return l, err
}

func (p *exprParser) arith(eval bool, l, r exprVal, op string) (exprVal, error) {
	if !eval {
		return exprNum(big.NewInt(0)), nil
	}
	a, aok := l.toInt()
	b, bok := r.toInt()
	if !aok || !bok {
		return exprVal{}, &exprErr{"non-integer argument", 2}
	}
	z := new(big.Int)
	switch op {
	case "+":
		z.Add(a, b)
	case "-":
		z.Sub(a, b)
	case "*":
		z.Mul(a, b)
	case "/", "%":
		if b.Sign() == 0 {
			return exprVal{}, &exprErr{"division by zero", 2}
		}
		if op == "/" {
			z.Quo(a, b)
		} else {
			z.Rem(a, b)
		}
	}
	return exprNum(z), nil
}

func (p *exprParser) add(eval bool) (exprVal, error) {
	l, err := p.mul(eval)
	for err == nil {
		op, ok := p.nextIs("+", "-")
		if !ok {
			break
		}
		var r exprVal
		if r, err = p.mul(eval); err == nil {
			l, err = p.arith(eval, l, r, op)
		}
	}
	return l, err
}

func (p *exprParser) mul(eval bool) (exprVal, error) {
	l, err := p.colon(eval)
	for err == nil {
		op, ok := p.nextIs("*", "/", "%")
		if !ok {
			break
		}
		var r exprVal
		if r, err = p.colon(eval); err == nil {
			l, err = p.arith(eval, l, r, op)
		}
	}
	return l, err
}

func (p *exprParser) colon(eval bool) (exprVal, error) {
	l, err := p.unary(eval)
	for err == nil {
		if _, ok := p.nextIs(":"); !ok {
			break
		}
		var r exprVal
		if r, err = p.unary(eval); err == nil && eval {
			l, err = exprMatch(l.String(), r.String())
		}
	}
	return l, err
}

// exprMatch is the ':' operator: an anchored BRE match.
func exprMatch(s, pat string) (exprVal, error) {
	re, err := txCompileBRE(pat)
	if err != nil {
		if errors.Is(err, errBREUnsupported) {
			return exprVal{}, err
		}
		return exprVal{}, &exprErr{err.Error(), 2}
	}
	m := re.FindStringSubmatchIndex(s)
	if m == nil || m[0] != 0 {
		if re.NumSubexp() > 0 {
			return exprStr(""), nil
		}
		return exprNum(big.NewInt(0)), nil
	}
	if re.NumSubexp() > 0 {
		if m[2] < 0 {
			return exprStr(""), nil
		}
		return exprStr(s[m[2]:m[3]]), nil
	}
	return exprNum(big.NewInt(int64(utf8.RuneCountInString(s[:m[1]])))), nil
}

func (p *exprParser) operand() (string, error) {
	t, ok := p.peek()
	if !ok {
		prev := ""
		if p.i > 0 {
			prev = p.args[p.i-1]
		}
		return "", &exprErr{"syntax error: missing argument after " + txQuote(prev), 2}
	}
	p.i++
	return t, nil
}

func (p *exprParser) unary(eval bool) (exprVal, error) {
	t, ok := p.peek()
	if !ok {
		return p.primary()
	}
	switch t {
	case "+":
		p.i++
		s, err := p.operand()
		return exprStr(s), err
	case "length":
		p.i++
		v, err := p.unary(eval)
		return exprNum(big.NewInt(int64(utf8.RuneCountInString(v.String())))), err
	case "match":
		p.i++
		a, err := p.unary(eval)
		if err != nil {
			return a, err
		}
		b, err := p.unary(eval)
		if err != nil || !eval {
			return exprNum(big.NewInt(0)), err
		}
		return exprMatch(a.String(), b.String())
	case "index":
		p.i++
		a, err := p.unary(eval)
		if err != nil {
			return a, err
		}
		b, err := p.unary(eval)
		if err != nil {
			return b, err
		}
		pos := 0
		for i, r := range []rune(a.String()) {
			if strings.ContainsRune(b.String(), r) {
				pos = i + 1
				break
			}
		}
		return exprNum(big.NewInt(int64(pos))), nil
	case "substr":
		p.i++
		var vs [3]exprVal
		for k := range vs {
			v, err := p.unary(eval)
			if err != nil {
				return v, err
			}
			vs[k] = v
		}
		rs := []rune(vs[0].String())
		pos, ok1 := vs[1].toInt()
		n, ok2 := vs[2].toInt()
		if !ok1 || !ok2 || pos.Sign() <= 0 || n.Sign() <= 0 || !pos.IsInt64() || pos.Int64() > int64(len(rs)) {
			return exprStr(""), nil
		}
		start := int(pos.Int64()) - 1
		end := len(rs)
		if n.IsInt64() && n.Int64() < int64(len(rs)-start) {
			end = start + int(n.Int64())
		}
		return exprStr(string(rs[start:end])), nil
	}
	return p.primary()
}

func (p *exprParser) primary() (exprVal, error) {
	t, ok := p.peek()
	if !ok {
		prev := ""
		if p.i > 0 {
			prev = p.args[p.i-1]
		}
		return exprVal{}, &exprErr{"syntax error: missing argument after " + txQuote(prev), 2}
	}
	if t == "(" {
		p.i++
		v, err := p.or(true)
		if err != nil {
			return v, err
		}
		c, ok := p.peek()
		if !ok {
			return v, &exprErr{"syntax error: expecting ')' after " + txQuote(p.args[p.i-1]), 2}
		}
		if c != ")" {
			return v, &exprErr{"syntax error: expecting ')' instead of " + txQuote(c), 2}
		}
		p.i++
		return v, nil
	}
	if t == ")" {
		return exprVal{}, &exprErr{"syntax error: unexpected ')'", 2}
	}
	p.i++
	return exprStr(t), nil
}
