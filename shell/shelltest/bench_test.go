package shelltest_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/shell"
	"rung.dev/rung/shell/shelltest"
	"rung.dev/rung/shell/tools"
	"rung.dev/rung/storage"
	"rung.dev/rung/storage/storagetest"
)

// benchRoot makes a sandbox root on tmpfs (/dev/shm) when there is one.
func benchRoot(b *testing.B, files map[string]string) string {
	b.Helper()
	base := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "rung-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if err := shelltest.Setup(dir, files); err != nil {
		b.Fatal(err)
	}
	return dir
}

// benchIsolate times script in sh, after one untimed run that must
// succeed (else the benchmark is skipped: a tool is missing).
func benchIsolate(b *testing.B, sh *shell.Shell, script string) {
	if res := sh.Run(b.Context(), shell.Request{Script: script}); res.ExitCode != 0 {
		b.Skipf("script fails in the isolate tier (exit %d, %v): a tool is missing", res.ExitCode, res.Unsupported)
	}
	b.ReportAllocs()
	var d []time.Duration
	for b.Loop() {
		start := time.Now()
		sh.Run(b.Context(), shell.Request{Script: script, Stdout: io.Discard})
		d = append(d, time.Since(start))
	}
	reportPercentiles(b, d)
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkScripts runs the same scripts in the interpreter and in real
// bash (fork+exec, files on tmpfs), side by side.
func BenchmarkScripts(b *testing.B) {
	var lines strings.Builder
	for i := range 200 {
		fmt.Fprintf(&lines, "line %d %s\n", i%37, strings.Repeat("x", i%5))
	}
	small := map[string]string{"hello.txt": "hello world\n", "a.go": "package a\n", "b.md": "# b\n", "src/c.txt": "c\n"}
	cases := []struct {
		name, script string
		files        map[string]string
	}{
		{"cat-ls", "cat hello.txt && ls -la", small},
		{"pipeline", "cat f | grep x | sort | uniq -c | head", map[string]string{"f": lines.String()}},
		{"builtins", "for i in 1 2 3 4 5; do x=$((i*2)); echo \"$x\"; done", nil},
	}
	all := tools.All()
	for _, tc := range cases {
		b.Run(tc.name+"/isolate", func(b *testing.B) {
			dir := benchRoot(b, tc.files)
			root, err := storage.OpenRoot(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer root.Close()
			benchIsolate(b, shell.New(shell.Config{FS: root, Tools: all}), tc.script)
		})
		// The same on a sandbox of a real pool (btrfs, nodev), as in production.
		b.Run(tc.name+"/isolate-pool", func(b *testing.B) {
			pool := storagetest.NewTestPool(b)
			name := string(rung.NewSandboxID())
			if err := pool.Create(b.Context(), name); err != nil {
				b.Fatal(err)
			}
			if err := shelltest.Setup(filepath.Join(pool.Path(name), "fs"), tc.files); err != nil {
				b.Fatal(err)
			}
			root, err := pool.Root(name)
			if err != nil {
				b.Fatal(err)
			}
			defer root.Close()
			benchIsolate(b, shell.New(shell.Config{FS: root, Tools: all}), tc.script)
		})
		b.Run(tc.name+"/bash", func(b *testing.B) {
			dir := benchRoot(b, tc.files)
			ws := filepath.Join(dir, "workspace")
			b.ReportAllocs()
			var d []time.Duration
			for b.Loop() {
				start := time.Now()
				cmd := exec.Command("bash", "-c", tc.script)
				cmd.Dir = ws
				cmd.Stdout = io.Discard
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				d = append(d, time.Since(start))
			}
			reportPercentiles(b, d)
		})
	}
}
