package awk

import (
	"math"
)

func (in *interp) eval(e expr) value {
	switch e := e.(type) {
	case *numLit:
		return e.v
	case *strLit:
		return e.v
	case *varRef:
		if !e.local && e.idx == vNF {
			in.splitRecord()
		}
		c := in.cellOf(e.local, e.idx)
		if c.arr != nil {
			in.fatalf("can't use array %s in scalar context", e.name)
		}
		return c.v
	case *fieldExpr:
		return in.field(in.fieldIndex(e.index))
	case *indexExpr:
		return *in.elem(in.arrayOf(e.arr), in.subscript(e.index))
	case *assignExpr:
		return in.evalAssign(e)
	case *condExpr:
		if toBool(in.eval(e.cond)) {
			return in.eval(e.yes)
		}
		return in.eval(e.no)
	case *binExpr:
		return in.evalBinary(e)
	case *unaryExpr:
		v := in.eval(e.e)
		switch e.op {
		case tNot:
			return boolNum(!toBool(v))
		case tMinus:
			return num(-toNum(v))
		}
		return num(toNum(v))
	case *incrExpr:
		old := toNum(in.eval(e.lhs))
		in.assign(e.lhs, num(old+e.delta))
		if e.pre {
			return num(old + e.delta)
		}
		return num(old)
	case *regexLit:
		return boolNum(e.re.MatchString(in.getRecord()))
	case *matchExpr:
		s := in.toStr(in.eval(e.l))
		m := in.regexOf(e.re).MatchString(s)
		return boolNum(m != e.neg)
	case *inExpr:
		_, ok := in.arrayOf(e.arr).m[in.subscript(e.index)]
		return boolNum(ok)
	case *callExpr:
		return in.callFunc(e)
	case *builtinExpr:
		return in.builtin(e)
	case *getlineExpr:
		return in.getline(e)
	case *groupExpr:
		// (a, b) outside print or in: concatenation with SUBSEP, as mawk
		in.fatalf("syntax error: grouping used outside print")
	case *arrRef:
		in.fatalf("can't use array %s in scalar context", e.name)
	}
	in.fatalf("internal: unknown expression %T", e)
	return value{}
}

// regexOf returns the regexp for the right side of ~ or a regex argument.
func (in *interp) regexOf(e expr) *ere {
	if r, ok := e.(*regexLit); ok {
		return r.re
	}
	src := in.toStr(in.eval(e))
	re, err := in.rc.get(src)
	if err != nil {
		in.fatalf("regular expression compile failed (%s)\n%s", err, src)
	}
	return re
}

func (in *interp) fieldIndex(e expr) int {
	n := toNum(in.eval(e))
	if n < 0 {
		in.fatalf("negative field index $%d", int(n))
	}
	if n > 1e7 {
		in.fatalf("$%g exceeds maximum field", n)
	}
	return int(n)
}

func (in *interp) evalAssign(e *assignExpr) value {
	if e.op == tAssign {
		v := in.eval(e.rhs)
		if v.k == kUninit {
			// copying an uninitialized value keeps its dual nature
			v = value{}
		}
		in.assign(e.lhs, v)
		return v
	}
	// evaluate the target's index once: a[i++] += 1
	lhs := in.pinLvalue(e.lhs)
	l := toNum(in.eval(lhs))
	r := toNum(in.eval(e.rhs))
	var v float64
	switch e.op {
	case tAddAssign:
		v = l + r
	case tSubAssign:
		v = l - r
	case tMulAssign:
		v = l * r
	case tDivAssign:
		v = l / r
	case tModAssign:
		v = fmod(l, r)
	case tPowAssign:
		v = pow(l, r)
	}
	in.assign(lhs, num(v))
	return num(v)
}

// pinLvalue evaluates an lvalue's subscript or field index once.
func (in *interp) pinLvalue(e expr) expr {
	switch x := e.(type) {
	case *indexExpr:
		return &indexExpr{arr: x.arr, index: []expr{&strLit{str(in.subscript(x.index))}}}
	case *fieldExpr:
		return &fieldExpr{index: &numLit{num(float64(in.fieldIndex(x.index)))}}
	}
	return e
}

// assign stores v into an lvalue.
func (in *interp) assign(lhs expr, v value) {
	switch x := lhs.(type) {
	case *varRef:
		c := in.cellOf(x.local, x.idx)
		if c.arr != nil {
			in.fatalf("can't assign to %s; it's an array name.", x.name)
		}
		c.v = v
		if !x.local && x.idx < numSpecial {
			in.setSpecial(x.idx)
		}
	case *indexExpr:
		in.setElem(in.arrayOf(x.arr), in.subscript(x.index), v)
	case *fieldExpr:
		in.setField(in.fieldIndex(x.index), in.toStr(v), v)
	default:
		in.fatalf("internal: assignment to %T", lhs)
	}
}

func pow(x, y float64) float64 {
	return math.Pow(x, y)
}

func (in *interp) evalBinary(e *binExpr) value {
	switch e.op {
	case tAnd:
		return boolNum(toBool(in.eval(e.l)) && toBool(in.eval(e.r)))
	case tOr:
		return boolNum(toBool(in.eval(e.l)) || toBool(in.eval(e.r)))
	case tString:
		l := in.toStr(in.eval(e.l))
		r := in.toStr(in.eval(e.r))
		if len(l)+len(r) > maxString {
			in.fatalf("string too long (over %d bytes)", maxString)
		}
		return str(l + r)
	}
	l, r := in.eval(e.l), in.eval(e.r)
	switch e.op {
	case tPlus:
		return num(toNum(l) + toNum(r))
	case tMinus:
		return num(toNum(l) - toNum(r))
	case tStar:
		return num(toNum(l) * toNum(r))
	case tSlash:
		// mawk divides by zero without complaint: inf, -nan
		return num(toNum(l) / toNum(r))
	case tPercent:
		return num(fmod(toNum(l), toNum(r)))
	case tCaret:
		return num(pow(toNum(l), toNum(r)))
	}
	c := in.compare(l, r)
	switch e.op {
	case tLess:
		return boolNum(c == -1)
	case tLe:
		return boolNum(c == -1 || c == 0)
	case tGreater:
		return boolNum(c == 1)
	case tGe:
		return boolNum(c == 1 || c == 0)
	case tEq:
		return boolNum(c == 0)
	case tNe:
		return boolNum(c != 0)
	}
	in.fatalf("internal: unknown operator %d", e.op)
	return value{}
}

// fmod is C's fmod: x86 glibc returns a negative NaN for a zero divisor.
func fmod(x, y float64) float64 {
	if y == 0 || math.IsInf(x, 0) {
		return math.Copysign(math.NaN(), -1)
	}
	return math.Mod(x, y)
}

// maxString bounds the strings a program can build, so that a runaway
// s = s s cannot exhaust the daemon's memory before the next ctx check.
const maxString = 64 << 20
