package awk

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"strings"
)

// cell is a variable slot: a scalar, or an array once used as one.
type cell struct {
	v   value
	arr *array
}

// array is an awk associative array. It iterates in insertion order
// (mawk's order is its hash table's, which is not reproducible).
type array struct {
	m    map[string]*value
	keys []string
	dead int // deleted keys still in keys
}

func newArray() *array { return &array{m: map[string]*value{}} }

func (a *array) get(k string) *value {
	if v, ok := a.m[k]; ok {
		return v
	}
	v := &value{}
	a.m[k] = v
	a.keys = append(a.keys, k)
	return v
}

func (a *array) del(k string) {
	if _, ok := a.m[k]; !ok {
		return
	}
	delete(a.m, k)
	a.dead++
	if a.dead > 32 && a.dead > len(a.keys)/2 {
		live := a.keys[:0]
		seen := make(map[string]bool, len(a.m))
		for _, k := range a.keys {
			if _, ok := a.m[k]; ok && !seen[k] {
				seen[k] = true
				live = append(live, k)
			}
		}
		a.keys, a.dead = live, 0
	}
}

func (a *array) clear() {
	a.m = map[string]*value{}
	a.keys, a.dead = nil, 0
}

// liveKeys returns the keys present now, in insertion order.
func (a *array) liveKeys() []string {
	out := make([]string, 0, len(a.m))
	seen := make(map[string]bool, len(a.m))
	for _, k := range a.keys {
		if _, ok := a.m[k]; ok && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// elemCost is what an array element costs besides its key and text: the
// map entry, the value and its place in keys.
const elemCost = 96

func elemBytes(k string, v *value) int64 { return int64(2*len(k)+len(v.s)) + elemCost }

// elem is a.get(k), counting a new element against the memory budget.
func (in *interp) elem(a *array, k string) *value {
	if v, ok := a.m[k]; ok {
		return v
	}
	v := a.get(k)
	in.grow(elemBytes(k, v))
	return v
}

// setElem stores v as a[k].
func (in *interp) setElem(a *array, k string, v value) {
	p := in.elem(a, k)
	in.grow(int64(len(v.s) - len(p.s)))
	*p = v
}

// clearArray empties a.
func (in *interp) clearArray(a *array) {
	for k, v := range a.m {
		in.grow(-elemBytes(k, v))
	}
	a.clear()
}

// grow notes that the arrays hold n more bytes (n may be negative) and
// reserves room in the caller's memory budget, 256 KiB or more at a time.
func (in *interp) grow(n int64) {
	in.arrBytes += n
	if in.arrBytes <= in.reserved || in.c.Reserve == nil {
		return
	}
	step := max(in.arrBytes-in.reserved, 256<<10)
	if err := in.c.Reserve(step); err != nil {
		in.fatalf("%v", err)
	}
	in.reserved += step
}

// ctl is how a statement ended.
type ctl int

const (
	ctlNone ctl = iota
	ctlBreak
	ctlContinue
	ctlNext
	ctlNextfile
	ctlExit
	ctlReturn
)

// runtimeError is a fatal error while running the program; the
// interpreter panics with it and [interp.run] recovers it, so that deep
// expression evaluation needs no error plumbing.
type runtimeError struct {
	msg   string
	plain bool // reported without "run time error" and position
}

// interp runs one program. It is not safe for concurrent use.
type interp struct {
	ctx  context.Context
	c    *Env
	prog *program

	arrBytes, reserved int64 // what the arrays hold; what was reserved for them (Env.Reserve)

	globals []cell
	frame   []cell // locals of the running function
	depth   int
	retVal  value

	// the current record and its fields (fields[0] unused)
	record    string
	fields    []value
	nf        int
	splitDone bool

	// cached special variables
	convfmt, ofmt, ofs, ors, subsep string
	fs, rs                          string
	recFS                           string // FS when the record was read
	fsRe                            *regexpCache

	stdout      *bufio.Writer
	outputs     map[string]*output
	inputs      map[string]*input
	main        *input // current main input file
	argIdx      int    // next ARGV index to look at
	noMoreInput bool
	usedFile    bool     // a file operand was opened (else read stdin)
	pipeOrder   []string // output pipes in the order opened

	rc       regexCache
	rng      *rand.Rand
	seed     float64
	exitCode int
	ticks    int
	inEnd    bool
}

type regexpCache = regexCache

func (in *interp) fatalf(format string, args ...any) {
	panic(&runtimeError{msg: fmt.Sprintf(format, args...)})
}

// tick checks for cancellation every few thousand steps.
func (in *interp) tick() {
	in.ticks++
	if in.ticks&0xfff == 0 {
		if err := in.ctx.Err(); err != nil {
			panic(&runtimeError{msg: "interrupted: " + err.Error()})
		}
	}
}

func (in *interp) toStr(v value) string {
	switch v.k {
	case kNum:
		return numToStr(v.n, in.convfmt)
	case kUninit:
		return ""
	}
	return v.s
}

// outStr converts for print, which uses OFMT for numbers.
func (in *interp) outStr(v value) string {
	if v.k == kNum {
		return numToStr(v.n, in.ofmt)
	}
	return in.toStr(v)
}

func toNum(v value) float64 {
	switch v.k {
	case kNum, kStrNum:
		return v.n
	case kStr:
		n, _ := strtod(v.s)
		return n
	}
	return 0
}

func toBool(v value) bool {
	switch v.k {
	case kNum:
		return v.n != 0
	case kStr:
		return v.s != ""
	case kStrNum:
		return v.n != 0
	}
	return false
}

// compare implements awk's comparison rules: numeric when both sides are
// numbers, numeric strings or uninitialized; otherwise as strings.
func (in *interp) compare(a, b value) int {
	an := a.k == kNum || a.k == kStrNum || a.k == kUninit
	bn := b.k == kNum || b.k == kStrNum || b.k == kUninit
	if an && bn {
		x, y := toNum(a), toNum(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		case x == y:
			return 0
		}
		// NaN: mawk compares unordered as not equal, not less
		return 2
	}
	return strings.Compare(in.toStr(a), in.toStr(b))
}

func (in *interp) cellOf(local bool, idx int) *cell {
	if local {
		return &in.frame[idx]
	}
	return &in.globals[idx]
}

func (in *interp) arrayOf(r *arrRef) *array {
	c := in.cellOf(r.local, r.idx)
	if c.arr == nil {
		c.arr = newArray()
	}
	return c.arr
}

func (in *interp) subscript(index []expr) string {
	if len(index) == 1 {
		return in.keyStr(in.eval(index[0]))
	}
	var b strings.Builder
	for i, e := range index {
		if i > 0 {
			b.WriteString(in.subsep)
		}
		b.WriteString(in.keyStr(in.eval(e)))
	}
	return b.String()
}

// keyStr converts an array subscript: integers print as integers
// whatever CONVFMT says.
func (in *interp) keyStr(v value) string {
	if v.k == kNum && v.n == math.Trunc(v.n) && math.Abs(v.n) < 1e15 {
		return strconv.FormatInt(int64(v.n), 10)
	}
	return in.toStr(v)
}

func (in *interp) execBlock(body []stmt) ctl {
	for _, s := range body {
		if r := in.exec(s); r != ctlNone {
			return r
		}
	}
	return ctlNone
}

func (in *interp) exec(s stmt) ctl {
	switch s := s.(type) {
	case *exprStmt:
		in.eval(s.e)
	case *printStmt:
		in.print(s)
	case *ifStmt:
		if toBool(in.eval(s.cond)) {
			return in.execBlock(s.yes)
		}
		return in.execBlock(s.no)
	case *blockStmt:
		return in.execBlock(s.body)
	case *whileStmt:
		for toBool(in.eval(s.cond)) {
			in.tick()
			if r := in.execBlock(s.body); r == ctlBreak {
				break
			} else if r != ctlNone && r != ctlContinue {
				return r
			}
		}
	case *doStmt:
		for {
			in.tick()
			if r := in.execBlock(s.body); r == ctlBreak {
				break
			} else if r != ctlNone && r != ctlContinue {
				return r
			}
			if !toBool(in.eval(s.cond)) {
				break
			}
		}
	case *forStmt:
		if s.init != nil {
			in.exec(s.init)
		}
		for s.cond == nil || toBool(in.eval(s.cond)) {
			in.tick()
			if r := in.execBlock(s.body); r == ctlBreak {
				break
			} else if r != ctlNone && r != ctlContinue {
				return r
			}
			if s.post != nil {
				in.exec(s.post)
			}
		}
	case *forInStmt:
		a := in.arrayOf(s.arr)
		for _, k := range a.liveKeys() {
			in.tick()
			in.assign(s.v, strnumKey(k))
			if r := in.execBlock(s.body); r == ctlBreak {
				break
			} else if r != ctlNone && r != ctlContinue {
				return r
			}
		}
	case *breakStmt:
		return ctlBreak
	case *continueStmt:
		return ctlContinue
	case *nextStmt:
		return ctlNext
	case *nextfileStmt:
		return ctlNextfile
	case *exitStmt:
		if s.e != nil {
			in.exitCode = toInt(toNum(in.eval(s.e))) & 0xff
		}
		return ctlExit
	case *returnStmt:
		if s.e != nil {
			in.retVal = in.eval(s.e)
		} else {
			in.retVal = value{}
		}
		return ctlReturn
	case *deleteStmt:
		a := in.arrayOf(s.arr)
		if s.index == nil {
			in.clearArray(a)
		} else {
			k := in.subscript(s.index)
			if v, ok := a.m[k]; ok {
				in.grow(-elemBytes(k, v))
			}
			a.del(k)
		}
	default:
		in.fatalf("internal: unknown statement %T", s)
	}
	return ctlNone
}

// strnumKey is the value a for-in variable gets: keys are strings, but
// mawk gives keys that came from integers their numeric nature.
func strnumKey(k string) value { return value{k: kStr, s: k} }

// callFunc runs a user function.
func (in *interp) callFunc(c *callExpr) value {
	fd := c.fn
	if in.depth > 1000 {
		in.fatalf("function call nesting too deep")
	}
	frame := make([]cell, len(fd.params))
	for i, a := range c.args {
		if r, ok := a.(*arrRef); ok {
			frame[i].arr = in.arrayOf(r)
			continue
		}
		frame[i].v = in.eval(a)
	}
	saved := in.frame
	in.frame = frame
	in.depth++
	in.retVal = value{}
	r := in.execBlock(fd.body)
	in.depth--
	in.frame = saved
	if r == ctlExit {
		panic(exitPanic{})
	}
	if r == ctlNext || r == ctlNextfile {
		panic(nextPanic{r})
	}
	v := in.retVal
	in.retVal = value{}
	return v
}

// exitPanic and nextPanic carry exit/next out of a function call up to
// the rule that is running.
type exitPanic struct{}
type nextPanic struct{ r ctl }
