package awk

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// awkCase is one differential case: args (without argv[0]) run through
// the host's awk (mawk on Debian 12) and through Main, each in its own
// temp directory holding files.
type awkCase struct {
	name  string
	args  []string
	stdin string
	files map[string]string
	known string // reason for a known difference: the case is skipped
}

// p is a case with just a program and stdin.
func p(name, prog, stdin string) awkCase {
	return awkCase{name: name, args: []string{prog}, stdin: stdin}
}

var testEnv = []string{"LC_ALL=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "AWKTEST=hello 42"}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		b, _ := os.ReadFile(p)
		out[rel] = string(b)
		return nil
	})
	return out
}

// hostEnv is an Env over a host directory, used only by tests: the
// shell adapter supplies the sandbox's files instead.
func hostEnv(dir string, stdin io.Reader, stdout, stderr io.Writer) *Env {
	abs := func(name string) string {
		if filepath.IsAbs(name) {
			return name
		}
		return filepath.Join(dir, name)
	}
	return &Env{
		Name: "mawk", Stdin: stdin, Stdout: stdout, Stderr: stderr, Environ: testEnv,
		Open: func(name string) (io.ReadCloser, error) { return os.Open(abs(name)) },
		Create: func(name string, flag int, perm fs.FileMode) (io.WriteCloser, error) {
			return os.OpenFile(abs(name), flag, perm)
		},
		Run: func(ctx context.Context, cmd string, stdin io.Reader, stdout io.Writer) int {
			c := exec.CommandContext(ctx, "sh", "-c", cmd)
			c.Dir, c.Env, c.Stdin, c.Stdout, c.Stderr = dir, testEnv, stdin, stdout, stderr
			err := c.Run()
			if ee, ok := err.(*exec.ExitError); ok {
				return ee.ExitCode()
			}
			if err != nil {
				return 127
			}
			return 0
		},
	}
}

func runAwkDiff(t *testing.T, cases []awkCase) {
	t.Helper()
	if _, err := exec.LookPath("mawk"); err != nil {
		t.Skip("mawk not installed")
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.known != "" {
				t.Skip("known difference: " + tc.known)
			}
			hostDir, ourDir := t.TempDir(), t.TempDir()
			writeTree(t, hostDir, tc.files)
			writeTree(t, ourDir, tc.files)

			cmd := exec.Command("mawk", tc.args...)
			cmd.Dir, cmd.Env = hostDir, testEnv
			cmd.Stdin = strings.NewReader(tc.stdin)
			var wantOut, wantErr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &wantOut, &wantErr
			wantStatus := 0
			if err := cmd.Run(); err != nil {
				ee, ok := err.(*exec.ExitError)
				if !ok {
					t.Fatalf("run mawk: %v", err)
				}
				wantStatus = ee.ExitCode()
			}

			var gotOut, gotErr bytes.Buffer
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			gotStatus := Main(ctx, hostEnv(ourDir, strings.NewReader(tc.stdin), &gotOut, &gotErr), tc.args)

			if diff := cmp.Diff(wantOut.String(), gotOut.String()); diff != "" {
				t.Errorf("awk %q stdout (-mawk +ours):\n%s\nstderr mawk=%q ours=%q", tc.args, diff, wantErr.String(), gotErr.String())
			}
			if wantStatus != gotStatus {
				t.Errorf("awk %q status = %d, want %d (stderr mawk=%q ours=%q)", tc.args, gotStatus, wantStatus, wantErr.String(), gotErr.String())
			}
			if (wantErr.Len() == 0) != (gotErr.Len() == 0) {
				t.Errorf("awk %q stderr mawk=%q ours=%q", tc.args, wantErr.String(), gotErr.String())
			}
			if diff := cmp.Diff(readTree(t, hostDir), readTree(t, ourDir)); diff != "" {
				t.Errorf("awk %q files (-mawk +ours):\n%s", tc.args, diff)
			}
		})
	}
}
