package shell_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"rung.dev/rung/shell"
	"rung.dev/rung/shell/tools"
	"rung.dev/rung/storage"
)

// benchShell returns a shell over a fresh root on tmpfs (when there is
// one) holding the cat-ls files, with the full tool set.
func benchShell(b *testing.B, cfg shell.Config, sched bool) *shell.Shell {
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
	var lines strings.Builder
	for i := range 200 {
		fmt.Fprintf(&lines, "line %d %s\n", i%37, strings.Repeat("x", i%5))
	}
	for name, body := range map[string]string{"workspace/f": lines.String(), "workspace/hello.txt": "hello world\n", "workspace/a.go": "package a\n", "workspace/b.md": "# b\n", "workspace/src/c.txt": "c\n", "tmp/": ""} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if body != "" {
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	root, err := storage.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { root.Close() })
	cfg.FS, cfg.Tools = root, tools.All()
	if !sched {
		return shell.NewWithoutScheduler(cfg)
	}
	return shell.New(cfg)
}

// timeRuns runs req in sh for each b.Loop and reports p50 and p99.
func timeRuns(b *testing.B, sh *shell.Shell, req shell.Request, want string) {
	var d []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		var out bytesWriter
		req.Stdout = &out
		start := time.Now()
		res := sh.Run(b.Context(), req)
		d = append(d, time.Since(start))
		if want != "" && (res.ExitCode != 0 || string(out) != want) {
			b.Fatalf("Run(%q) = %+v, %q; want %q", req.Script, res, out, want)
		}
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1e3, "p99-µs")
}

type bytesWriter []byte

func (w *bytesWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }

// BenchmarkSchedOverhead is what the scheduler adds to a normal exec:
// cat-ls with a scheduler of its own (uncontended, as on an idle daemon)
// and without any. On a noisy machine the two sub-benchmarks drift apart
// by more than the difference; "paired" alternates the two in one loop,
// so both see the same noise, and reports the difference of their p50s.
func BenchmarkSchedOverhead(b *testing.B) {
	const script = "cat hello.txt && ls -la"
	for _, sched := range []bool{true, false} {
		b.Run(map[bool]string{true: "sched", false: "nosched"}[sched], func(b *testing.B) {
			sh := benchShell(b, shell.Config{Sched: shell.NewScheduler(shell.SchedulerConfig{})}, sched)
			timeRuns(b, sh, shell.Request{Script: script}, "")
		})
	}
	b.Run("paired", func(b *testing.B) { pairedRuns(b, script) })
	b.Run("paired-pipeline", func(b *testing.B) { pairedRuns(b, "cat f | grep x | sort | uniq -c | head") })
	b.Run("paired-uniq", func(b *testing.B) { pairedRuns(b, "cat f | uniq -c") })
	b.Run("paired-sort", func(b *testing.B) { pairedRuns(b, "cat f | sort") })
}

// pairedRuns alternates script with and without a scheduler, and reports
// both p50s and their difference.
func pairedRuns(b *testing.B, script string) {
	{
		shells := [2]*shell.Shell{
			benchShell(b, shell.Config{Sched: shell.NewScheduler(shell.SchedulerConfig{})}, true),
			benchShell(b, shell.Config{}, false),
		}
		var d [2][]time.Duration
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			shells[i%2].Run(b.Context(), shell.Request{Script: script, Stdout: io.Discard})
			d[i%2] = append(d[i%2], time.Since(start))
		}
		p50 := func(d []time.Duration) float64 {
			slices.Sort(d)
			return float64(d[len(d)/2].Nanoseconds()) / 1e3
		}
		s, n := p50(d[0]), p50(d[1])
		b.ReportMetric(s, "sched-p50-µs")
		b.ReportMetric(n, "nosched-p50-µs")
		b.ReportMetric(s-n, "added-p50-µs")
	}
}

// BenchmarkBystander times a bystander's echo ok (its own tenant and
// sandbox) while N CPU bombs of another tenant run, each in its own
// sandbox: with the scheduler (its default slots: GOMAXPROCS less one),
// and, for comparison, with every exec outside it (the Go runtime alone
// sharing the CPUs).
func BenchmarkBystander(b *testing.B) {
	for _, tc := range []struct {
		bombs int
		sched bool
	}{{0, true}, {4, true}, {16, true}, {4, false}, {16, false}} {
		b.Run(fmt.Sprintf("%s/bombs=%d", map[bool]string{true: "sched", false: "nosched"}[tc.sched], tc.bombs), func(b *testing.B) {
			sched := shell.NewScheduler(shell.SchedulerConfig{})
			lim := shell.Limits{Commands: 1 << 60, LoopIterations: 1 << 60, CPUTime: time.Hour}
			ctx, cancel := context.WithCancel(b.Context())
			var wg sync.WaitGroup
			for i := range tc.bombs {
				sh := benchShell(b, shell.Config{Sched: sched, Limits: lim}, tc.sched)
				wg.Go(func() {
					sh.Run(ctx, shell.Request{Script: "while :; do :; done", Tenant: "bomber", Sandbox: fmt.Sprint("s", i), Stdout: io.Discard})
				})
			}
			sh := benchShell(b, shell.Config{Sched: sched}, tc.sched)
			timeRuns(b, sh, shell.Request{Script: "echo ok", Tenant: "bystander", Sandbox: "q"}, "ok\n")
			cancel()
			wg.Wait()
		})
	}
}
