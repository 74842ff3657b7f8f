package shell_test

import (
	"fmt"

	"rung.dev/rung/shell/shelltest"
)

// known lists the scripts where the interpreter knowingly differs from
// bash, with the reason; they still run, and a difference is logged.
var known = map[string]string{
	"(( 1 + )); echo \"rc=$?\"":        "mvdan/sh rejects the incomplete arithmetic at parse time; bash fails the command at run time and goes on",
	"echo hi > ../escape.txt; echo $?": "the file view holds /workspace and /tmp only: a write above them is refused (Result.Unsupported; auto sends the script to the container), where this harness's bash writes the host's /",
}

// group makes cases named group/NN from scripts.
func group(name string, scripts ...string) []shelltest.Case {
	out := make([]shelltest.Case, len(scripts))
	for i, s := range scripts {
		out[i] = shelltest.Case{Name: fmt.Sprintf("%s/%02d", name, i), Script: s, Known: known[s]}
	}
	return out
}

// withFiles gives every case the same workspace files.
func withFiles(files map[string]string, cases []shelltest.Case) []shelltest.Case {
	for i := range cases {
		cases[i].Files = files
	}
	return cases
}

// withStdin gives every case the same standard input.
func withStdin(stdin string, cases []shelltest.Case) []shelltest.Case {
	for i := range cases {
		cases[i].Stdin = stdin
	}
	return cases
}
