package shell_test

import (
	"fmt"

	"rung.dev/rung/shell/shelltest"
)

// group makes cases named group/NN from scripts.
func group(name string, scripts ...string) []shelltest.Case {
	out := make([]shelltest.Case, len(scripts))
	for i, s := range scripts {
		out[i] = shelltest.Case{Name: fmt.Sprintf("%s/%02d", name, i), Script: s}
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
