package shell_test

import (
	"testing"

	"rung.dev/rung/shell/shelltest"
)

// syntaxErrorScripts are scripts bash rejects while parsing (or, for a
// ${...} that is no expansion, when expanding): their stderr must read
// as bash's, byte for byte, with the same status and the lines before
// the error run.
var syntaxErrorScripts = []string{
	"if true; then echo x",
	"echo a\nif true; then echo x",
	"echo a\nif true; then echo x\n",
	"while true; do echo x",
	"for i in 1 2; do echo $i",
	"case x in",
	"{ echo a }",
	"echo a |",
	"echo a |\n\n",
	"echo a &&",
	"echo a ||",
	"echo $(unterminated",
	"echo a\necho $(unterminated",
	`echo "unterminated`,
	"echo \"unterm\nfoo",
	`echo 'unterminated`,
	"echo `unterminated",
	"echo ${x; echo after",
	"x=1\necho ${x",
	"echo ${x!}; echo after",
	"echo ${:-x}",
	"echo ${1x}",
	"echo ${#x[}",
	"a=(1 2); echo ${a[}",
	"if true then echo x; fi",
	"while true do echo; done",
	"f() { echo x; ; }",
	"}",
	"done",
	"fi",
	"then",
	"esac",
	")",
	"| echo",
	"&& echo",
	"; echo",
	";;",
	"echo a ;; echo b",
	"echo a & & echo b",
	"echo a && && b",
	"echo a; ;",
	"echo > ; echo rc=$?",
	"cat < ; echo rc=$?",
	"echo x >",
	"echo x >> | cat",
	"cat <<",
	"echo ok\n  fi  \necho no",
	"echo one\necho two\ndone\necho three",
}

func TestSyntaxErrors(t *testing.T) {
	var cases []shelltest.Case
	for _, s := range syntaxErrorScripts {
		cases = append(cases, shelltest.Case{Name: s, Script: s, StderrExact: true})
	}
	// A script file's errors name the file instead of "bash: -c".
	for _, s := range []string{"echo a\nfi\n", "if true; then\n echo a\n", "echo \"x\n"} {
		cases = append(cases, shelltest.Case{
			Name: "file " + s, Script: "bash bad.sh; echo rc=$?", StderrExact: true,
			Files: map[string]string{"bad.sh": s},
		})
	}
	cases = append(cases,
		shelltest.Case{Name: "bash of a directory", Script: "bash d; echo rc=$?", StderrExact: true, Files: map[string]string{"d/": ""}},
		shelltest.Case{Name: "run a directory", Script: "./d; echo rc=$?; d/; echo rc=$?", StderrExact: true, Files: map[string]string{"d/": ""}},
		shelltest.Case{Name: "bash of a missing file", Script: "bash nosuch.sh; echo rc=$?", StderrExact: true},
	)
	shelltest.Run(t, cases, nil)
}

// arithErrorScripts fail while evaluating arithmetic: bash quotes the
// expression's text and, for a division by zero, the text from the
// divisor on.
var arithErrorScripts = []string{
	`echo $(( 1 / 0 ))`,
	`echo $((1/0+3)); echo after`,
	`echo $(( 4 / (2-2) ))`,
	`echo $(( 4 / (2-2) + 1))`,
	`x=0; echo $(( 5 % x ))`,
	`x=0; echo $(( 5 % x * 2 ))`,
	`x=5; (( x /= 0 )); echo "rc=$?"`,
	`(( 1 / 0 )); echo "rc=$?"`,
	`let 1/0; echo "rc=$?"`,
	`let "x = 3 / 0"; echo "rc=$?"`,
	`echo $(( (1/0) ))`,
	`a=3/0; echo $((a))`,
	`echo $(( 1 +  2 / 0  ))`,
	`x=$(( 5 / 0 )); echo "rc=$?"`,
	`eval 'echo $(( 2 / 0 ))'`,
	`echo $((1 +)); echo after`,
	`x='2 +'; echo $(( x )); echo after`,
	`declare -i n; n='1 +'; echo "rc=$?"`,
	`echo $((a b))`,
	`declare -i n; n='a b'; echo "rc=$?"`,
}

func TestArithErrors(t *testing.T) {
	var cases []shelltest.Case
	for _, s := range arithErrorScripts {
		cases = append(cases, shelltest.Case{Name: s, Script: s, StderrExact: true})
	}
	cases = append(cases, shelltest.Case{
		Name: "text after expansion", Script: `f() { echo $(( $1 / 0 )); }; f 4`, StderrExact: true,
		Known: "bash quotes the expression after expanding $1, which the interpreter does not keep: the exec is refused (Result.Unsupported)",
	})
	shelltest.Run(t, cases, nil)
}

// TestBuiltinUsageErrors compares builtins' usage errors byte for byte.
func TestBuiltinUsageErrors(t *testing.T) {
	var cases []shelltest.Case
	for _, s := range []string{
		`pwd -x; echo "rc=$?"`,
		`pwd -Lx; echo "rc=$?"`,
		`pwd -LP; echo "rc=$?"`,
		`pwd -- -x; echo "rc=$?"`,
		`logout; echo "rc=$?"`,
		`logout 3 2>&1; echo "rc=$?"`,
	} {
		cases = append(cases, shelltest.Case{Name: s, Script: s, StderrExact: true})
	}
	shelltest.Run(t, cases, nil)
}
