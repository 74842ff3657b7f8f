package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/internal/testenv"
)

func TestPercentile(t *testing.T) {
	us := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Microsecond
		}
		return d
	}
	for _, tc := range []struct {
		name string
		d    []time.Duration
		p    int
		want float64
	}{
		{"empty", nil, 50, 0},
		{"one", us(7), 99, 7},
		{"median-odd", us(5, 1, 3), 50, 3},
		{"median-even", us(4, 1, 3, 2), 50, 2},
		{"p90-of-10", us(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 90, 9},
		{"p99-of-10", us(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 99, 10},
		{"sub-µs", []time.Duration{1234 * time.Nanosecond}, 50, 1.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.d, tc.p); got != tc.want {
				t.Errorf("Percentile(%v, %d) = %v, want %v", tc.d, tc.p, got, tc.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name        string
		want, got   Sample
		differ      bool
		line        int
		sortedEqual bool
	}{
		{"same", Sample{Stdout: "a\nb\n"}, Sample{Stdout: "a\nb\n"}, false, 0, false},
		{"exit", Sample{Stdout: "a\n", Exit: 1}, Sample{Stdout: "a\n"}, true, 0, false},
		{"order", Sample{Stdout: "a\nb\n"}, Sample{Stdout: "b\na\n"}, true, 1, true},
		{"content", Sample{Stdout: "a\nb\n"}, Sample{Stdout: "a\nc\n"}, true, 2, false},
		{"shorter", Sample{Stdout: "a\nb"}, Sample{Stdout: "a"}, true, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, differ := Compare(tc.want, tc.got)
			if differ != tc.differ || m.Line != tc.line || m.SortedEqual != tc.sortedEqual {
				t.Errorf("Compare(%q, %q) = %+v, %v; want differ %v, line %d, sorted_equal %v",
					tc.want.Stdout, tc.got.Stdout, m, differ, tc.differ, tc.line, tc.sortedEqual)
			}
		})
	}
}

func TestNodeSatisfies(t *testing.T) {
	for _, tc := range []struct {
		have, want string
		ok         bool
	}{
		{"v20.20.2", ">=20.18.1", true},
		{"v20.18.1", ">=20.18.1", true},
		{"v20.18.0", ">=20.18.1", false},
		{"v18.19.0", ">=20.18.1", false},
		{"v22.0.0", ">=20.18.1", true},
		{"v20.1.0", "", true},
	} {
		if got := nodeSatisfies(tc.have, tc.want); got != tc.ok {
			t.Errorf("nodeSatisfies(%q, %q) = %v, want %v", tc.have, tc.want, got, tc.ok)
		}
	}
}

// smokeSizes keep the smoke test fast: the repositories are small.
var smokeSizes = Sizes{RepoFiles: 200}

// TestPeersSmoke runs every script once through bash and the isolate
// tier. Bash must succeed with output (otherwise the bench's fixtures or
// runners are broken); an isolate output that differs from bash is
// logged, as the report would show it, since byte-identity is the
// differential tests' job (shell/shelltest), not the bench's.
func TestPeersSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("peer benchmark smoke test: not in -short")
	}
	testenv.Require(t, "bash")
	one := Budget{Runs: 1, MinRuns: 1}
	for _, s := range Scripts(smokeSizes) {
		t.Run(s.Name, func(t *testing.T) {
			fx := s.Fixture()
			if fx.Git {
				testenv.Require(t, "git")
			}
			var out [2]Sample
			for i, runner := range []string{Bash, Isolate} {
				sample, err := runGo(t.Context(), filepath.Join(tempDir(t), runner), runner, fx, s.Script, one)
				if err != nil {
					t.Fatalf("%s: %v", runner, err)
				}
				if len(sample.Times) != 1 {
					t.Fatalf("%s: %d timed runs, want 1", runner, len(sample.Times))
				}
				out[i] = sample
			}
			if out[0].Exit != 0 || out[0].Stdout == "" {
				t.Fatalf("bash: exit %d, stdout %q, stderr %q: the fixture is broken", out[0].Exit, out[0].Stdout, out[0].Stderr)
			}
			if m, differ := Compare(out[0], out[1]); differ {
				t.Logf("isolate differs from bash: %+v (stderr %q)", m, out[1].Stderr)
			}
		})
	}
}

// TestJustBashSmoke runs two scripts through just-bash in one Node
// process. It needs node and an install in the cache (go run
// ./bench/cmd/peers makes one; RUNG_BENCH_INSTALL=1 lets the test run npm,
// which takes about two minutes).
func TestJustBashSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("just-bash smoke test: not in -short")
	}
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("skipping: %s not found", bin)
		}
	}
	cache, err := DefaultCacheDir()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	if !JustBashInstalled(cache, JustBashVersion) && os.Getenv("RUNG_BENCH_INSTALL") != "1" {
		t.Skipf("skipping: just-bash@%s not installed in %s (go run ./bench/cmd/peers installs it, or set RUNG_BENCH_INSTALL=1)", JustBashVersion, cache)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	dir, node, err := InstallJustBash(ctx, cache, JustBashVersion)
	if err != nil {
		t.Skipf("skipping: just-bash unavailable (npm not reachable?): %v", err)
	}
	t.Logf("node %s, just-bash %s in %s", node, JustBashVersion, dir)
	p, err := StartJustBash(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, tc := range []struct {
		name, script string
		fx           Fixture
		want         string
	}{
		{"echo-awk", "echo $((1+2)) | awk '{print $1*2}'", Fixture{}, "6\n"},
		{"cat", "cat hello.txt", Fixture{Files: map[string]string{"hello.txt": "hi there\n"}}, "hi there\n"},
		{"pwd", "pwd", Fixture{}, "/workspace\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := p.Run(tc.fx, tc.script, Budget{Runs: 3, MinRuns: 3})
			if err != nil {
				t.Fatal(err)
			}
			if s.Stdout != tc.want || s.Exit != 0 || len(s.Times) != 3 {
				t.Errorf("just-bash %q: stdout %q exit %d runs %d, want %q exit 0 runs 3", tc.script, s.Stdout, s.Exit, len(s.Times), tc.want)
			}
		})
	}
}

// tempDir is a test directory on tmpfs when there is one.
func tempDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp(TempBase(), "rung-bench-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// BenchmarkPeers runs each script in the isolate tier and in real bash
// (fork+exec, files on tmpfs), side by side, reporting p50 and p99 wall
// time and p50 CPU time per run. just-bash runs only through
// `go run ./bench/cmd/peers`.
func BenchmarkPeers(b *testing.B) {
	for _, s := range Scripts(DefaultSizes) {
		b.Run(s.Name, func(b *testing.B) {
			b.Run(Isolate, func(b *testing.B) {
				dir := materialize(b, s)
				r, err := newIsolateRun(dir, s.Script)
				if err != nil {
					b.Fatal(err)
				}
				defer r.close()
				if res := r.run(b.Context()); res.ExitCode != 0 {
					b.Logf("isolate: exit %d, stderr %q", res.ExitCode, strings.TrimSpace(r.errb.String()))
				}
				var d, cpu []time.Duration
				b.ReportAllocs()
				for b.Loop() {
					t0, c0 := time.Now(), selfCPU()
					r.run(b.Context())
					d = append(d, time.Since(t0))
					cpu = append(cpu, selfCPU()-c0)
				}
				reportPercentiles(b, d, cpu)
			})
			b.Run(Bash, func(b *testing.B) {
				dir := materialize(b, s)
				r, err := newBashRun(dir, s.Script)
				if err != nil {
					b.Fatal(err)
				}
				var d, cpu []time.Duration
				b.ReportAllocs()
				for b.Loop() {
					t0 := time.Now()
					if _, err := r.run(b.Context()); err != nil {
						b.Fatal(err)
					}
					d = append(d, time.Since(t0))
					cpu = append(cpu, r.cpu)
				}
				reportPercentiles(b, d, cpu)
			})
		})
	}
}

func materialize(b *testing.B, s Script) string {
	b.Helper()
	fx := s.Fixture()
	if fx.Git {
		testenv.Require(b, "git")
	}
	dir := tempDir(b)
	if err := Materialize(b.Context(), dir, fx); err != nil {
		b.Fatal(err)
	}
	return dir
}

// reportPercentiles reports wall-time p50 and p99 and the CPU-time p50
// (isolate: this process; bash: bash and its children).
func reportPercentiles(b *testing.B, d, cpu []time.Duration) {
	b.ReportMetric(Percentile(d, 50), "p50-µs")
	b.ReportMetric(Percentile(d, 99), "p99-µs")
	b.ReportMetric(Percentile(cpu, 50), "cpu-p50-µs")
}
