package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// srchBenchTree writes a 5,000-file source tree (250 directories of 20 files
// of about 3 KB) under root/workspace on tmpfs when /dev/shm exists.
func srchBenchTree(b *testing.B) string {
	b.Helper()
	base := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	root, err := os.MkdirTemp(base, "rung-search-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	ws := filepath.Join(root, "workspace")
	var sb strings.Builder
	for i := range 60 {
		fmt.Fprintf(&sb, "func handler%d(ctx context.Context, req *Request) (*Response, error) {\n", i)
	}
	body := sb.String()
	for d := range 250 {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%03d", d/25), fmt.Sprintf("mod%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 20 {
			text := body
			if (d*20+f)%50 == 0 {
				text += "\t// TODO_NEEDLE: fix this\n"
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%02d.go", f)), []byte(text), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	os.MkdirAll(filepath.Join(root, "tmp"), 0o755)
	return root
}

func srchBenchTool(b *testing.B, view storage.FS, dir string, stdin []byte, args ...string) {
	var out bytes.Buffer
	c := &shell.Call{Args: args, Stdin: bytes.NewReader(stdin), Stdout: &out, Stderr: io.Discard, Dir: dir, FS: view}
	c.Exec = func(ctx context.Context, sub *shell.Call) int { return execTool(ctx, sub) }
	if st := execTool(context.Background(), c); st > 1 {
		b.Fatalf("%v: status %d", args, st)
	}
}

func srchBenchGNU(b *testing.B, dir string, stdin []byte, args ...string) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"LC_ALL=C.UTF-8"}
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout = io.Discard
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 1 {
			b.Fatal(err)
		}
	}
}

// BenchmarkGrepTree is grep -rn over 5,000 files: ours on a storage.Root
// against GNU grep (fork+exec) on the same tree.
func BenchmarkGrepTree(b *testing.B) {
	root := srchBenchTree(b)
	view, err := storage.OpenRoot(root)
	if err != nil {
		b.Fatal(err)
	}
	defer view.Close()
	for _, pat := range []string{"TODO_NEEDLE", "handler4[0-9]\\b", "-i todo_needle"} {
		args := append([]string{"grep", "-rn"}, strings.Fields(pat)...)
		args = append(args, ".")
		b.Run("isolate/"+pat, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				srchBenchTool(b, view, "/workspace", nil, args...)
			}
		})
		b.Run("gnu/"+pat, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				srchBenchGNU(b, filepath.Join(root, "workspace"), nil, args...)
			}
		})
	}
}

// BenchmarkSed100k runs sed over a 100,000-line file: ours on a
// storage.Root against GNU sed on the same file.
func BenchmarkSed100k(b *testing.B) {
	base := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	root, err := os.MkdirTemp(base, "rung-sed-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "workspace")
	os.MkdirAll(ws, 0o755)
	var sb strings.Builder
	for i := range 100000 {
		fmt.Fprintf(&sb, "line %d: the quick brown fox jumps over the lazy dog foo=%d\n", i, i%97)
	}
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	view, err := storage.OpenRoot(root)
	if err != nil {
		b.Fatal(err)
	}
	defer view.Close()
	for _, script := range [][]string{{"s/fox/cat/g"}, {"-n", "/foo=42$/p"}, {"-E", "s/([a-z]+) ([a-z]+)/\\2 \\1/"}, {"$!N;P;D"}} {
		args := append(append([]string{"sed"}, script...), "big.txt")
		name := strings.Join(script, " ")
		b.Run("isolate/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				srchBenchTool(b, view, "/workspace", nil, args...)
			}
		})
		b.Run("gnu/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				srchBenchGNU(b, ws, nil, args...)
			}
		})
	}
}
