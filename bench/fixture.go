package bench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// FixedTime is the modification time given to every fixture file and
// directory, so that `ls -l` prints the same dates in every runner.
var FixedTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Fixture is the workspace a script runs in.
type Fixture struct {
	Name  string
	Files map[string]string // path relative to /workspace -> content
	// Git makes the workspace a git repository: every file in Files is
	// committed, then Modified is written on top (uncommitted changes).
	Git      bool
	Modified map[string]string
}

// Materialize writes fx under dir as a sandbox root: dir/workspace holds
// the files and dir/tmp is an empty sticky directory. Every file and
// directory gets [FixedTime] (for a git fixture, before the commit, so the
// index is clean). A git fixture needs the git binary.
func Materialize(ctx context.Context, dir string, fx Fixture) error {
	ws := filepath.Join(dir, "workspace")
	for _, d := range []string{ws, filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("materialize %s: %w", fx.Name, err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o1777); err != nil {
		return fmt.Errorf("materialize %s: %w", fx.Name, err)
	}
	if err := writeFiles(ctx, ws, fx.Files); err != nil {
		return fmt.Errorf("materialize %s: %w", fx.Name, err)
	}
	if err := fixTimes(dir); err != nil {
		return fmt.Errorf("materialize %s: %w", fx.Name, err)
	}
	if !fx.Git {
		return nil
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=bench", "-c", "user.email=bench@rung.dev", "commit", "-q", "-m", "initial"},
	} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
			"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("materialize %s: git %s: %w: %s", fx.Name, args[0], err, out)
		}
	}
	// The committed files carry FixedTime, well before the index was
	// written, so git sees no racily clean entries; the changes made now
	// get the current time.
	if err := writeFiles(ctx, ws, fx.Modified); err != nil {
		return fmt.Errorf("materialize %s: %w", fx.Name, err)
	}
	return nil
}

func writeFiles(ctx context.Context, ws string, files map[string]string) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		if i%1000 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		p := filepath.Join(ws, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(files[n]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// fixTimes sets FixedTime on every file and directory under dir, dir
// included (children first, so a directory's time is set last).
func fixTimes(dir string) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range slices.Backward(paths) {
		if err := os.Chtimes(p, FixedTime, FixedTime); err != nil {
			return err
		}
	}
	return nil
}

// TempBase is where fixtures go: /dev/shm (tmpfs) when it exists, so no
// runner pays for a disk, else the default temporary directory.
func TempBase() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// smallWorkspace is a few files, as an agent's first `ls` sees them.
func smallWorkspace() map[string]string {
	return map[string]string{
		"hello.txt":     "hello world\n",
		"README.md":     "# demo\n\nA small project.\n",
		"main.go":       "package main\n\nfunc main() {}\n",
		"go.mod":        "module demo\n\ngo 1.26\n",
		"src/util.go":   "package src\n",
		"docs/notes.md": "notes\n",
	}
}

// lines200 is a 200-line text file where about half the lines contain x.
func lines200() string {
	var b strings.Builder
	for i := range 200 {
		word := []string{"alpha", "box", "gamma", "xray", "delta", "max", "omega"}[i%7]
		fmt.Fprintf(&b, "%s line %d\n", word, i%23)
	}
	return b.String()
}

// sourceTree is n source files in nested directories, as a repository
// of a mid-sized project: 20 directories of n/20 files, about 20 lines
// each, and one line in every 50th file matches "TODO(bench)".
func sourceTree(n int) map[string]string {
	files := make(map[string]string, n)
	for i := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "package p%d\n\n", i%20)
		for j := range 18 {
			fmt.Fprintf(&b, "func f%d_%d(a, b int) int { return a*%d + b }\n", i, j, j)
		}
		if i%50 == 0 {
			fmt.Fprintf(&b, "// TODO(bench): revisit %d\n", i)
		}
		ext := ".go"
		if i%4 == 3 {
			ext = ".txt"
		}
		files[fmt.Sprintf("pkg%02d/sub%d/file%04d%s", i%20, i%5, i, ext)] = b.String()
	}
	return files
}
