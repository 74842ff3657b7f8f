package shell

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// trace writes one set -x line: PS4 then text.
func (r *runner) trace(text string) {
	ps4, ok := r.varValue("PS4")
	if !ok {
		ps4 = "+ "
	}
	if strings.ContainsAny(ps4, "$`") {
		ps4 = r.expandPrompt(ps4)
	}
	prefix := ps4
	if ps4 != "" && r.traceLevel > 0 {
		prefix = strings.Repeat(ps4[:1], r.traceLevel) + ps4
	}
	fmt.Fprintf(r.stderr(), "%s%s\n", prefix, text)
}

func (r *runner) traceArith(c *syntax.ArithmCmd) {
	if r.xtrace {
		r.trace("((  " + arithString(c.X) + "  ))")
	}
}

// expandPrompt expands parameters and substitutions in PS4.
func (r *runner) expandPrompt(s string) (out string) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(fatal); !ok {
				panic(p)
			}
			r.exiting = false
			out = s
		}
	}()
	w, err := syntax.NewParser().Document(strings.NewReader(s))
	if err != nil {
		return s
	}
	saved := r.xtrace
	r.xtrace = false
	defer func() { r.xtrace = saved }()
	return r.heredocBody(w)
}

// arithString prints an arithmetic expression with single spaces around
// binary operators.
func arithString(x syntax.ArithmExpr) string {
	switch x := x.(type) {
	case *syntax.Word:
		var sb strings.Builder
		_ = syntax.NewPrinter().Print(&sb, x)
		return sb.String()
	case *syntax.BinaryArithm:
		if x.Op == syntax.Comma {
			return arithString(x.X) + ", " + arithString(x.Y)
		}
		return arithString(x.X) + " " + x.Op.String() + " " + arithString(x.Y)
	case *syntax.UnaryArithm:
		if x.Post {
			return arithString(x.X) + x.Op.String()
		}
		return x.Op.String() + arithString(x.X)
	case *syntax.ParenArithm:
		return "(" + arithString(x.X) + ")"
	}
	return ""
}

// quoteFields quotes each word as set -x prints it.
func quoteFields(fs []string) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = quoteTrace(f)
	}
	return out
}

// quoteTrace quotes s the way bash's xtrace does: unchanged when safe.
func quoteTrace(s string) string {
	if s == "" {
		return "''"
	}
	if needsANSI(s) {
		return ansiQuote(s)
	}
	safe := true
	for _, c := range s {
		if !traceSafe(c) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func traceSafe(c rune) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	if c >= utf8.RuneSelf {
		return true
	}
	return strings.ContainsRune("_-+./:=%@,^", c)
}

func needsANSI(s string) bool {
	for _, c := range s {
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
			return true
		}
	}
	return false
}

// shellQuote is ${x@Q}: always single-quoted, $'...' for control bytes
// (newline and tab included).
func shellQuote(s string) string {
	if needsANSI(s) || strings.ContainsAny(s, "\t\n") {
		return ansiQuote(s)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ansiQuote produces $'...' with C escapes.
func ansiQuote(s string) string {
	var sb strings.Builder
	sb.WriteString("$'")
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\a':
			sb.WriteString(`\a`)
		case '\b':
			sb.WriteString(`\b`)
		case '\t':
			sb.WriteString(`\t`)
		case '\n':
			sb.WriteString(`\n`)
		case '\v':
			sb.WriteString(`\v`)
		case '\f':
			sb.WriteString(`\f`)
		case '\r':
			sb.WriteString(`\r`)
		case 0x1b:
			sb.WriteString(`\E`)
		case '\'':
			sb.WriteString(`\'`)
		case '\\':
			sb.WriteString(`\\`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&sb, "\\%03o", c)
			} else {
				sb.WriteByte(c)
			}
		}
	}
	sb.WriteByte('\'')
	return sb.String()
}

// printfQuote is printf %q: backslash-escaped, ” for empty, $'...' for
// control characters.
func printfQuote(s string) string {
	if s == "" {
		return "''"
	}
	if needsANSI(s) || strings.ContainsAny(s, "\t\n") {
		return ansiQuote(s)
	}
	var sb strings.Builder
	prev := rune(0)
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
		case c >= utf8.RuneSelf && unicode.IsPrint(c):
		case strings.ContainsRune("_-+./:=%@", c):
		case c == '~' && i != 0 && prev != '=' && prev != ':':
		case c == '#' && i != 0:
		default:
			sb.WriteByte('\\')
		}
		sb.WriteRune(c)
		prev = c
	}
	return sb.String()
}

// escape modes for decodeEscapes.
const (
	escapeANSI   = iota // $'...'
	escapeEcho          // echo -e
	escapePrintf        // printf format
	escapeB             // printf %b: echo -e's, plus \NNN without the 0
)

// decodeEscapes interprets backslash escapes. stop reports \c (echo -e and
// %b stop all output there).
func decodeEscapes(s string, mode int) (out string, stop bool) {
	if !strings.Contains(s, "\\") {
		return s, false
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'a':
			sb.WriteByte('\a')
		case 'b':
			sb.WriteByte('\b')
		case 'e', 'E':
			sb.WriteByte(0x1b)
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'v':
			sb.WriteByte('\v')
		case '\\':
			sb.WriteByte('\\')
		case '\'':
			if mode == escapeANSI {
				sb.WriteByte('\'')
			} else {
				sb.WriteString(`\'`)
			}
		case '"':
			if mode == escapeANSI || mode == escapePrintf {
				sb.WriteByte('"')
			} else {
				sb.WriteString(`\"`)
			}
		case '?':
			if mode == escapeANSI {
				sb.WriteByte('?')
			} else {
				sb.WriteString(`\?`)
			}
		case 'c':
			if mode == escapeEcho || mode == escapeB {
				return sb.String(), true
			}
			if mode == escapeANSI && i+1 < len(s) {
				i++
				sb.WriteByte(s[i] & 0x1f)
				continue
			}
			sb.WriteString(`\c`)
		case 'x':
			n, l := hexDigits(s[i+1:], 2)
			if l == 0 {
				sb.WriteString(`\x`)
				continue
			}
			sb.WriteByte(byte(n))
			i += l
		case 'u', 'U':
			max := 4
			if s[i] == 'U' {
				max = 8
			}
			n, l := hexDigits(s[i+1:], max)
			if l == 0 {
				sb.WriteByte('\\')
				sb.WriteByte(s[i])
				continue
			}
			sb.WriteRune(rune(n))
			i += l
		case '0', '1', '2', '3', '4', '5', '6', '7':
			max := 3
			start := i
			if (mode == escapeEcho || mode == escapeB) && s[i] == '0' {
				// echo -e: \0nnn, up to three digits after the 0.
				start = i + 1
			} else if mode == escapeEcho {
				sb.WriteByte('\\')
				sb.WriteByte(s[i])
				continue
			}
			n, l := 0, 0
			for l < max && start+l < len(s) && s[start+l] >= '0' && s[start+l] <= '7' {
				n = n*8 + int(s[start+l]-'0')
				l++
			}
			sb.WriteByte(byte(n))
			i = start + l - 1
		default:
			sb.WriteByte('\\')
			sb.WriteByte(s[i])
		}
	}
	return sb.String(), false
}

func hexDigits(s string, max int) (int, int) {
	n, l := 0, 0
	for l < max && l < len(s) {
		c := s[l]
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case c >= 'a' && c <= 'f':
			d = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = int(c-'A') + 10
		default:
			return n, l
		}
		n = n*16 + d
		l++
	}
	return n, l
}
