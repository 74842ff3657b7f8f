package shell

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// arithErr is an arithmetic evaluation error (division by zero, bad
// number, syntax). In $((...)) it ends the shell; in ((...)) and let it
// makes the command fail.
type arithErr struct {
	msg string
	// inexact: bash's message quotes the expression's source text from
	// the failing operand on, which the parsed tree does not keep; the
	// exec is refused (see [runner.arithRefuse]) rather than answered
	// with a different message.
	inexact bool
	// full: msg already starts with the expression's text, as bash's
	// does; callers that add the text themselves leave it alone.
	full bool
}

// arithSpan is an arithmetic expression's source text as bash quotes it
// in an error: src[from:to], whose positions are those of the parsed
// tree being evaluated. When x is set, the span is not checked yet (see
// resolve): checking costs a parse, paid only on an error.
type arithSpan struct {
	src      string
	from, to int
	x        syntax.ArithmExpr
}

// spanOf is the span of x's text in the runner's source, from the
// offsets from and to (the text between $(( and )), say), unchecked.
func (r *runner) spanOf(x syntax.ArithmExpr, from, to uint) (arithSpan, bool) {
	if x == nil || int(to) > len(r.src) || from > to {
		return arithSpan{}, false
	}
	return arithSpan{src: r.src, from: int(from), to: int(to), x: x}, true
}

// resolve checks an unchecked span: the text must be x's (a function
// defined in another source has other offsets) and hold no expansion
// (bash quotes the text after expansions, which this is not). It drops
// the blanks before the expression, as bash does, not those after it.
func (sp arithSpan) resolve() (arithSpan, bool) {
	if sp.x == nil {
		return sp, sp.src != "" || sp.to == 0
	}
	text := sp.src[sp.from:sp.to]
	if strings.ContainsAny(text, "$`\"'\\") {
		return arithSpan{}, false
	}
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	e, err := p.Arithmetic(strings.NewReader(text))
	if err != nil || e == nil || arithString(e) != arithString(sp.x) {
		return arithSpan{}, false
	}
	lead := len(text) - len(strings.TrimLeft(text, " \t\n"))
	return arithSpan{src: sp.src, from: sp.from + lead, to: sp.to}, true
}

// withSpan evaluates x with sp as the innermost expression's text.
func (r *runner) withSpan(sp arithSpan, ok bool, eval func() int64) int64 {
	if !ok {
		sp = arithSpan{}
	}
	r.arithCtx = append(r.arithCtx, sp)
	defer func() { r.arithCtx = r.arithCtx[:len(r.arithCtx)-1] }()
	return eval()
}

// divZero fails a division or remainder by zero whose divisor is y, in
// bash's words: the expression's text, then the text from the divisor on
// as the error token. Without the text (no span), the exec is refused.
func (r *runner) divZero(y syntax.ArithmExpr) {
	if n := len(r.arithCtx); n > 0 && r.arithCtx[n-1].src != "" {
		sp, ok := r.arithCtx[n-1].resolve()
		off := int(y.Pos().Offset())
		if ok && off >= sp.from && off <= sp.to {
			panic(arithErr{msg: fmt.Sprintf("%s: division by 0 (error token is \"%s\")", sp.src[sp.from:sp.to], sp.src[off:sp.to]), full: true})
		}
	}
	panic(arithErr{msg: "division by 0 (error token is \"0\")", inexact: true})
}

// arithRefuse records, for an error whose message cannot be bash's, that
// the exec is refused at run time: under auto it runs in the container.
func (r *runner) arithRefuse(e arithErr) {
	if e.inexact {
		r.sh.setUnsupported(fmt.Errorf("arithmetic error %q: bash quotes the expression's source: %w", e.msg, ErrUnsupported))
	}
}

func (e arithErr) Error() string { return e.msg }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// arith evaluates x; an error is fatal, as for $((...)).
func (r *runner) arith(x syntax.ArithmExpr) int64 {
	v, err := r.arithSafe(x)
	if err != nil {
		r.fatalf(1, "%s", err.Error())
	}
	return v
}

// arithFatal evaluates a string; an error ends the shell as in $((...)).
func (r *runner) arithFatal(s string) (n int64) {
	defer func() {
		if p := recover(); p != nil {
			if e, ok := p.(arithErr); ok {
				r.arithRefuse(e)
				if e.full {
					r.fatalf(1, "%s", e.msg)
				}
				r.fatalf(1, "%s: %s", s, e.msg)
			}
			panic(p)
		}
	}()
	return r.arithString(s)
}

// arithSafe evaluates x, returning evaluation errors.
func (r *runner) arithSafe(x syntax.ArithmExpr) (v int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			if e, ok := p.(arithErr); ok {
				r.arithRefuse(e)
				err = e
				return
			}
			panic(p)
		}
	}()
	return r.eval(x), nil
}

var arithCache sync.Map // string -> syntax.ArithmExpr

// arithString evaluates s as an arithmetic expression (a variable's value
// or an expanded word); errors panic with arithErr. Such text has been
// expanded already: a $, quote or backquote left in it (outside a
// subscript) is an error, as in bash.
func (r *runner) arithString(s string) int64 {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case '$', '"', '\'', '`':
			if depth <= 0 {
				t := strings.TrimSpace(s)
				panic(arithErr{msg: fmt.Sprintf("%s: syntax error: operand expected (error token is \"%s\")", t, strings.TrimSpace(s[i:])), full: true})
			}
		}
	}
	return r.arithExpr(s)
}

// arithExpr is arithString for a subscript, whose text may still hold
// expansions ("a[$i]" named by a string).
func (r *runner) arithExpr(s string) int64 {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && (s[0] != '0' || len(s) == 1) {
		return n
	}
	r.arithDepth++
	defer func() { r.arithDepth-- }()
	if r.arithDepth > 1024 {
		panic(arithErr{msg: s + ": expression recursion level exceeded", full: true})
	}
	var x syntax.ArithmExpr
	if c, ok := arithCache.Load(s); ok {
		x = c.(syntax.ArithmExpr)
	} else {
		p := syntax.NewParser(syntax.Variant(syntax.LangBash))
		e, err := p.Arithmetic(strings.NewReader(s))
		if err != nil || e == nil {
			// bash names the failing token ("operand expected (error
			// token is "+")" for "1 +"), which the parse error does not.
			if op := trailingOp(s); op != "" {
				panic(arithErr{msg: fmt.Sprintf("%s: syntax error: operand expected (error token is \"%s\")", s, op), full: true})
			}
			panic(arithErr{msg: fmt.Sprintf("%s: syntax error: invalid arithmetic operator (error token is \"%s\")", s, s), inexact: true, full: true})
		}
		if end := int(e.End().Offset()); end < len(s) {
			// The parser stops after one expression: "a b" leaves "b".
			if rest := strings.TrimSpace(s[end:]); rest != "" {
				panic(arithErr{msg: fmt.Sprintf("%s: syntax error in expression (error token is \"%s\")", s, rest), full: true})
			}
		}
		x = e
		arithCache.Store(s, x)
	}
	return r.withSpan(arithSpan{src: s, to: len(s)}, true, func() int64 { return r.eval(x) })
}

// trailingOp returns the binary operator s ends with when the text before
// it is an expression ("1 +"), which bash reports as a missing operand
// naming that operator; "" otherwise.
func trailingOp(s string) string {
	for _, op := range []string{"**", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "&", "|", "^", ","} {
		head, ok := strings.CutSuffix(s, op)
		if !ok || strings.TrimSpace(head) == "" {
			continue
		}
		if strings.ContainsAny(head[len(head)-1:], "+-*/%<>=!&|^,") {
			return ""
		}
		p := syntax.NewParser(syntax.Variant(syntax.LangBash))
		if e, err := p.Arithmetic(strings.NewReader(head)); err == nil && e != nil && int(e.End().Offset()) >= len(strings.TrimRight(head, " \t")) {
			return op
		}
		return ""
	}
	return ""
}

// arithText is the source text of x, for messages.
func (r *runner) arithText(x syntax.ArithmExpr) string {
	return arithString(x)
}

// parseNumber parses a bash integer constant: decimal, 0x hex, 0 octal,
// or base#digits.
func parseNumber(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	base := int64(10)
	digits := s
	if b, d, ok := strings.Cut(s, "#"); ok {
		n, err := strconv.Atoi(b)
		if err != nil || n < 2 || n > 64 {
			return 0, false
		}
		base, digits = int64(n), d
	} else if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		base, digits = 16, s[2:]
	} else if len(s) > 1 && s[0] == '0' {
		base, digits = 8, s[1:]
	}
	if digits == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		var d int64
		switch {
		case c >= '0' && c <= '9':
			d = int64(c - '0')
		case c >= 'a' && c <= 'z':
			d = int64(c-'a') + 10
		case c >= 'A' && c <= 'Z':
			d = int64(c - 'A')
			if base <= 36 {
				d += 10
			} else {
				d += 36
			}
		case c == '@':
			d = 62
		case c == '_':
			d = 63
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		n = n*base + d
	}
	return n, true
}

// arithVar reads a variable for arithmetic: its value is itself
// evaluated as an expression.
func (r *runner) arithVar(name string) int64 {
	s, ok := r.varValue(name)
	if !ok && r.nounset {
		r.fatalf(127, "%s: unbound variable", name)
	}
	if s == "" {
		return 0
	}
	return r.arithString(s)
}

func (r *runner) eval(x syntax.ArithmExpr) int64 {
	switch x := x.(type) {
	case nil:
		return 0 // an empty expression, as in ${x:1:}
	case *syntax.Word:
		return r.evalWord(x)
	case *syntax.ParenArithm:
		return r.eval(x.X)
	case *syntax.UnaryArithm:
		return r.evalUnary(x)
	case *syntax.BinaryArithm:
		return r.evalBinary(x)
	}
	panic(arithErr{msg: "unsupported arithmetic expression"})
}

func (r *runner) evalWord(w *syntax.Word) int64 {
	if len(w.Parts) == 1 {
		switch p := w.Parts[0].(type) {
		case *syntax.Lit:
			s := p.Value
			if validName(s) {
				return r.arithVar(s)
			}
			if n, ok := parseNumber(s); ok {
				return n
			}
			if s != "" && s[0] >= '0' && s[0] <= '9' {
				panic(arithErr{msg: fmt.Sprintf("%s: value too great for base (error token is \"%s\")", s, s)})
			}
		case *syntax.ParamExp:
			if !p.Dollar.IsValid() && p.Index != nil && p.Param != nil {
				pv := r.lookupParam(p.Param.Value, p.Index, nil)
				if len(pv.vals) == 0 || pv.vals[0] == "" {
					return 0
				}
				return r.arithString(pv.vals[0])
			}
		}
	}
	s := r.literal(w)
	if n, ok := parseNumber(strings.TrimSpace(s)); ok {
		return n
	}
	return r.arithString(s)
}

// arithLvalue returns the name and optional subscript an assignment or
// ++/-- targets.
func (r *runner) arithLvalue(x syntax.ArithmExpr) (string, *string) {
	w, ok := x.(*syntax.Word)
	if !ok || len(w.Parts) != 1 {
		panic(arithErr{msg: "attempted assignment to non-variable"})
	}
	switch p := w.Parts[0].(type) {
	case *syntax.Lit:
		if validName(p.Value) {
			return p.Value, nil
		}
	case *syntax.ParamExp:
		if p.Param != nil && p.Index != nil {
			s := r.subscript(p.Param.Value, p.Index)
			return p.Param.Value, &s
		}
		if p.Param != nil {
			return p.Param.Value, nil
		}
	}
	panic(arithErr{msg: fmt.Sprintf("%s: attempted assignment to non-variable", r.arithText(x))})
}

func (r *runner) arithGet(name string, idx *string) int64 {
	if idx == nil {
		return r.arithVar(name)
	}
	pv := r.lookupParam(name, nil, idx)
	if len(pv.vals) == 0 {
		return 0
	}
	return r.arithString(pv.vals[0])
}

func (r *runner) arithSet(name string, idx *string, v int64) {
	if err := r.assign(name, idx, itoa(v), false); err != nil {
		panic(arithErr{msg: err.Error()})
	}
}

func (r *runner) evalUnary(x *syntax.UnaryArithm) int64 {
	switch x.Op {
	case syntax.Inc, syntax.Dec:
		name, idx := r.arithLvalue(x.X)
		old := r.arithGet(name, idx)
		n := old + 1
		if x.Op == syntax.Dec {
			n = old - 1
		}
		r.arithSet(name, idx, n)
		if x.Post {
			return old
		}
		return n
	}
	v := r.eval(x.X)
	switch x.Op {
	case syntax.Not:
		return b2i(v == 0)
	case syntax.BitNegation:
		return ^v
	case syntax.Minus:
		return -v
	}
	return v
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (r *runner) evalBinary(x *syntax.BinaryArithm) int64 {
	switch x.Op {
	case syntax.AndArit:
		if r.eval(x.X) == 0 {
			return 0
		}
		return b2i(r.eval(x.Y) != 0)
	case syntax.OrArit:
		if r.eval(x.X) != 0 {
			return 1
		}
		return b2i(r.eval(x.Y) != 0)
	case syntax.TernQuest:
		c := r.eval(x.X)
		col, ok := x.Y.(*syntax.BinaryArithm)
		if !ok || col.Op != syntax.TernColon {
			panic(arithErr{msg: "`:' expected for conditional expression"})
		}
		if c != 0 {
			return r.eval(col.X)
		}
		return r.eval(col.Y)
	case syntax.Comma:
		r.eval(x.X)
		return r.eval(x.Y)
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
		syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn,
		syntax.ShrAssgn, syntax.PowAssgn:
		name, idx := r.arithLvalue(x.X)
		v := r.eval(x.Y)
		if v == 0 && (x.Op == syntax.QuoAssgn || x.Op == syntax.RemAssgn) {
			r.divZero(x.Y)
		}
		if x.Op != syntax.Assgn {
			old := r.arithGet(name, idx)
			v = arithOp(assignBase(x.Op), old, v)
		}
		r.arithSet(name, idx, v)
		return v
	}
	a, b := r.eval(x.X), r.eval(x.Y)
	if b == 0 && (x.Op == syntax.Quo || x.Op == syntax.Rem) {
		r.divZero(x.Y)
	}
	return arithOp(x.Op, a, b)
}

func assignBase(op syntax.BinAritOperator) syntax.BinAritOperator {
	switch op {
	case syntax.AddAssgn:
		return syntax.Add
	case syntax.SubAssgn:
		return syntax.Sub
	case syntax.MulAssgn:
		return syntax.Mul
	case syntax.QuoAssgn:
		return syntax.Quo
	case syntax.RemAssgn:
		return syntax.Rem
	case syntax.AndAssgn:
		return syntax.And
	case syntax.OrAssgn:
		return syntax.Or
	case syntax.XorAssgn:
		return syntax.Xor
	case syntax.ShlAssgn:
		return syntax.Shl
	case syntax.ShrAssgn:
		return syntax.Shr
	case syntax.PowAssgn:
		return syntax.Pow
	}
	return op
}

func arithOp(op syntax.BinAritOperator, a, b int64) int64 {
	switch op {
	case syntax.Add:
		return a + b
	case syntax.Sub:
		return a - b
	case syntax.Mul:
		return a * b
	case syntax.Quo, syntax.Rem:
		if b == 0 {
			panic(arithErr{msg: "division by 0 (error token is \"" + itoa(b) + "\")", inexact: true})
		}
		if b == -1 {
			if op == syntax.Quo {
				return -a
			}
			return 0
		}
		if op == syntax.Quo {
			return a / b
		}
		return a % b
	case syntax.Pow:
		if b < 0 {
			panic(arithErr{msg: "exponent less than 0 (error token is \"" + itoa(b) + "\")", inexact: true})
		}
		res := int64(1)
		for ; b > 0; b >>= 1 {
			if b&1 == 1 {
				res *= a
			}
			a *= a
		}
		return res
	case syntax.Eql:
		return b2i(a == b)
	case syntax.Neq:
		return b2i(a != b)
	case syntax.Lss:
		return b2i(a < b)
	case syntax.Gtr:
		return b2i(a > b)
	case syntax.Leq:
		return b2i(a <= b)
	case syntax.Geq:
		return b2i(a >= b)
	case syntax.And:
		return a & b
	case syntax.Or:
		return a | b
	case syntax.Xor:
		return a ^ b
	case syntax.Shl:
		return a << (uint64(b) & 63)
	case syntax.Shr:
		return a >> (uint64(b) & 63)
	case syntax.XorBool:
		panic(arithErr{msg: "syntax error: operand expected (error token is \"^\")"})
	}
	panic(arithErr{msg: "unsupported arithmetic operator " + op.String()})
}
