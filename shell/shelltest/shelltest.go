// Package shelltest is the differential test harness of the isolate
// shell: each [Case] runs in real GNU bash 5.2 (with coreutils, inside a
// private mount namespace where a temporary directory is /workspace and
// another is /tmp) and in the interpreter over an identical copy of its
// files, and the two outcomes are compared: stdout, exit status and the
// resulting files exactly, stderr loosely (both empty or both not).
package shelltest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// Case is one script to run on both sides.
type Case struct {
	Name   string
	Script string
	Files  map[string]string // path relative to /workspace -> content
	Stdin  string
	Env    map[string]string // set on top of [Env] on both sides
	// Known names a known difference with its reason; the case still
	// runs on both sides but a mismatch is logged, not failed.
	Known string
	// StderrAny skips the loose stderr comparison (the reason goes in
	// Known or a comment).
	StderrAny bool
	// StderrExact compares stderr byte for byte (the interpreter names
	// itself bash, as the harness's bash does).
	StderrExact bool
}

// Outcome is what one side did.
type Outcome struct {
	Stdout string
	Stderr string
	Exit   int
	Files  map[string]string // relative path -> content, "<dir>", or "-> target"
}

// Env is the environment both sides run with.
var Env = map[string]string{
	"HOME":   "/workspace",
	"PATH":   "/usr/local/bin:/usr/bin:/bin",
	"LC_ALL": "C.UTF-8",
	"TZ":     "UTC",
}

// Setup makes a root directory holding workspace/ and tmp/ with files.
func Setup(dir string, files map[string]string) error {
	for _, d := range []string{"workspace", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o1777); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, "workspace", n)
		if strings.HasSuffix(n, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(files[n]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Snapshot reads the workspace tree under root back.
func Snapshot(root string) (map[string]string, error) {
	ws := filepath.Join(root, "workspace")
	out := map[string]string{}
	err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(ws, p)
		if rel == "." {
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + t
		case d.IsDir():
			out[rel] = "<dir>"
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		default:
			out[rel] = "<special>"
		}
		return nil
	})
	return out, err
}

// BashVersion returns the first line of /usr/bin/bash --version.
func BashVersion() (string, error) {
	out, err := exec.Command("/usr/bin/bash", "--version").Output()
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line, nil
}

// cacheDir is where RunBash keeps outcomes of real bash between runs:
// $RUNG_SHELLTEST_CACHE, or rung-shelltest under the user cache
// directory; "off" disables it. Spawning bash costs ~100 ms per case on
// the build machines, and an outcome depends only on the bash binary and
// the case, which make the key.
func cacheDir() string {
	if d := os.Getenv("RUNG_SHELLTEST_CACHE"); d != "" {
		if d == "off" {
			return ""
		}
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "rung-shelltest")
}

func cacheKey(c Case) string {
	h := sha256.New()
	v, _ := BashVersion()
	fi, _ := os.Stat("/usr/bin/bash")
	if fi != nil {
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00", v, fi.Size(), fi.ModTime().UnixNano())
	}
	b, _ := json.Marshal([]any{harnessVersion, c.Script, c.Files, c.Stdin, Env, c.Env})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// RunBash runs c in real bash under a private mount namespace, with a
// fresh root directory made in tmp. Outcomes are cached (see cacheDir).
func RunBash(ctx context.Context, c Case, tmp string) (Outcome, error) {
	dir := cacheDir()
	var key string
	if dir != "" {
		key = cacheKey(c)
		if b, err := os.ReadFile(filepath.Join(dir, key[:2], key)); err == nil {
			var o Outcome
			if json.Unmarshal(b, &o) == nil {
				return o, nil
			}
		}
	}
	o, err := runBash(ctx, c, tmp)
	if err == nil && dir != "" {
		if b, err := json.Marshal(o); err == nil {
			_ = os.MkdirAll(filepath.Join(dir, key[:2]), 0o755)
			_ = os.WriteFile(filepath.Join(dir, key[:2], key), b, 0o644)
		}
	}
	return o, err
}

func runBash(ctx context.Context, c Case, tmp string) (Outcome, error) {
	if err := Setup(tmp, c.Files); err != nil {
		return Outcome{}, err
	}
	if err := os.MkdirAll("/workspace", 0o755); err != nil {
		return Outcome{}, err
	}
	ws := filepath.Join(tmp, "workspace")
	td := filepath.Join(tmp, "tmp")
	var envArgs []string
	for k, v := range Env {
		if _, ok := c.Env[k]; !ok {
			envArgs = append(envArgs, k+"="+v)
		}
	}
	for k, v := range c.Env {
		envArgs = append(envArgs, k+"="+v)
	}
	sort.Strings(envArgs)
	wrapper := `mount --bind "$1" /workspace && mount --bind "$2" /tmp && cd /workspace && shift 2 && exec env -i "$@"`
	args := []string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", wrapper, "sh", ws, td}
	args = append(args, envArgs...)
	args = append(args, "bash", "-c", c.Script)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", args...)
	cmd.Stdin = strings.NewReader(c.Stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	o := Outcome{Stdout: stdout.String(), Stderr: stderr.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			return o, fmt.Errorf("run bash: %w", err)
		}
		o.Exit = ee.ExitCode()
	}
	files, err := Snapshot(tmp)
	if err != nil {
		return o, err
	}
	o.Files = files
	return o, nil
}

// RunShell runs c in the interpreter with tools over a fresh root made in
// tmp.
func RunShell(ctx context.Context, c Case, tmp string, tools map[string]shell.Tool) (Outcome, error) {
	if err := Setup(tmp, c.Files); err != nil {
		return Outcome{}, err
	}
	root, err := storage.OpenRoot(tmp)
	if err != nil {
		return Outcome{}, err
	}
	defer root.Close()
	sh := shell.New(shell.Config{FS: root, Tools: tools})
	env := map[string]string{"LC_ALL": "C.UTF-8", "TZ": "UTC"}
	for k, v := range c.Env {
		env[k] = v
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res := sh.Run(ctx, shell.Request{
		Script: c.Script,
		Env:    env,
		Stdin:  strings.NewReader(c.Stdin),
		Stdout: &stdout,
		Stderr: &stderr,
	})
	o := Outcome{Stdout: stdout.String(), Stderr: stderr.String(), Exit: res.ExitCode}
	files, err := Snapshot(tmp)
	if err != nil {
		return o, err
	}
	o.Files = files
	return o, nil
}

// Diff describes how two outcomes differ, or "" when they match:
// stderr exactly when exact, else loosely (both empty or both not)
// unless stderrAny.
func Diff(want, got Outcome, stderrAny, exact bool) string {
	var sb strings.Builder
	if want.Stdout != got.Stdout {
		fmt.Fprintf(&sb, "stdout:\n  bash:  %q\n  rung:  %q\n", want.Stdout, got.Stdout)
	}
	if want.Exit != got.Exit {
		fmt.Fprintf(&sb, "exit: bash %d, rung %d\n", want.Exit, got.Exit)
	}
	if exact && want.Stderr != got.Stderr || !stderrAny && (want.Stderr == "") != (got.Stderr == "") {
		fmt.Fprintf(&sb, "stderr:\n  bash:  %q\n  rung:  %q\n", want.Stderr, got.Stderr)
	}
	keys := map[string]bool{}
	for k := range want.Files {
		keys[k] = true
	}
	for k := range got.Files {
		keys[k] = true
	}
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		w, wok := want.Files[k]
		g, gok := got.Files[k]
		if wok != gok || w != g {
			fmt.Fprintf(&sb, "file %s:\n  bash:  %q (exists %v)\n  rung:  %q (exists %v)\n", k, w, wok, g, gok)
		}
	}
	if sb.Len() > 0 && got.Stderr != "" {
		fmt.Fprintf(&sb, "rung stderr: %q\n", got.Stderr)
	}
	return sb.String()
}

// Require skips (or fails under RUNG_REQUIRE_ALL=1) unless real bash 5.2,
// unshare and root are available.
func Require(t testing.TB) {
	t.Helper()
	testenv.Require(t, "root", "bash", "unshare")
	v, err := BashVersion()
	if err != nil || !strings.Contains(v, "version 5.2") {
		testenv.Require(t, "bash-5.2-missing")
	}
}

// Run runs every case on both sides as a subtest and fails on a
// difference, except for cases marked Known (logged).
func Run(t *testing.T, cases []Case, tools map[string]shell.Tool) {
	t.Helper()
	Require(t)
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.Name] {
			t.Fatalf("duplicate case name %q", c.Name)
		}
		seen[c.Name] = true
	}
	// Bash runs are mostly process start-up, so they go 8 at a time,
	// ahead of the subtests (which t.Parallel limits to GOMAXPROCS).
	type outcome struct {
		o   Outcome
		err error
	}
	wants := make([]outcome, len(cases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, c := range cases {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			dir, err := os.MkdirTemp("", "rung-bash-")
			if err != nil {
				wants[i].err = err
				return
			}
			defer os.RemoveAll(dir)
			wants[i].o, wants[i].err = RunBash(t.Context(), c, dir)
		})
	}
	wg.Wait()
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			want, err := wants[i].o, wants[i].err
			if err != nil {
				t.Fatalf("bash: %v", err)
			}
			got, err := RunShell(t.Context(), c, t.TempDir(), tools)
			if err != nil {
				t.Fatalf("rung: %v", err)
			}
			if d := Diff(want, got, c.StderrAny, c.StderrExact); d != "" {
				if c.Known != "" {
					t.Logf("known difference (%s):\n%s", c.Known, d)
					return
				}
				t.Errorf("script %q:\n%s", c.Script, d)
			}
		})
	}
}

// harnessVersion is part of the cache key: bump it when the way bash is
// invoked changes.
const harnessVersion = 2
