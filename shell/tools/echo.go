package tools

import (
	"context"

	"rung.dev/rung/shell"
)

// echo, true and false as coreutils' /usr/bin programs (for env, xargs and
// find -exec; the interpreter has builtins of the same names).

func runTrue(context.Context, *shell.Call) int  { return 0 }
func runFalse(context.Context, *shell.Call) int { return 1 }

// trueCheck refuses --help/--version, which GNU true answers with text.
func trueCheck(args []string) error {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "--version") {
		return errUnsupportedf("option %s", args[0])
	}
	return nil
}

func echoCheck(args []string) error { return trueCheck(args) }

func runEcho(ctx context.Context, c *shell.Call) int {
	args := c.Args[1:]
	if err := echoCheck(args); err != nil {
		return c.Fail("option " + args[0])
	}
	newline, escapes := true, false
	for len(args) > 0 {
		a := args[0]
		if len(a) < 2 || a[0] != '-' || !echoOptsOnly(a[1:]) {
			break
		}
		for _, f := range a[1:] {
			switch f {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		args = args[1:]
	}
	out := newTxOut(c.Stdout)
	for i, a := range args {
		if i > 0 {
			out.WriteByte(' ')
		}
		if !escapes {
			out.WriteString(a)
			continue
		}
		if echoEscapes(out, a) {
			out.Flush()
			return 0
		}
	}
	if newline {
		out.WriteByte('\n')
	}
	if out.Flush() != nil {
		return 1
	}
	return 0
}

func echoOptsOnly(s string) bool {
	for _, c := range s {
		if c != 'n' && c != 'e' && c != 'E' {
			return false
		}
	}
	return true
}

// echoEscapes writes s with echo -e's escapes; true means \c was met.
func echoEscapes(out *txOut, s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			out.WriteByte(s[i])
			continue
		}
		i++
		c := s[i]
		switch c {
		case 'a':
			out.WriteByte(7)
		case 'b':
			out.WriteByte(8)
		case 'c':
			return true
		case 'e':
			out.WriteByte(27)
		case 'f':
			out.WriteByte(12)
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'v':
			out.WriteByte(11)
		case '\\':
			out.WriteByte('\\')
		case 'x':
			if i+1 < len(s) && isHex(s[i+1]) {
				v := hexVal(s[i+1])
				i++
				if i+1 < len(s) && isHex(s[i+1]) {
					v = v*16 + hexVal(s[i+1])
					i++
				}
				out.WriteByte(byte(v))
			} else {
				out.WriteString(`\x`)
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			if c == '0' {
				j = i + 1 // \0NNN: the 0 does not count as a digit
			}
			v, end := 0, j+3
			for j < len(s) && j < end && s[j] >= '0' && s[j] <= '7' {
				v = v*8 + int(s[j]-'0')
				j++
			}
			out.WriteByte(byte(v))
			i = j - 1
		default:
			out.WriteByte('\\')
			out.WriteByte(c)
		}
	}
	return false
}
