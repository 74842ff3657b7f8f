package tools

import (
	"context"
	"errors"
	"io"
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
	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
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
	stdin string // given to every command
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
				tc := toolCase{args: cmd, stdin: sc.stdin}
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

// TestFilesCheck pins which command lines the file tools accept statically:
// GNU flags we implement pass; GNU flags we do not implement, and invalid
// flags, are refused as unsupported.
func TestFilesCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		ok   bool
	}{
		{[]string{"ls", "-la", "--color=never", "x"}, true}, // owner names: Config.RootFile
		{[]string{"ls", "-lan", "--color=never", "x"}, true},
		{[]string{"ls", "-Fl1", "x"}, true},
		{[]string{"stat", "x"}, false},
		{[]string{"stat", "-c", "%U", "x"}, true},
		{[]string{"stat", "-c", "%.3Y", "x"}, true},
		{[]string{"stat", "-c", "%q %Hq %5Z", "x"}, true},
		{[]string{"stat", "-c", "%m", "x"}, false},
		{[]string{"stat", "-c", "%.3W", "x"}, false},
		{[]string{"stat", "-c", "%w", "x"}, false},
		{[]string{"stat", "-c", "%C", "x"}, false},
		{[]string{"stat", "-c", "%I", "x"}, false},
		{[]string{"stat", "--printf", "%H", "x"}, false},
		{[]string{"stat", "-t", "x"}, true},
		{[]string{"ls", "-lhRtrSXvUcu1dFpinGog", shell.Unknown}, true},
		{[]string{"ls", "-L"}, true},
		{[]string{"ls", "--sort=size"}, true},
		{[]string{"ls", "-q"}, true},
		{[]string{"ls", "--color"}, false},
		{[]string{"ls", "--color=auto"}, true},
		{[]string{"ls", "-Ua"}, false},
		{[]string{"ls", "--sort=width"}, false},
		{[]string{"ls", "--time=birth"}, false},
		{[]string{"cat", "-vETnbsA"}, true},
		{[]string{"cat", "--help"}, false},
		{[]string{"cp", "-a", "x", "y"}, true},
		{[]string{"cp", "-i", "x", "y"}, true},
		{[]string{"cp", "-b", "x", "y"}, false},
		{[]string{"cp", "--reflink=auto", "x", "y"}, false},
		{[]string{"cp", "--preserve=xattr", "x", "y"}, false},
		{[]string{"cp", "--preserve=mode,timestamps", "x", "y"}, true},
		{[]string{"mv", "-fnvuT", "x", "y"}, true},
		{[]string{"mv", "-b", "x", "y"}, false},
		{[]string{"rm", "-rfv", "x"}, true},
		{[]string{"rm", "-i", "x"}, true},
		{[]string{"rm", "-I", "x"}, false},
		{[]string{"rm", "--no-preserve-root", "x"}, false},
		{[]string{"chmod", "-R", "u+x", "x"}, true},
		{[]string{"chmod", "-w", "x"}, false},
		{[]string{"chmod", "go-w", "x"}, true},
		{[]string{"chmod", "644", "x"}, true},
		{[]string{"chmod", "-R", "644", "x"}, false},
		{[]string{"chmod", "000", "x"}, false},
		{[]string{"chmod", "--reference=y", "x"}, false},
		{[]string{"touch", "-h", "x"}, false},
		{[]string{"touch", "-d", "2020-01-01", "x"}, true},
		{[]string{"stat", "-f", "x"}, false},
		{[]string{"stat", "-c", "%n", "x"}, true},
		{[]string{"du", "-sh", "x"}, true},
		{[]string{"du", "-L", "x"}, false},
		{[]string{"df"}, false},
		{[]string{"tree", "-adfL", "2", "-I", "x"}, true},
		{[]string{"tree", "-C"}, false},
		{[]string{"tree", "-sJ", "x"}, true},
		{[]string{"tree", "-J", "-l"}, false},
		{[]string{"tree", "-h"}, false},
		{[]string{"file", "-b", "x"}, true},
		{[]string{"file", "-z", "x"}, false},
		{[]string{"mktemp", "-d", "-p", "x"}, true},
		{[]string{"ln", "-sfnrv", "x", "y"}, true},
		{[]string{"ln", "-L", "x", "y"}, false},
		{[]string{"realpath", "--relative-to=x", "y"}, true},
		{[]string{"realpath", "-L", "y"}, false},
		{[]string{"readlink", "-fn", "y"}, true},
		{[]string{"basename", "-as", ".c", "y"}, true},
		{[]string{"dirname", "-z", "y"}, true},
		{[]string{"mkdir", "-pvm", "700", "y"}, true},
		{[]string{"mkdir", "-Z", "y"}, false},
		{[]string{"rmdir", "-pv", "y"}, true},
		{[]string{"tee", "-a", "y"}, true},
		{[]string{"tee", "-p", "y"}, false},
	}
	all := All()
	for _, tc := range cases {
		err := all[tc.args[0]].Check(tc.args[1:])
		if (err == nil) != tc.ok {
			t.Errorf("Check(%q) = %v, want ok=%v", tc.args, err, tc.ok)
		}
		if err != nil && !errors.Is(err, shell.ErrUnsupported) {
			t.Errorf("Check(%q) = %v, want an error wrapping ErrUnsupported", tc.args, err)
		}
	}
}

// TestFilesCancel checks that streaming and tree-walking tools stop when
// ctx is done: cat of endless /dev/zero, and du/ls -R/cp -r on a tree.
func TestFilesCancel(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := map[string]string{}
	for i := 0; i < 1000; i++ {
		files[filepath.Join("t", string(rune('a'+i%26)), strings.Repeat("x", 1+i/26))] = ""
	}
	writeFiles(t, filepath.Join(root, "workspace"), files)
	view, err := storage.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	for _, args := range [][]string{{"cat", "/dev/zero"}, {"du", "-a", "t"}, {"ls", "-lR", "t"}, {"cp", "-r", "t", "u"}, {"tree", "t"}} {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		c := &shell.Call{Args: args, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard,
			Dir: "/workspace", FS: view}
		done := make(chan int, 1)
		go func() { done <- All()[args[0]].Run(ctx, c) }()
		select {
		case st := <-done:
			if st == 0 {
				t.Errorf("%q with a canceled context = 0, want non-zero", args)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%q ignored a canceled context", args)
		}
	}
}

// fuRunDiff is runDiff with the cases run in parallel (the file tools have
// hundreds of cases; each forks GNU once).
func fuRunDiff(t *testing.T, cases []toolCase) {
	t.Helper()
	seq := make([]fuSeqCase, len(cases))
	for i, tc := range cases {
		seq[i] = fuSeqCase{name: tc.name, stdin: tc.stdin, files: tc.files, setup: tc.setup, cmds: [][]string{tc.args}, known: tc.known}
	}
	runDiffSeq(t, seq)
}
