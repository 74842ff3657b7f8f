package tools

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
