package tools

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
	"rung.dev/rung/internal/testenv"
)

// fuOld is a fixed timestamp (more than six months ago) and fuRecent a
// fixed one within the last six months, so ls -l output is deterministic.
var (
	fuOld    = time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	fuRecent = time.Now().Add(-48 * time.Hour).Truncate(time.Minute)
)

// fuTimes sets atime and mtime of every entry under dir (dir included, no
// symlink followed) to when.
func fuTimes(t *testing.T, dir string, when time.Time) {
	t.Helper()
	ts := []unix.Timespec{unix.NsecToTimespec(when.UnixNano()), unix.NsecToTimespec(when.UnixNano())}
	var paths []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		paths = append(paths, p)
		return nil
	})
	// Children first, so setting a file's time does not change its
	// directory's afterwards (it does not, but keep the order obvious).
	for i := len(paths) - 1; i >= 0; i-- {
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, paths[i], ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatal(err)
		}
	}
}

// fuSetup chains setup functions.
func fuSetup(fns ...func(t *testing.T, dir string)) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		for _, fn := range fns {
			fn(t, dir)
		}
	}
}

func fuOldTimes(t *testing.T, dir string)    { fuTimes(t, dir, fuOld) }
func fuRecentTimes(t *testing.T, dir string) { fuTimes(t, dir, fuRecent) }

func fuSymlink(target, link string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
}

func fuMkfifo(name string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		if err := unix.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func fuChmod(name string, mode os.FileMode) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// fuMtime sets one file's mtime (no symlink followed).
func fuMtime(name string, when time.Time) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		ts := []unix.Timespec{unix.NsecToTimespec(when.UnixNano()), unix.NsecToTimespec(when.UnixNano())}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(dir, name), ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatal(err)
		}
	}
}

// fuSocket creates a unix socket file.
func fuSocket(name string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrUnix{Name: filepath.Join(dir, name)}); err != nil {
			t.Fatal(err)
		}
	}
}

// fuSeqCase is a differential case of several commands run in order in the
// same directory (touch then stat, cp then ls -l, ...): each command's
// stdout and status must match GNU's, and so must the final tree.
type fuSeqCase struct {
	name  string
	files map[string]string
	setup func(t *testing.T, dir string)
	cmds  [][]string
	known string
}

func runDiffSeq(t *testing.T, cases []fuSeqCase) {
	t.Helper()
	testenv.Require(t, "bash")
	for _, sc := range cases {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			if sc.known != "" {
				t.Skip("known difference: " + sc.known)
			}
			gnuDir := t.TempDir()
			ourRoot := t.TempDir()
			ourDir := filepath.Join(ourRoot, "workspace")
			for _, d := range []string{ourDir, filepath.Join(ourRoot, "tmp")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeFiles(t, gnuDir, sc.files)
			writeFiles(t, ourDir, sc.files)
			if sc.setup != nil {
				sc.setup(t, gnuDir)
				sc.setup(t, ourDir)
			}
			for _, cmd := range sc.cmds {
				tc := toolCase{args: cmd}
				wantOut, wantErr, wantStatus := runGNU(t, tc, gnuDir)
				gotOut, gotErr, gotStatus := runOurs(t, tc, ourRoot)
				wantOut = strings.ReplaceAll(wantOut, gnuDir, "/workspace")
				if diff := cmp.Diff(wantOut, gotOut); diff != "" {
					t.Errorf("%q stdout (-gnu +ours):\n%s\nstderr gnu=%q ours=%q", cmd, diff, wantErr, gotErr)
				}
				if wantStatus != gotStatus {
					t.Errorf("%q status = %d, want %d (stderr gnu=%q ours=%q)", cmd, gotStatus, wantStatus, wantErr, gotErr)
				}
				if (wantErr == "") != (gotErr == "") {
					t.Errorf("%q stderr gnu=%q ours=%q", cmd, wantErr, gotErr)
				}
			}
			if diff := cmp.Diff(snapshotTree(t, gnuDir), snapshotTree(t, ourDir)); diff != "" {
				t.Errorf("files (-gnu +ours):\n%s", diff)
			}
		})
	}
}

// runSame runs read-only cases with GNU and with ours over the very same
// directory, so inode numbers, ctimes and device numbers agree (stat, ls
// -i, du, df). A case's known marks an expected difference.
func runSame(t *testing.T, cases []toolCase) {
	t.Helper()
	testenv.Require(t, "bash")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.known != "" {
				t.Skip("known difference: " + tc.known)
			}
			root := t.TempDir()
			dir := filepath.Join(root, "workspace")
			for _, d := range []string{dir, filepath.Join(root, "tmp")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeFiles(t, dir, tc.files)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			gotOut, gotErr, gotStatus := runOurs(t, tc, root)
			wantOut, wantErr, wantStatus := runGNU(t, tc, dir)
			wantOut = strings.ReplaceAll(wantOut, dir, "/workspace")
			if diff := cmp.Diff(wantOut, gotOut); diff != "" {
				t.Errorf("%q stdout (-gnu +ours):\n%s\nstderr gnu=%q ours=%q", tc.args, diff, wantErr, gotErr)
			}
			if wantStatus != gotStatus {
				t.Errorf("%q status = %d, want %d (stderr gnu=%q ours=%q)", tc.args, gotStatus, wantStatus, wantErr, gotErr)
			}
			if (wantErr == "") != (gotErr == "") {
				t.Errorf("%q stderr gnu=%q ours=%q", tc.args, wantErr, gotErr)
			}
		})
	}
}

// fuRun runs a host command in dir during setup.
func fuRun(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v: %s", name, args, err, out)
	}
}
