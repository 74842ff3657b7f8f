package shell_test

import (
	"io"
	"testing"

	"rung.dev/rung/shell"
)

// BenchmarkRun measures builtin-only scripts through the interpreter
// (the side-by-side comparison with bash and tools lives in shelltest).
func BenchmarkRun(b *testing.B) {
	for _, bc := range []struct{ name, script string }{
		{"echo", "echo hello"},
		{"loop", "for i in 1 2 3 4 5; do x=$((i*2)); echo \"$x\"; done"},
		{"pipeline", "echo a | while read l; do echo $l; done | { read x; echo $x; }"},
		{"subst", "x=$(echo hi); y=${x^^}; echo $y"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			sh := newShell(b, shell.Config{})
			b.ReportAllocs()
			for b.Loop() {
				sh.Run(b.Context(), shell.Request{Script: bc.script, Stdout: io.Discard})
			}
		})
	}
}
