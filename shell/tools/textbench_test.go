package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// BenchmarkText compares the hot text tools, run in-process on a
// storage.Root, with GNU's binaries started by fork+exec, on a 200-line
// and a 100,000-line file. Each sub-benchmark reports p50 and p99.
func BenchmarkText(b *testing.B) {
	for _, lines := range []int{200, 100000} {
		root := b.TempDir()
		ws := filepath.Join(root, "workspace")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			b.Fatal(err)
		}
		var data strings.Builder
		for i := range lines {
			fmt.Fprintf(&data, "%d word%d some text here %d\n", (i*7919)%1000, i%37, i)
		}
		if err := os.WriteFile(filepath.Join(ws, "f"), []byte(data.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		view, err := storage.OpenRoot(root)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { view.Close() })
		for _, argv := range [][]string{{"sort", "f"}, {"sort", "-n", "f"}, {"uniq", "-c", "f"}, {"wc", "f"}, {"head", "f"}} {
			name := fmt.Sprintf("%s/%d", strings.Join(argv, "_"), lines)
			b.Run(name+"/isolate", func(b *testing.B) {
				tool := tools[argv[0]]
				var out bytes.Buffer
				runBench(b, func() {
					out.Reset()
					c := &shell.Call{Args: argv, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out,
						Dir: "/workspace", FS: view, Env: []string{"LC_ALL=C.UTF-8"}}
					if st := tool.Run(context.Background(), c); st != 0 {
						b.Fatalf("%v: status %d: %s", argv, st, out.String())
					}
				})
			})
			b.Run(name+"/gnu", func(b *testing.B) {
				runBench(b, func() {
					cmd := exec.Command(argv[0], argv[1:]...)
					cmd.Dir = ws
					cmd.Env = []string{"LC_ALL=C.UTF-8"}
					if err := cmd.Run(); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

func runBench(b *testing.B, fn func()) {
	b.ReportAllocs()
	var samples []time.Duration
	for b.Loop() {
		t0 := time.Now()
		fn()
		samples = append(samples, time.Since(t0))
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	if n := len(samples); n > 0 {
		b.ReportMetric(float64(samples[n/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(samples[min(n-1, n*99/100)].Microseconds()), "p99-µs")
	}
}
