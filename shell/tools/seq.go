package tools

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strings"

	"rung.dev/rung/shell"
)

// seq: GNU seq 9.1 (-s -w -f). Integer operands are stepped exactly with
// big.Int; others as long doubles (big.Float, 64-bit mantissa) printed
// with the format GNU derives from the operands' precision and width.

var seqOpts = NewOptions("f,format=", "s,separator=", "w,equal-width")

// seqOperand is GNU's operand: value plus the width and precision it was
// written with.
type seqOperand struct {
	text      string
	value     cLongDouble
	width     int
	precision int // math.MaxInt32 for "unknown"
}

var seqIntRe = regexp.MustCompile(`^[ \t\n\v\f\r]*[-+]?[0-9]+$`)

func seqScan(arg string) (seqOperand, bool) {
	v, n, _ := cParseLD(arg)
	if n == 0 || n != len(arg) {
		return seqOperand{}, false
	}
	op := seqOperand{text: arg, value: v, precision: math.MaxInt32}
	if v.nan {
		return op, false
	}
	a := strings.TrimLeft(arg, " \t\n\v\f\r+")
	if strings.ContainsAny(a, "xX") || v.f.IsInf() {
		return op, true
	}
	op.width = len(a)
	op.precision = 0
	dot := strings.IndexByte(a, '.')
	if dot >= 0 {
		frac := strings.IndexAny(a[dot+1:], "eE")
		if frac < 0 {
			frac = len(a) - dot - 1
		}
		op.precision = frac
		switch {
		case frac == 0:
			op.width--
		case dot == 0 || !isDigit(a[dot-1]):
			op.width++
		}
	}
	e := strings.IndexAny(a, "eE")
	if e >= 0 {
		var exp int
		fmt.Sscanf(a[e+1:], "%d", &exp)
		if exp < 0 {
			op.precision += -exp
		} else {
			op.precision -= min(op.precision, exp)
		}
		op.width -= len(a) - e
		if exp < 0 {
			if dot >= 0 {
				if e == dot+1 {
					op.width++
				}
			} else {
				op.width++
			}
			exp = -exp
		} else {
			if dot >= 0 && op.precision == 0 && op.width > 0 {
				op.width--
			}
			exp = -min(op.precision, exp)
		}
		op.width += exp
	}
	return op, true
}

// seqSplit separates options from operands: GNU seq stops option parsing
// at an argument that looks like a negative number.
func seqSplit(args []string) (optArgs, ops []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) >= 2 && a[0] == '-' && (isDigit(a[1]) || a[1] == '.') {
			return optArgs, args[i:]
		}
		optArgs = append(optArgs, a)
		if (a == "-f" || a == "-s") && i+1 < len(args) {
			i++
			optArgs = append(optArgs, args[i])
		}
	}
	return optArgs, nil
}

func seqCheck(args []string) error {
	optArgs, _ := seqSplit(args)
	opts, _, err := seqOpts.Parse(optArgs)
	if err != nil {
		return errUnsupportedf("%s", err)
	}
	for _, o := range opts {
		if o.Key == "format" && printfHexFloat.MatchString(strings.ReplaceAll(o.Value, "%%", "")) {
			return errUnsupportedf("seq -f %%a")
		}
	}
	return nil
}

func runSeq(ctx context.Context, c *shell.Call) int {
	optArgs, ops := seqSplit(c.Args[1:])
	opts, rest, st, ok := txParse(c, seqOpts, optArgs, 1)
	if !ok {
		return st
	}
	ops = append(rest, ops...)
	sep, format, equal := "\n", "", false
	hasFormat := false
	for _, o := range opts {
		switch o.Key {
		case "format":
			format, hasFormat = o.Value, true
		case "separator":
			sep = o.Value
		case "equal-width":
			equal = true
		}
	}
	switch {
	case len(ops) == 0:
		return txUsageMsg(c, "missing operand")
	case len(ops) > 3:
		return txUsageMsg(c, "extra operand "+locQuote(ops[3]))
	case hasFormat && equal:
		return txUsageMsg(c, "format string may not be specified when printing equal width strings")
	}
	var fspec cSpec
	var fpre, fsuf string
	if hasFormat {
		var err error
		if fpre, fspec, fsuf, err = seqFormat(format); err != nil {
			if errors.Is(err, shell.ErrUnsupported) {
				return c.Fail("format %a")
			}
			c.Errorf("%s", err)
			return 1
		}
	}
	operands := make([]seqOperand, len(ops))
	for i, a := range ops {
		op, ok := seqScan(a)
		if !ok {
			if op.value.nan {
				return txUsageMsg(c, fmt.Sprintf("invalid 'not-a-number' argument: %s", locQuote(a)))
			}
			return txUsageMsg(c, "invalid floating point argument: "+locQuote(a))
		}
		operands[i] = op
	}
	first := seqOperand{text: "1", value: cLD(1), width: 1}
	step := first
	last := operands[len(operands)-1]
	if len(operands) >= 2 {
		first = operands[0]
	}
	if len(operands) == 3 {
		step = operands[1]
		if !step.value.nan && step.value.f.Sign() == 0 {
			return txUsageMsg(c, "invalid Zero increment value: "+locQuote(ops[1]))
		}
	}
	out := newTxOut(c.Stdout)
	var err error
	if !hasFormat && seqIntRe.MatchString(first.text) && seqIntRe.MatchString(step.text) && seqIntRe.MatchString(last.text) {
		err = seqInts(ctx, out, first.text, step.text, last.text, sep, equal)
	} else {
		if !hasFormat {
			fspec = seqDefaultFormat(first, step, last, equal)
		}
		err = seqFloats(ctx, out, seqFmt{fpre, fspec, fsuf}, first.value.f, step.value.f, last.value.f, sep)
	}
	if err != nil && txIsCtx(err) {
		return txCtxStatus
	}
	if out.Flush() != nil || err != nil {
		return 1
	}
	return 0
}

type seqFmt struct {
	pre  string
	spec cSpec
	suf  string
}

func (f seqFmt) format(x *big.Float) string {
	return f.pre + cFormatFloat(f.spec, cLongDouble{f: x}) + f.suf
}

// seqDefaultFormat is GNU get_default_format.
func seqDefaultFormat(first, step, last seqOperand, equal bool) cSpec {
	prec := max(first.precision, step.precision)
	if prec != math.MaxInt32 && last.precision != math.MaxInt32 {
		sp := cSpec{verb: 'f', hasPrec: true, prec: prec}
		if equal {
			fw := first.width + (prec - first.precision)
			lw := last.width + (prec - last.precision)
			if last.precision > 0 && prec == 0 {
				lw--
			}
			if last.precision == 0 && prec > 0 {
				lw++
			}
			if first.precision == 0 && prec > 0 {
				fw++
			}
			sp.width, sp.zero = max(fw, lw), true
		}
		return sp
	}
	return cSpec{verb: 'g'}
}

// seqFormat splits a -f format around its single float directive.
func seqFormat(f string) (string, cSpec, string, error) {
	var pre strings.Builder
	i := 0
	for ; i < len(f); i++ {
		if f[i] == '%' {
			if i+1 < len(f) && f[i+1] == '%' {
				pre.WriteByte('%')
				i++
				continue
			}
			break
		}
		pre.WriteByte(f[i])
	}
	if i == len(f) {
		return "", cSpec{}, "", fmt.Errorf("format %s has no %% directive", locQuote(f))
	}
	i++
	var sp cSpec
	for ; i < len(f) && strings.IndexByte("-+ #0'", f[i]) >= 0; i++ {
		switch f[i] {
		case '-':
			sp.minus = true
		case '+':
			sp.plus = true
		case ' ':
			sp.space = true
		case '#':
			sp.hash = true
		case '0':
			sp.zero = true
		}
	}
	for ; i < len(f) && isDigit(f[i]); i++ {
		sp.width = sp.width*10 + int(f[i]-'0')
	}
	if i < len(f) && f[i] == '.' {
		sp.hasPrec = true
		for i++; i < len(f) && isDigit(f[i]); i++ {
			sp.prec = sp.prec*10 + int(f[i]-'0')
		}
	}
	if i < len(f) && f[i] == 'L' {
		i++
	}
	if i >= len(f) || strings.IndexByte("efgEFG", f[i]) < 0 {
		if i < len(f) && (f[i] == 'a' || f[i] == 'A') {
			return "", cSpec{}, "", errUnsupportedf("format %%a")
		}
		if i >= len(f) {
			return "", cSpec{}, "", fmt.Errorf("format %s ends in %%", locQuote(f))
		}
		return "", cSpec{}, "", fmt.Errorf("format %s has unknown %%%c directive", locQuote(f), f[i])
	}
	sp.verb = f[i]
	var suf strings.Builder
	for j := i + 1; j < len(f); j++ {
		if f[j] == '%' {
			if j+1 < len(f) && f[j+1] == '%' {
				suf.WriteByte('%')
				j++
				continue
			}
			return "", cSpec{}, "", fmt.Errorf("format %s has too many %% directives", locQuote(f))
		}
		suf.WriteByte(f[j])
	}
	return pre.String(), sp, suf.String(), nil
}

func seqInts(ctx context.Context, out *txOut, a, s, b, sep string, equal bool) error {
	parse := func(t string) *big.Int {
		v, _ := new(big.Int).SetString(strings.TrimLeft(t, " \t\n\v\f\r+"), 10)
		return v
	}
	x, step, last := parse(a), parse(s), parse(b)
	width := 0
	if equal {
		width = max(len(strings.TrimLeft(a, " \t\n\v\f\r+")), len(strings.TrimLeft(b, " \t\n\v\f\r+")))
	}
	neg := step.Sign() < 0
	printed := false
	for i := 0; ; i++ {
		if c := x.Cmp(last); neg && c < 0 || !neg && c > 0 {
			break
		}
		if i > 0 {
			out.WriteString(sep)
		}
		s := x.String()
		if i == 0 && x.Sign() == 0 && strings.HasPrefix(strings.TrimLeft(a, " \t\n\v\f\r"), "-") {
			s = "-0" // GNU prints the first value as a long double: -0 stays negative
		}
		if len(s) < width {
			if s[0] == '-' {
				s = "-" + strings.Repeat("0", width-len(s)) + s[1:]
			} else {
				s = strings.Repeat("0", width-len(s)) + s
			}
		}
		out.WriteString(s)
		x.Add(x, step)
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := out.err(); err != nil {
				return err
			}
		}
		printed = true
	}
	if printed {
		out.WriteString("\n")
	}
	return nil
}

func seqFloats(ctx context.Context, out *txOut, f seqFmt, first, step, last *big.Float, sep string) error {
	neg := step.Signbit()
	outside := func(x *big.Float) bool {
		if neg {
			return x.Cmp(last) < 0
		}
		return last.Cmp(x) < 0
	}
	if outside(first) {
		return nil
	}
	x := new(big.Float).SetPrec(cLDPrec).Set(first)
	prev := ""
	for i := int64(1); ; i++ {
		s := f.format(x)
		out.WriteString(s)
		prev = s
		fi := new(big.Float).SetPrec(cLDPrec).SetInt64(i)
		x = new(big.Float).SetPrec(cLDPrec).Mul(fi, step)
		x.Add(x, first)
		if outside(x) {
			s := f.format(x)
			val, n, _ := cParseLD(strings.TrimSuffix(strings.TrimPrefix(s, f.pre), f.suf))
			if n == 0 || val.nan || val.f.Cmp(last) != 0 || s == prev {
				break
			}
		}
		out.WriteString(sep)
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := out.err(); err != nil {
				return err
			}
		}
	}
	out.WriteString("\n")
	return nil
}
