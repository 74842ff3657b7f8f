package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
)

// gitScenario is a differential git scenario: steps run in order on two
// directories, through real git on one and through our git on the other
// (a storage.Root whose /workspace is the second). Every step's stdout
// and status must match, stderr loosely; at the end the worktrees
// (without .git) must match and real git's "status --porcelain" and
// "log" on our repository must equal its output on its own: that proves
// our objects, refs and index are valid ("write-tree" trusts the
// index's cache tree, so it proves ours).
type gitScenario struct {
	name  string
	files map[string]string
	// setup steps run through real git in both directories.
	setup []string
	// steps run through each side; "write PATH TEXT", "rm PATH",
	// "chmod PATH", "mkdir PATH", "ln TARGET PATH", "packblobs N" and
	// "date N" are done directly on both, and "!git ..."
	// runs real git on both (to read what ours wrote).
	steps []string
	known string
}

func gitEnv(home string, date int) []string {
	d := "@" + strconv.Itoa(date) + " +0000"
	return []string{"LC_ALL=C.UTF-8", "TZ=UTC", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=A U Thor", "GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=C O Mitter", "GIT_COMMITTER_EMAIL=committer@example.com",
		"GIT_AUTHOR_DATE=" + d, "GIT_COMMITTER_DATE=" + d}
}

// gitSplitStep splits a step into argv: words separated by spaces, with
// single quotes grouping. A step "!git ..." runs real git on both sides.
func gitSplitStep(s string) []string {
	var out []string
	var cur strings.Builder
	inQ, has := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inQ, has = !inQ, true
		case c == ' ' && !inQ:
			if has {
				out = append(out, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteByte(c)
			has = true
		}
	}
	if has {
		out = append(out, cur.String())
	}
	return out
}

func runRealGit(t *testing.T, dir string, args []string, date int) (string, string, int) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(dir, date)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run git %v: %v", args, err)
	}
	return strings.ReplaceAll(out.String(), dir, "/workspace"), errb.String(), status
}

func runOurGit(t *testing.T, view storage.FS, args []string, date int) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := &shell.Call{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Dir: "/workspace", FS: view, Env: gitEnv("/workspace", date)}
	if check := tools["git"].Check; check != nil {
		if err := check(args[1:]); err != nil {
			t.Fatalf("Check(%q) = %v", args, err)
		}
	}
	status := execTool(ctx, c)
	if c.Unsupported != nil {
		t.Fatalf("%q unsupported: %v", args, c.Unsupported)
	}
	return out.String(), errb.String(), status
}

// gitDoDirect performs a non-git step on dir; it reports whether it was one.
func gitDoDirect(t *testing.T, dir string, argv []string, date *int) bool {
	t.Helper()
	switch argv[0] {
	case "write":
		p := filepath.Join(dir, argv[1])
		os.MkdirAll(filepath.Dir(p), 0o755)
		text := strings.ReplaceAll(strings.Join(argv[2:], " "), `\n`, "\n")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	case "rm":
		os.RemoveAll(filepath.Join(dir, argv[1]))
	case "chmod":
		os.Chmod(filepath.Join(dir, argv[1]), 0o755)
	case "mkdir":
		os.MkdirAll(filepath.Join(dir, argv[1]), 0o755)
	case "ln":
		p := filepath.Join(dir, argv[2])
		os.Remove(p)
		if err := os.Symlink(argv[1], p); err != nil {
			t.Fatal(err)
		}
	case "packblobs":
		// N distinct blobs in one pack (git fast-import), to make a
		// repository where git abbreviates names past 7 digits.
		n, err := strconv.Atoi(argv[1])
		if err != nil {
			t.Fatal(err)
		}
		var in bytes.Buffer
		for i := range n {
			data := "blob " + strconv.Itoa(i) + "\n"
			fmt.Fprintf(&in, "blob\ndata %d\n%s\n", len(data), data)
		}
		cmd := exec.Command("git", "fast-import", "--quiet")
		cmd.Dir, cmd.Stdin, cmd.Env = dir, &in, gitEnv(dir, *date)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git fast-import: %v: %s", err, out)
		}
	case "date":
		n := 0
		for _, c := range argv[1] {
			n = n*10 + int(c-'0')
		}
		*date = n
	default:
		return false
	}
	return true
}

func gitWorktreeSnap(t *testing.T, dir string) map[string]string {
	m := snapshotTree(t, dir)
	for k := range m {
		if k == ".git" || strings.HasPrefix(k, ".git/") || strings.Contains(k, "/.git/") || strings.HasSuffix(k, "/.git") {
			delete(m, k)
		}
	}
	return m
}

func runGitCases(t *testing.T, cases []gitScenario) {
	t.Helper()
	testenv.Require(t, "bash")
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.known != "" {
				t.Skip("known difference: " + tc.known)
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
			date := 1700000000
			for _, st := range tc.setup {
				argv := gitSplitStep(st)
				for _, d := range []string{gnuDir, ourDir} {
					if gitDoDirect(t, d, argv, &date) {
						continue
					}
					if _, errs, code := runRealGit(t, d, argv[1:], date); code != 0 {
						t.Fatalf("setup %q: status %d: %s", st, code, errs)
					}
				}
			}
			view, err := storage.OpenRoot(ourRoot)
			if err != nil {
				t.Fatal(err)
			}
			defer view.Close()
			for _, st := range tc.steps {
				argv := gitSplitStep(st)
				d0 := date
				if gitDoDirect(t, gnuDir, argv, &date) {
					gitDoDirect(t, ourDir, argv, &d0)
					continue
				}
				wantOut, wantErr, wantStatus := runRealGit(t, gnuDir, argv[1:], date)
				var gotOut, gotErr string
				var gotStatus int
				if argv[0] == "!git" {
					// Real git on both sides: it reads what ours wrote.
					gotOut, gotErr, gotStatus = runRealGit(t, ourDir, argv[1:], date)
				} else {
					gotOut, gotErr, gotStatus = runOurGit(t, view, argv, date)
				}
				if diff := cmp.Diff(wantOut, gotOut); diff != "" {
					t.Errorf("%q stdout (-git +ours):\n%s\nstderr git=%q ours=%q", st, diff, wantErr, gotErr)
				}
				if wantStatus != gotStatus {
					t.Errorf("%q status = %d, want %d (stderr git=%q ours=%q)", st, gotStatus, wantStatus, wantErr, gotErr)
				}
				if (wantErr == "") != (gotErr == "") {
					t.Errorf("%q stderr git=%q ours=%q", st, wantErr, gotErr)
				}
			}
			if diff := cmp.Diff(gitWorktreeSnap(t, gnuDir), gitWorktreeSnap(t, ourDir)); diff != "" {
				t.Errorf("worktree (-git +ours):\n%s", diff)
			}
			if _, err := os.Stat(filepath.Join(gnuDir, ".git")); err != nil || !gitMutates(tc.steps) || testing.Short() {
				return
			}
			// The stash reflog is the list of stashes: byte for byte.
			wantLog, _ := os.ReadFile(filepath.Join(gnuDir, ".git/logs/refs/stash"))
			gotLog, _ := os.ReadFile(filepath.Join(ourDir, ".git/logs/refs/stash"))
			if diff := cmp.Diff(string(wantLog), string(gotLog)); diff != "" {
				t.Errorf("logs/refs/stash (-git +ours):\n%s", diff)
			}
			for _, v := range []string{"status --porcelain -uall", "log --all --format=%H%x09%P%x09%T%x09%s", "ls-files -s", "show-ref", "write-tree"} {
				want, _, ws := runRealGit(t, gnuDir, gitSplitStep(v), date)
				got, gerr, gs := runRealGit(t, ourDir, gitSplitStep(v), date)
				if want != got || ws != gs {
					t.Errorf("real git %q on our repo: status %d want %d, stderr %q\n%s", v, gs, ws, gerr, cmp.Diff(want, got))
				}
			}
		})
	}
}

// gitMutates reports whether some step changes repository state, so that
// read-only scenarios skip the (slow) validation by real git.
func gitMutates(steps []string) bool {
	for _, st := range steps {
		f := strings.Fields(st)
		for i := 1; i < len(f); i++ {
			if f[i] == "-C" || f[i] == "-c" {
				i++
				continue
			}
			switch f[i] {
			case "init", "add", "rm", "commit", "reset", "switch", "checkout", "branch", "tag", "config", "stash":
				return true
			}
			break
		}
	}
	return false
}
