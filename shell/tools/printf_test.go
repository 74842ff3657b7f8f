package tools

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPrintf(t *testing.T) {
	t.Parallel()
	p := func(name string, args ...string) toolCase {
		return toolCase{name: name, args: append([]string{"printf"}, args...)}
	}
	runDiff(t, []toolCase{
		p("plain", `hello\n`),
		p("s-reuse", `%s-%s\n`, "a", "b", "c"),
		p("excess", `x\n`, "a"),
		p("d", `%d %i\n`, "42", "-7"),
		p("d-partial", `%d\n`, "12abc"),
		p("d-bad", `%d\n`, "abc"),
		p("d-char", `%d %d\n`, "'A", `"é`),
		p("d-hex-oct", `%d %d\n`, "0x1f", "010"),
		p("d-overflow", `%d\n`, "999999999999999999999"),
		p("d-neg-overflow", `%d\n`, "-999999999999999999999"),
		p("u-neg", `%u %x\n`, "-1", "-1"),
		p("widths", `[%5d][%-5d][%05d][%+d][% d][%.3d]\n`, "1", "2", "-3", "4", "5", "6"),
		p("star", `[%*d][%-*s][%.*f]\n`, "4", "1", "3", "a", "2", "3.14159"),
		p("star-neg", `[%*d]\n`, "-4", "1"),
		p("hex", `%x %X %#x %#o %o\n`, "255", "255", "255", "8", "8"),
		p("floats", `%f %.2f %e %E %g %G\n`, "3.14159", "2.675", "1234.5", "0.00012", "100000", "1e-5"),
		p("g-forms", `%g %g %g %g %g %#g\n`, "1000000", "123456789", "0.0001", "0.00001", "1.5", "1"),
		p("float-round", `%.0f %.0f %.0f %.1f %.20f\n`, "0.5", "1.5", "2.5", "0.25", "0.1"),
		p("float-inf", `%f %e %g %5.1f\n`, "inf", "-inf", "nan", "-0"),
		p("float-hex", `%f\n`, "0x1p4"),
		p("float-bad", `%f\n`, "1.5x"),
		p("float-long", `%.30f\n`, "1e-10"),
		p("float-big", `%f %e\n`, "1e300", "1.7976931348623157e308"),
		p("c", `%c%c%c\n`, "hello", "", "é"),
		p("s-prec", `[%.2s][%5.1s][%-6s]\n`, "hello", "xyz", "ab"),
		p("b", `%b\n`, `a\tb\0101\101\x41\\z`),
		p("b-c", `%b%s\n`, `stop\cnow`, "never"),
		p("escapes", `\a\b\e\f\r\t\v\\\"\101\x41\u00e9\U0001F600\n`),
		p("escape-c", `ab\cde`),
		p("percent", `100%%\n`),
		p("q", `%q %q %q %q\n`, "a b", "it's", "", "plain"),
		p("q-ctrl", `%q %q %q\n`, "a\nb", "\x01", "tab\t"),
		p("q-special", `%q %q %q %q %q %q\n`, "a=b", "~x", "x~", "#x", "$x", "a\"b"),
		p("q-dq", `%q %q\n`, "a'b'c", "it's!"),
		p("missing-args", `%s|%d|%f|%c|\n`),
		p("no-conv-args", `hi\n`, "x", "y"),
		p("invalid", `%z\n`, "1"),
		p("invalid-end", `abc%`),
		p("missing-operand"),
		p("long-mod", `%ld %lld %hd %Lf %jd\n`, "1", "2", "3", "4", "5"),
		p("dash-dash", "--", `%s\n`, "x"),
		p("space-num", `%d\n`, " 12"),
		p("plus-num", `%d %f\n`, "+5", "+2.5"),
		p("empty-num", `%d|%f\n`, "", ""),
		p("big-prec", `%.50f\n`, "2"),
		p("e-small", `%e %e\n`, "0", "1e-310"),
		p("trailing-backslash", `ab\`),
		p("unknown-escape", `\q\n`),
		p("x-no-digits", `\xg`),
	})
}

func TestEcho(t *testing.T) {
	t.Parallel()
	e := func(name string, args ...string) toolCase {
		return toolCase{name: name, args: append([]string{"echo"}, args...)}
	}
	runDiff(t, []toolCase{
		e("plain", "hello", "world"),
		e("none"),
		e("n", "-n", "x"),
		e("e", "-e", `a\tb\nc`),
		e("E", "-E", `a\tb`),
		e("eE", "-eE", `a\tb`),
		e("e-octal", "-e", `\0101\101\060x`),
		e("e-hex", "-e", `\x41\x4g\xzz`),
		e("e-c", "-e", `ab\cde`, "more"),
		e("e-escape-e", "-e", `\e[0m\a\b\f\v\r\\`),
		e("not-opt", "-x", "y"),
		e("dash", "-"),
		e("double-dash", "--", "x"),
		e("n-later", "a", "-n"),
		e("ne", "-ne", `x\n`),
		e("nn", "-n", "-n", "x"),
		e("unknown-esc", "-e", `\q\u00e9`),
		e("empty-args", "", "", "x"),
	})
}

func TestTestTool(t *testing.T) {
	t.Parallel()
	files := map[string]string{"f": "data", "empty": "", "d/": ""}
	setup := func(t *testing.T, dir string) {
		if err := os.Symlink("f", filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("nope", filepath.Join(dir, "dangling")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "exe"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tc := func(name string, args ...string) toolCase {
		return toolCase{name: name, args: append([]string{"test"}, args...), files: files, setup: setup}
	}
	br := func(name string, args ...string) toolCase {
		return toolCase{name: name, args: append([]string{"["}, args...), files: files, setup: setup}
	}
	runDiff(t, []toolCase{
		tc("none"),
		tc("one", "x"),
		tc("one-empty", ""),
		tc("not", "!", "x"),
		tc("not-empty", "!", ""),
		tc("z", "-z", ""),
		tc("n", "-n", "x"),
		tc("eq-str", "a", "=", "a"),
		tc("eq-str2", "a", "==", "b"),
		tc("ne-str", "a", "!=", "b"),
		tc("lt-str", "a", "<", "b"),
		tc("gt-str", "a", ">", "b"),
		tc("eq", "10", "-eq", "010"),
		tc("ne", "1", "-ne", "2"),
		tc("lt", "-5", "-lt", "3"),
		tc("le", "3", "-le", "3"),
		tc("gt", "99999999999999999999999", "-gt", "1"),
		tc("ge", " 4", "-ge", "+4"),
		tc("bad-int", "x", "-eq", "1"),
		tc("f", "-f", "f"),
		tc("f-dir", "-f", "d"),
		tc("d", "-d", "d"),
		tc("e", "-e", "nope"),
		tc("s", "-s", "f"),
		tc("s-empty", "-s", "empty"),
		tc("h", "-h", "link"),
		tc("L-dangling", "-L", "dangling"),
		tc("e-dangling", "-e", "dangling"),
		tc("x", "-x", "exe"),
		tc("x-no", "-x", "f"),
		tc("r", "-r", "f"),
		tc("w", "-w", "f"),
		tc("p", "-p", "f"),
		tc("t", "-t", "1"),
		tc("and", "-f", "f", "-a", "-d", "d"),
		tc("or", "-f", "nope", "-o", "-d", "d"),
		tc("paren", "(", "x", ")"),
		tc("paren4", "(", "-n", "x", ")"),
		tc("not3", "!", "a", "=", "b"),
		tc("complex", "!", "(", "-f", "f", "-a", "-f", "nope", ")", "-o", "x", "=", "y"),
		tc("unary-expected", "a", "b"),
		tc("binary-expected", "a", "b", "c"),
		tc("missing-paren", "(", "a", "-a", "b", "c", "d"),
		tc("nt", "f", "-nt", "nope"),
		tc("ot", "nope", "-ot", "f"),
		tc("ef", "f", "-ef", "link"),
		tc("a3", "x", "-a", ""),
		tc("o3", "", "-o", "x"),
		tc("dash-str", "-x"),
		br("bracket", "-f", "f", "]"),
		br("bracket-missing", "-f", "f"),
		br("bracket-empty", "]"),
		br("bracket-str", "a", "=", "a", "]"),
	})
}
