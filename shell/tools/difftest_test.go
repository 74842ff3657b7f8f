package tools

import (
	"bytes"
	"context"
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

	"github.com/google/go-cmp/cmp"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// toolCase is one differential case: argv runs once through the real GNU
// tool on the host (cwd = a temp dir holding files) and once through our
// tool on a storage.Root over an identical copy (cwd = /workspace).
type toolCase struct {
	name  string
	args  []string          // argv, args[0] is the command
	files map[string]string // relative path -> content; a trailing "/" makes a directory
	stdin string
	// setup runs in both directories before the command (mkfifo, symlinks,
	// chmod); dir is the host directory standing for /workspace.
	setup func(t *testing.T, dir string)
	// known, when set, is the reason this case is expected to differ; the
	// case is then skipped with that reason.
	known string
	// exactStderr compares stderr byte for byte, not loosely.
	exactStderr bool
}

var tools = All()

// runGNU runs tc in real GNU userland; it returns stdout, stderr, status.
func runGNU(t *testing.T, tc toolCase, dir string) (string, string, int) {
	t.Helper()
	path := "/usr/local/bin:/usr/bin:/bin"
	if tc.args[0] == "awk" {
		path = referencePath(t) // and only then, since env prints PATH
	}
	cmd := exec.Command(referenceCommand(path, tc.args[0]), tc.args[1:]...)
	cmd.Args[0] = tc.args[0]
	cmd.Dir = dir
	cmd.Env = []string{"LC_ALL=C.UTF-8", "TZ=UTC", "PATH=" + path, "HOME=" + dir}
	cmd.Stdin = strings.NewReader(tc.stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run GNU %v: %v", tc.args, err)
	}
	return out.String(), errb.String(), status
}

// referenceBin holds the name mappings that make the reference userland
// Debian 12's default one: awk is mawk there, even when gawk is installed
// (scripts/deps.sh installs both; alternatives then prefer gawk).
var referenceBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "rung-reference-bin-")
	if err != nil {
		return "", err
	}
	return dir, os.Symlink("/usr/bin/mawk", filepath.Join(dir, "awk"))
})

func referencePath(t *testing.T) string {
	t.Helper()
	dir, err := referenceBin()
	if err != nil {
		t.Fatalf("reference bin: %v", err)
	}
	return dir + ":/usr/local/bin:/usr/bin:/bin"
}

// referenceCommand resolves name in the reference PATH, not the test's.
func referenceCommand(path, name string) string {
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return name
}

// runOurs runs tc through our tool set on a Root whose workspace is dir.
func runOurs(t *testing.T, tc toolCase, root string) (string, string, int) {
	t.Helper()
	view, err := storage.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := &shell.Call{
		Args: tc.args, Stdin: strings.NewReader(tc.stdin), Stdout: &out, Stderr: &errb,
		Dir: "/workspace", FS: view,
		Env: []string{"LC_ALL=C.UTF-8", "TZ=UTC", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace"},
	}
	c.Exec = func(ctx context.Context, sub *shell.Call) int { return execTool(ctx, sub) }
	status := execTool(ctx, c)
	return out.String(), errb.String(), status
}

// execTool runs sub through the tool set, as the interpreter would for a
// command that is not a builtin.
func execTool(ctx context.Context, c *shell.Call) int {
	name := filepath.Base(c.Args[0])
	tool, ok := tools[name]
	if !ok {
		fmt.Fprintf(c.Stderr, "%s: command not found\n", c.Args[0])
		return 127
	}
	if c.Exec == nil {
		c.Exec = func(ctx context.Context, sub *shell.Call) int { return execTool(ctx, sub) }
	}
	return tool.Run(ctx, c)
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshotTree describes every entry under dir: type, mode, content or
// symlink target, so two trees can be compared with cmp.Diff.
func snapshotTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			desc += " " + string(b)
		}
		out[rel] = desc
		return nil
	})
	return out
}

// runDiff runs each case through GNU and through our tools and compares
// stdout, exit status and the resulting files exactly, stderr loosely.
func runDiff(t *testing.T, cases []toolCase) {
	t.Helper()
	testenv.Require(t, "bash")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.known != "" {
				t.Skip("known difference: " + tc.known)
			}
			if _, err := exec.LookPath(tc.args[0]); err != nil {
				t.Skipf("GNU %s not installed", tc.args[0])
			}
			gnuDir := t.TempDir()
			ourRoot := t.TempDir()
			ourDir := filepath.Join(ourRoot, "workspace")
			for _, d := range []string{ourDir, filepath.Join(ourRoot, "tmp")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeFiles(t, gnuDir, tc.files)
			writeFiles(t, ourDir, tc.files)
			if tc.setup != nil {
				tc.setup(t, gnuDir)
				tc.setup(t, ourDir)
			}
			wantOut, wantErr, wantStatus := runGNU(t, tc, gnuDir)
			gotOut, gotErr, gotStatus := runOurs(t, tc, ourRoot)
			// Paths of the host temp dir may appear in GNU's output.
			wantOut = strings.ReplaceAll(wantOut, gnuDir, "/workspace")
			if diff := cmp.Diff(wantOut, gotOut); diff != "" {
				t.Errorf("%q stdout (-gnu +ours):\n%s\nstderr gnu=%q ours=%q", tc.args, diff, wantErr, gotErr)
			}
			if wantStatus != gotStatus {
				t.Errorf("%q status = %d, want %d (stderr gnu=%q ours=%q)", tc.args, gotStatus, wantStatus, wantErr, gotErr)
			}
			if tc.exactStderr && wantErr != gotErr || (wantErr == "") != (gotErr == "") {
				t.Errorf("%q stderr gnu=%q ours=%q", tc.args, wantErr, gotErr)
			}
			if diff := cmp.Diff(snapshotTree(t, gnuDir), snapshotTree(t, ourDir)); diff != "" {
				t.Errorf("%q files (-gnu +ours):\n%s", tc.args, diff)
			}
		})
	}
}

// sortedKeys is a small helper for deterministic iteration in tests.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
