package awk

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sprintf formats like mawk's printf: C conversions, with %d and %i
// clamped to ±2147483647 and %o %u %x %X to 0..4294967295 as mawk's
// d_to_I and d_to_U do.
func (in *interp) sprintf(format string, args []value) string {
	s, errMsg := in.format(format, args)
	if errMsg != "" {
		in.fatalf("%s", errMsg)
	}
	return s
}

// format does the work of sprintf; on a bad format it returns what it
// produced so far and the error (mawk writes that much before failing).
func (in *interp) format(format string, args []value) (string, string) {
	var b strings.Builder
	ai := 0
	next := func() (value, bool) {
		if ai >= len(args) {
			return value{}, false
		}
		ai++
		return args[ai-1], true
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		// parse flags, width, precision
		j := i + 1
		for j < len(format) && strings.IndexByte("-+ #0", format[j]) >= 0 {
			j++
		}
		flags := format[i+1 : j]
		width, prec := "", ""
		hasPrec := false
		if j < len(format) && format[j] == '*' {
			v, _ := next()
			width = strconv.Itoa(toInt(toNum(v)))
			j++
		} else {
			k := j
			for j < len(format) && isDigit(format[j]) {
				j++
			}
			width = format[k:j]
		}
		if j < len(format) && format[j] == '.' {
			hasPrec = true
			j++
			if j < len(format) && format[j] == '*' {
				v, _ := next()
				prec = strconv.Itoa(toInt(toNum(v)))
				j++
			} else {
				k := j
				for j < len(format) && isDigit(format[j]) {
					j++
				}
				prec = format[k:j]
				if prec == "" {
					prec = "0"
				}
			}
		}
		// mawk accepts l and h only with integer conversions
		mod := false
		for j < len(format) && (format[j] == 'l' || format[j] == 'h') {
			j++
			mod = true
		}
		if j >= len(format) {
			return b.String(), fmt.Sprintf("bad conversion in printf(\"%s\")", format)
		}
		verb := format[j]
		if w, _ := strconv.Atoi(width); w > maxString {
			return b.String(), fmt.Sprintf("field width too large in printf(\"%s\")", format)
		}
		if p, _ := strconv.Atoi(prec); p > maxString {
			return b.String(), fmt.Sprintf("precision too large in printf(\"%s\")", format)
		}
		if mod && strings.IndexByte("dioxXu", verb) < 0 {
			return b.String(), fmt.Sprintf("improper conversion(number %d) in printf(\"%s\")", ai+1, format)
		}
		if strings.HasPrefix(width, "-") {
			flags += "-"
			width = width[1:]
		}
		spec := "%" + flags + width
		if hasPrec {
			spec += "." + prec
		}
		i = j
		v, ok := next()
		if !ok {
			return b.String(), fmt.Sprintf("not enough arguments passed to printf(\"%s\")", format)
		}
		switch verb {
		case 'd', 'i':
			b.WriteString(fmtInt(spec, int64(toInt(toNum(v)))))
		case 'o', 'x', 'X', 'u':
			d := toNum(v)
			var u uint64
			switch {
			case d >= 4294967295:
				u = 4294967295
			case d > 0:
				u = uint64(d)
			}
			vv := verb
			if vv == 'u' {
				vv = 'd'
			}
			b.WriteString(fmtUint(spec, vv, u))
		case 'e', 'E', 'f', 'F', 'g', 'G':
			b.WriteString(fmtFloat(spec, verb, toNum(v), hasPrec))
		case 'c':
			var s string
			if v.k == kNum || v.k == kStrNum {
				s = string([]byte{byte(toInt(v.n))})
			} else {
				str := in.toStr(v)
				if str == "" {
					s = "\x00"
				} else {
					s = str[:1]
				}
			}
			b.WriteString(fmt.Sprintf(noZero(strings.Replace(spec, "."+prec, "", 1))+"s", s))
		case 's':
			b.WriteString(fmt.Sprintf(noZero(spec)+"s", in.toStr(v)))
		default:
			return b.String(), fmt.Sprintf("bad conversion in printf(\"%s\")", format)
		}
	}
	return b.String(), ""
}

func fmtInt(spec string, n int64) string {
	return fmt.Sprintf(cPrecInt(spec, n != 0)+"d", n)
}

func fmtUint(spec string, verb byte, u uint64) string {
	if strings.Contains(spec, "#") && verb == 'o' {
		// C's %#o prefixes a 0 unless the number already starts with one
		s := fmt.Sprintf(strings.Replace(spec, "#", "", 1)+"o", u)
		if !strings.Contains(strings.TrimLeft(s, " "), "0") || !strings.HasPrefix(strings.TrimLeft(s, " "), "0") {
			return fmt.Sprintf(cPrecInt(strings.Replace(spec, "#", "", 1), u != 0)+"s", "0"+strconv.FormatUint(u, 8))
		}
		return s
	}
	if u == 0 && strings.Contains(spec, "#") {
		spec = strings.Replace(spec, "#", "", 1) // C prints plain 0 for %#x of 0
	}
	return fmt.Sprintf(cPrecInt(spec, u != 0)+string(verb), u)
}

// cPrecInt adapts an integer conversion spec: in C, a precision turns
// off the 0 flag, and precision 0 prints nothing for the value 0.
func cPrecInt(spec string, nonzero bool) string {
	if strings.Contains(spec, ".") && strings.Contains(spec, "0") {
		// remove the 0 flag (only in the flags part)
		k := 1
		for k < len(spec) && strings.IndexByte("-+ #0", spec[k]) >= 0 {
			k++
		}
		spec = "%" + strings.ReplaceAll(spec[1:k], "0", "") + spec[k:]
	}
	return spec
}

func fmtFloat(spec string, verb byte, d float64, hasPrec bool) string {
	if math.IsInf(d, 0) || math.IsNaN(d) {
		s, _ := special(d, verb == 'E' || verb == 'G' || verb == 'F')
		if d > 0 || (math.IsNaN(d) && !math.Signbit(d)) {
			if strings.Contains(spec, "+") {
				s = "+" + s
			} else if strings.Contains(spec, " ") {
				s = " " + s
			}
		}
		sp := strings.NewReplacer("0", "", "+", "", " ", "", "#", "").Replace(spec[:flagEnd(spec)]) + spec[flagEnd(spec):]
		if i := strings.IndexByte(sp, '.'); i >= 0 {
			sp = sp[:i]
		}
		return fmt.Sprintf(sp+"s", s)
	}
	if !hasPrec {
		spec += ".6"
	}
	if verb == 'F' {
		verb = 'f'
	}
	if (verb == 'g' || verb == 'G') && !strings.Contains(spec, "#") {
		return cG(spec, verb, d)
	}
	return fmt.Sprintf(spec+string(verb), d)
}

func flagEnd(spec string) int {
	k := 1
	for k < len(spec) && strings.IndexByte("-+ #0", spec[k]) >= 0 {
		k++
	}
	return k
}

// cG formats %g as C does (Go's %g with a precision agrees except that
// precision 0 means 1).
func cG(spec string, verb byte, d float64) string {
	if strings.HasSuffix(spec, ".0") {
		spec = spec[:len(spec)-1] + "1"
	}
	return fmt.Sprintf(spec+string(verb), d)
}

// sprintfNum formats one number with a user's CONVFMT/OFMT.
func sprintfNum(format string, n float64) string {
	in := &interp{}
	s, _ := in.format(format, []value{num(n)})
	return s
}

// noZero drops the 0 flag, which glibc ignores for %s and %c.
func noZero(spec string) string {
	k := flagEnd(spec)
	return "%" + strings.ReplaceAll(spec[1:k], "0", "") + spec[k:]
}
