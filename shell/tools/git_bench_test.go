package tools

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// BenchmarkGitStatus compares our "git status" with real git's on a
// 5,000-file repository with 3 modified files.
func BenchmarkGitStatus(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git not installed")
	}
	root := b.TempDir()
	dir := filepath.Join(root, "workspace")
	os.MkdirAll(filepath.Join(root, "tmp"), 0o755)
	for i := 0; i < 5000; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%02d/s%02d/f%04d.txt", i%50, i%7, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("file %d\nline two\n", i)), 0o644)
	}
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = gitEnv(dir, 1700000000)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "big")
	for _, i := range []int{7, 1234, 4321} {
		p := filepath.Join(dir, fmt.Sprintf("d%02d/s%02d/f%04d.txt", i%50, i%7, i))
		os.WriteFile(p, []byte("changed\n"), 0o644)
	}
	view, err := storage.OpenRoot(root)
	if err != nil {
		b.Fatal(err)
	}
	defer view.Close()
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		var sb strings.Builder
		var times []time.Duration
		for b.Loop() {
			sb.Reset()
			start := time.Now()
			c := &shell.Call{Args: []string{"git", "status"}, Stdin: strings.NewReader(""), Stdout: &sb, Stderr: io.Discard,
				Dir: "/workspace", FS: view, Env: gitEnv("/workspace", 1700000000)}
			if st := runGit(context.Background(), c); st != 0 {
				b.Fatalf("status %d", st)
			}
			times = append(times, time.Since(start))
		}
		reportP50(b, times)
		if strings.Count(sb.String(), "modified:") != 3 {
			b.Fatalf("unexpected output %q", sb.String())
		}
	})
	b.Run("git", func(b *testing.B) {
		b.ReportAllocs()
		var times []time.Duration
		for b.Loop() {
			start := time.Now()
			cmd := exec.Command("git", "status")
			cmd.Dir = dir
			cmd.Env = gitEnv(dir, 1700000000)
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			times = append(times, time.Since(start))
		}
		reportP50(b, times)
	})
}

// reportP50 reports the median of one run's iteration times, steadier
// than the mean on a machine shared with other work.
func reportP50(b *testing.B, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
}
