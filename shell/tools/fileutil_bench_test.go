package tools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// fuBenchTree makes root/workspace with "flat" (n files in one
// directory) and "tree" (n files in n/100 directories of 100).
func fuBenchTree(b *testing.B, n int) string {
	b.Helper()
	root := b.TempDir()
	ws := filepath.Join(root, "workspace")
	for i := 0; i < n; i++ {
		for _, p := range []string{
			filepath.Join(ws, "flat", fmt.Sprintf("file%05d.txt", i)),
			filepath.Join(ws, "tree", fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%03d.go", i%100)),
		} {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("package x\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	os.MkdirAll(filepath.Join(root, "tmp"), 0o755)
	return root
}

func fuBenchOurs(b *testing.B, root string, args ...string) {
	view, err := storage.OpenRoot(root)
	if err != nil {
		b.Fatal(err)
	}
	defer view.Close()
	tools := All()
	b.ReportAllocs()
	for b.Loop() {
		c := &shell.Call{Args: args, Stdin: bytes.NewReader(nil), Stdout: io.Discard, Stderr: io.Discard,
			Dir: "/workspace", FS: view, Env: []string{"TZ=UTC"}}
		if st := tools[args[0]].Run(context.Background(), c); st != 0 {
			b.Fatalf("%q = %d", args, st)
		}
	}
}

func fuBenchGNU(b *testing.B, root string, args ...string) {
	b.ReportAllocs()
	for b.Loop() {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = filepath.Join(root, "workspace")
		cmd.Env = []string{"LC_ALL=C.UTF-8", "TZ=UTC"}
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatalf("%q: %v", args, err)
		}
	}
}

// BenchmarkFilesTools runs ls -la, ls -R, du -s and cp -r over 5,000
// files through our tools and through GNU (fork+exec), side by side.
func BenchmarkFilesTools(b *testing.B) {
	root := fuBenchTree(b, 5000)
	for _, args := range [][]string{
		{"ls", "-la", "flat"},
		{"ls", "-R", "tree"},
		{"du", "-s", "tree"},
		{"du", "-a", "tree"},
		{"stat", "flat/file00001.txt"},
	} {
		name := fmt.Sprint(args)
		b.Run(name+"/isolate", func(b *testing.B) { fuBenchOurs(b, root, args...) })
		b.Run(name+"/gnu", func(b *testing.B) { fuBenchGNU(b, root, args...) })
	}
	// cp -r then rm -r, so each iteration starts from the same state.
	b.Run("cp-r-rm-r/isolate", func(b *testing.B) {
		view, err := storage.OpenRoot(root)
		if err != nil {
			b.Fatal(err)
		}
		defer view.Close()
		tools := All()
		b.ReportAllocs()
		for b.Loop() {
			for _, args := range [][]string{{"cp", "-r", "tree", "copy"}, {"rm", "-r", "copy"}} {
				c := &shell.Call{Args: args, Stdin: bytes.NewReader(nil), Stdout: io.Discard, Stderr: io.Discard,
					Dir: "/workspace", FS: view}
				if st := tools[args[0]].Run(context.Background(), c); st != 0 {
					b.Fatalf("%q = %d", args, st)
				}
			}
		}
	})
	b.Run("cp-r-rm-r/gnu", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, args := range [][]string{{"cp", "-r", "tree", "copy"}, {"rm", "-r", "copy"}} {
				cmd := exec.Command(args[0], args[1:]...)
				cmd.Dir = filepath.Join(root, "workspace")
				if err := cmd.Run(); err != nil {
					b.Fatalf("%q: %v", args, err)
				}
			}
		}
	})
}
