package awk

import (
	"math"
	"math/rand"
	"strings"
	"time"
)

func (in *interp) print(s *printStmt) {
	w := in.stdout
	if s.redir != 0 {
		w = in.outputFor(s.redir, in.toStr(in.eval(s.dest))).w
	}
	if s.printf {
		args := make([]value, len(s.args)-1)
		for i, a := range s.args[1:] {
			args[i] = in.eval(a)
		}
		out, errMsg := in.format(in.toStr(in.eval(s.args[0])), args)
		w.WriteString(out)
		if errMsg != "" {
			in.fatalf("%s", errMsg)
		}
	} else if len(s.args) == 0 {
		w.WriteString(in.record)
		w.WriteString(in.ors)
	} else {
		for i, a := range s.args {
			if i > 0 {
				w.WriteString(in.ofs)
			}
			w.WriteString(in.outStr(in.eval(a)))
		}
		w.WriteString(in.ors)
	}
}

func (in *interp) builtin(e *builtinExpr) value {
	args := e.args
	switch e.name {
	case "length":
		if len(args) == 0 {
			return num(float64(len(in.record)))
		}
		switch a := args[0].(type) {
		case *arrRef:
			return num(float64(len(in.arrayOf(a).m)))
		case *varRef:
			if c := in.cellOf(a.local, a.idx); c.arr != nil {
				return num(float64(len(c.arr.m)))
			}
		}
		return num(float64(len(in.toStr(in.eval(args[0])))))
	case "substr":
		return str(in.substr(args))
	case "index":
		s := in.toStr(in.eval(args[0]))
		t := in.toStr(in.eval(args[1]))
		return num(float64(strings.Index(s, t) + 1))
	case "split":
		return in.split(args)
	case "sub", "gsub":
		return in.sub(args, e.name == "gsub")
	case "match":
		s := in.toStr(in.eval(args[0]))
		re := in.regexOf(args[1])
		loc := re.FindStringIndex(s)
		start, length := 0, -1
		if loc != nil {
			start, length = loc[0]+1, loc[1]-loc[0]
		}
		in.globals[vRSTART].v = num(float64(start))
		in.globals[vRLENGTH].v = num(float64(length))
		return num(float64(start))
	case "sprintf":
		vals := make([]value, len(args)-1)
		for i, a := range args[1:] {
			vals[i] = in.eval(a)
		}
		return str(in.sprintf(in.toStr(in.eval(args[0])), vals))
	case "sin":
		return num(math.Sin(in.numArg(args[0])))
	case "cos":
		return num(math.Cos(in.numArg(args[0])))
	case "atan2":
		y := in.numArg(args[0])
		return num(math.Atan2(y, in.numArg(args[1])))
	case "exp":
		return num(math.Exp(in.numArg(args[0])))
	case "log":
		return num(cNaN(math.Log(in.numArg(args[0]))))
	case "sqrt":
		return num(cNaN(math.Sqrt(in.numArg(args[0]))))
	case "int":
		return num(math.Trunc(in.numArg(args[0])))
	case "rand":
		return num(in.rng.Float64())
	case "srand":
		prev := in.seed
		if len(args) == 1 {
			in.seed = in.numArg(args[0])
		} else {
			in.seed = float64(time.Now().Unix())
		}
		in.rng = rand.New(rand.NewSource(int64(in.seed)))
		return num(prev)
	case "tolower":
		return str(strings.Map(asciiLower, in.toStr(in.eval(args[0]))))
	case "toupper":
		return str(strings.Map(asciiUpper, in.toStr(in.eval(args[0]))))
	case "system":
		cmd := in.toStr(in.eval(args[0]))
		in.flushAll()
		return num(float64(in.runCommand(cmd, in.c.Stdin, in.c.Stdout)))
	case "close":
		return num(float64(in.closeStream(in.toStr(in.eval(args[0])))))
	case "fflush":
		if len(args) == 0 {
			in.stdout.Flush()
			return num(0)
		}
		name := in.toStr(in.eval(args[0]))
		if o, ok := in.outputs[name]; ok {
			if o.pipe == nil {
				o.w.Flush()
			}
			return num(0)
		}
		if name == "/dev/stdout" {
			in.stdout.Flush()
			return num(0)
		}
		return num(-1)
	}
	in.fatalf("internal: unknown builtin %s", e.name)
	return value{}
}

func asciiLower(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 32
	}
	return r
}

func asciiUpper(r rune) rune {
	if r >= 'a' && r <= 'z' {
		return r - 32
	}
	return r
}

func (in *interp) numArg(e expr) float64 { return toNum(in.eval(e)) }

// substr follows mawk 1.3.4 20200120, including its arithmetic for a
// start below 1 (substr("hello", 0, 3) is "hel" there, "he" in gawk).
func (in *interp) substr(args []expr) string {
	s := in.toStr(in.eval(args[0]))
	b := in.numArg(args[1])
	n := float64(len(s))
	l := math.Inf(1)
	if len(args) == 3 {
		l = in.numArg(args[2])
	}
	if math.IsNaN(b) || math.IsNaN(l) {
		return ""
	}
	begin := math.Trunc(b)
	length := math.Trunc(l)
	if begin < 1 {
		length -= begin
		begin = 1
	}
	if length <= 0 || begin > n {
		return ""
	}
	end := begin - 1 + length
	if end > n {
		end = n
	}
	return s[int(begin)-1 : int(end)]
}

func (in *interp) split(args []expr) value {
	s := in.toStr(in.eval(args[0]))
	arr := in.arrayOf(args[1].(*arrRef))
	var parts []value
	switch {
	case len(args) == 3:
		if r, ok := args[2].(*regexLit); ok {
			parts = in.splitRegex(s, r.re)
		} else {
			fs := in.toStr(in.eval(args[2]))
			parts = in.splitFS(s, fs, false, nil)
		}
	default:
		parts = in.splitFS(s, in.fs, in.rs == "", nil)
	}
	in.clearArray(arr)
	for i, p := range parts {
		if p.k == kMaybe {
			p = strnum(p.s)
		}
		in.setElem(arr, in.keyStr(num(float64(i+1))), p)
	}
	return num(float64(len(parts)))
}

func (in *interp) splitRegex(s string, re *ere) []value {
	if s == "" {
		return nil
	}
	var out []value
	pos := 0
	for _, loc := range re.FindAllStringIndex(s, -1) {
		if loc[1] == loc[0] {
			continue
		}
		out = append(out, strnum(s[pos:loc[0]]))
		pos = loc[1]
	}
	return append(out, strnum(s[pos:]))
}

// sub implements sub and gsub: & in the replacement is the match, \& a
// literal &, \\ a backslash.
func (in *interp) sub(args []expr, global bool) value {
	re := in.regexOf(args[0])
	repl := in.toStr(in.eval(args[1]))
	var target expr = &fieldExpr{index: &numLit{num(0)}}
	if len(args) == 3 {
		target = in.pinLvalue(args[2])
	}
	s := in.toStr(in.eval(target))
	n := 1
	if global {
		n = -1
	}
	// FindAll skips empty matches right after a match, as awk does.
	locs := re.FindAllStringIndex(s, n)
	if len(locs) == 0 {
		return num(0)
	}
	var b strings.Builder
	pos := 0
	for _, loc := range locs {
		b.WriteString(s[pos:loc[0]])
		expandRepl(&b, repl, s[loc[0]:loc[1]])
		pos = loc[1]
	}
	b.WriteString(s[pos:])
	count := len(locs)
	in.assign(target, str(b.String()))
	return num(float64(count))
}

func expandRepl(b *strings.Builder, repl, match string) {
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '\\' && i+1 < len(repl) && (repl[i+1] == '&' || repl[i+1] == '\\'):
			i++
			b.WriteByte(repl[i])
		case c == '&':
			b.WriteString(match)
		default:
			b.WriteByte(c)
		}
	}
}

// cNaN gives a domain error's NaN the sign glibc's gives it on x86.
func cNaN(x float64) float64 {
	if math.IsNaN(x) {
		return math.Copysign(x, -1)
	}
	return x
}
