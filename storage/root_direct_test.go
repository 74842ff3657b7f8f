package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// viewsNodev, when set, is a directory on a nodev mount (or, without
// root, any directory) under which newView makes its views, which then
// open files directly (see openDirect).
var viewsNodev string

// nodevTempDir returns a fresh directory under viewsNodev.
func nodevTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp(viewsNodev, "view-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestRootNodev runs the Root tests again with views on a nodev mount,
// where OpenFile and ReadFile open a file in one openat2 instead of the
// O_PATH, fstat and re-open of the other tests (the test temp dir is
// usually not nodev). Without root it cannot mount one; the views then
// take the direct path anyway, which is safe there because without root
// no device node can be made.
func TestRootNodev(t *testing.T) {
	dir := t.TempDir()
	mounted := unix.Mount("rung-test", dir, "tmpfs", unix.MS_NODEV|unix.MS_NOSUID, "size=256m,mode=0755") == nil
	if mounted {
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	} else {
		t.Log("cannot mount a tmpfs (not root): views take the direct path on", dir)
	}
	viewsNodev = dir
	t.Cleanup(func() { viewsNodev = "" })
	if mounted {
		r, err := OpenRoot(dir)
		must(t, err)
		if !r.nodev {
			t.Error("OpenRoot of a nodev tmpfs: nodev not detected")
		}
		r.Close()
		if r, err := OpenRoot(t.TempDir()); err == nil {
			var st unix.Statfs_t
			if unix.Statfs(r.dir, &st) == nil && st.Flags&unix.ST_NODEV == 0 && r.nodev {
				t.Error("OpenRoot of a mount without nodev: nodev set")
			}
			r.Close()
		}
	}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"Methods", TestRootMethods}, {"Errors", TestRootErrors}, {"Escape", TestRootEscape},
		{"Chroot", TestRootChroot}, {"CreateThroughSymlink", TestRootCreateThroughSymlink},
		{"SpecialFiles", TestRootSpecialFiles}, {"Sparse", TestRootSparse},
		{"ConcurrentWriters", TestRootConcurrentWriters}, {"SwapRace", TestRootSwapRace},
		{"DirEntryInfo", TestRootDirEntryInfo}, {"ReadDirBatches", TestRootReadDirBatches},
		{"Close", TestRootClose}, {"StatCache", TestRootStatCache}, {"IOFS", TestIOFS},
		{"Billy", TestBilly}, {"OpenFlags", testRootOpenFlags},
	} {
		t.Run(tc.name, tc.fn)
	}
	t.Run("ResolveSeeds", func(t *testing.T) {
		for _, s := range resolveSeeds {
			checkResolve(t, s[0], s[1], s[2], s[3])
		}
	})
}

// testRootOpenFlags checks that the O_NONBLOCK the direct open adds never
// reaches the caller, and that a caller's own O_NONBLOCK stays.
func testRootOpenFlags(t *testing.T) {
	v := newView(t)
	must(t, os.WriteFile(v.h("/workspace/f"), []byte("data"), 0o644))
	must(t, os.Mkdir(v.h("/workspace/d"), 0o755))
	for _, tc := range []struct {
		name string
		flag int
	}{
		{"/workspace/f", os.O_RDONLY},
		{"/workspace/f", os.O_RDWR | os.O_APPEND},
		{"/workspace/f", os.O_WRONLY | os.O_CREATE | os.O_TRUNC},
		{"/workspace/f", os.O_RDONLY | unix.O_NONBLOCK},
		{"/workspace/d", os.O_RDONLY},
	} {
		f, err := v.OpenFile(tc.name, tc.flag, 0o644)
		if err != nil {
			t.Errorf("OpenFile(%q, %#x) = %v", tc.name, tc.flag, err)
			continue
		}
		fl, err := unix.FcntlInt(f.(*file).Fd(), unix.F_GETFL, 0)
		must(t, err)
		const status = unix.O_NONBLOCK | unix.O_APPEND
		if fl&status != tc.flag&status {
			t.Errorf("OpenFile(%q, %#x): F_GETFL = %#x, want status flags %#x", tc.name, tc.flag, fl, tc.flag&status)
		}
		f.Close()
	}
	if b, err := v.ReadFile("/workspace/f"); err != nil || len(b) != 0 {
		t.Errorf("ReadFile after O_TRUNC = %q, %v", b, err)
	}
	// Errors the direct open passes on as they are.
	must(t, os.Symlink("f", v.h("/workspace/l")))
	must(t, os.Symlink("loop", v.h("/workspace/loop")))
	for _, tc := range []struct {
		name string
		flag int
		want error
	}{
		{"/workspace/missing", os.O_RDONLY, unix.ENOENT},
		{"/workspace/f/x", os.O_RDONLY, unix.ENOTDIR},
		{"/workspace/l", os.O_RDONLY | unix.O_NOFOLLOW, unix.ELOOP},
		{"/workspace/loop", os.O_RDONLY, unix.ELOOP},
		{"/workspace/d", os.O_WRONLY, unix.EISDIR},
		{"/workspace/d", os.O_RDONLY | os.O_CREATE, unix.EISDIR},
	} {
		_, err := v.OpenFile(tc.name, tc.flag, 0o644)
		if !errors.Is(err, tc.want) {
			t.Errorf("OpenFile(%q, %#x) = %v, want %v", tc.name, tc.flag, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(v.host, "workspace/missing")); err == nil {
		t.Error("a failed open created a file")
	}
}
