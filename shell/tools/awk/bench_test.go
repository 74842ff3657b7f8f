package awk

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkSum compares awk '{s+=$2} END {print s}' over 100,000 lines
// in-process with mawk started by fork+exec on the same file.
func BenchmarkSum(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&sb, "row%d %d %s\n", i, i%1000, "some trailing words here")
	}
	data := sb.String()
	dir := b.TempDir()
	file := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		b.Fatal(err)
	}
	prog := "{s+=$2} END {print s}"
	b.Run("rung", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out bytes.Buffer
			env := hostEnv(dir, strings.NewReader(""), &out, io.Discard)
			if st := Main(b.Context(), env, []string{prog, "in.txt"}); st != 0 || out.String() != "49950000\n" {
				b.Fatalf("status %d output %q", st, out.String())
			}
		}
	})
	b.Run("mawk", func(b *testing.B) {
		if _, err := exec.LookPath("mawk"); err != nil {
			b.Skip("mawk not installed")
		}
		b.ReportAllocs()
		for b.Loop() {
			out, err := exec.Command("mawk", prog, file).Output()
			if err != nil || string(out) != "49950000\n" {
				b.Fatalf("%v %q", err, out)
			}
		}
	})
}
