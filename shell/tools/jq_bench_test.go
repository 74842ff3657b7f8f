package tools

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// BenchmarkJQNames compares jq '.[] | .name' over a 1 MB JSON array run
// in-process through the tool with Debian's jq 1.6 started by fork+exec.
func BenchmarkJQNames(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("[")
	for i := 0; sb.Len() < 1<<20; i++ {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"id":%d,"name":"item-%d","tags":["a","b"],"score":%d.5,"active":true}`, i, i, i%97)
	}
	sb.WriteString("]")
	root := b.TempDir()
	ws := filepath.Join(root, "workspace")
	os.MkdirAll(ws, 0o755)
	file := filepath.Join(ws, "big.json")
	if err := os.WriteFile(file, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	want, err := exec.Command("jq", ".[] | .name", file).Output()
	if err != nil {
		b.Skipf("jq: %v", err)
	}
	b.Run("rung", func(b *testing.B) {
		view, err := storage.OpenRoot(root)
		if err != nil {
			b.Fatal(err)
		}
		defer view.Close()
		b.ReportAllocs()
		for b.Loop() {
			var out, errb bytes.Buffer
			c := &shell.Call{Args: []string{"jq", ".[] | .name", "big.json"}, Stdin: strings.NewReader(""),
				Stdout: &out, Stderr: &errb, Dir: "/workspace", FS: view}
			if st := runJQ(b.Context(), c); st != 0 || !bytes.Equal(out.Bytes(), want) {
				b.Fatalf("status %d, stderr %q, output differs", st, errb.String())
			}
		}
	})
	b.Run("jq", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := exec.Command("jq", ".[] | .name", file).Output(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
