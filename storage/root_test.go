package storage

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"rung.dev/rung/internal/testenv"
)

// sentinel is the content of the files planted next to a test root. No
// operation through the root may ever read, stat, write or create
// anything beside them.
const sentinel = "SENTINEL outside the root"

// testView is a Root over a fresh directory, with sentinels next to it:
//
//	parent/secret          file (sentinel)
//	parent/secretdir/f     file (sentinel)
//	parent/root/workspace  the view
//	parent/root/tmp
type testView struct {
	*Root
	parent, host string
}

func newView(t testing.TB) *testView {
	t.Helper()
	parent := t.TempDir()
	if viewsNodev != "" {
		parent = nodevTempDir(t)
	}
	host := filepath.Join(parent, "root")
	for _, d := range []string{"secretdir", "root/workspace", "root/tmp"} {
		if err := os.MkdirAll(filepath.Join(parent, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"secret", "secretdir/f"} {
		if err := os.WriteFile(filepath.Join(parent, f), []byte(sentinel), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := OpenRoot(host)
	if err != nil {
		t.Fatal(err)
	}
	if viewsNodev != "" {
		// Without root (no nodev mount), no device node can be made
		// either, so opening directly is as safe as on a nodev mount.
		r.nodev = true
	}
	t.Cleanup(func() { r.Close() })
	return &testView{Root: r, parent: parent, host: host}
}

// h is the host path of sandbox path p.
func (v *testView) h(p string) string { return filepath.Join(v.host, p) }

// checkOutside fails t if anything next to the root changed.
func (v *testView) checkOutside(t testing.TB) {
	t.Helper()
	var got []string
	err := filepath.WalkDir(v.parent, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == v.host {
			return filepath.SkipDir
		}
		got = append(got, strings.TrimPrefix(p, v.parent))
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil || string(b) != sentinel {
				t.Errorf("outside file %s changed: %q, %v", p, b, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"", "/secret", "/secretdir", "/secretdir/f"}
	if !slices.Equal(got, want) {
		t.Errorf("outside the root: %q, want %q", got, want)
	}
}

// inode returns the inode number of a host path, or 0.
func inode(p string, follow bool) uint64 {
	var st unix.Stat_t
	stat := unix.Lstat
	if follow {
		stat = unix.Stat
	}
	if stat(p, &st) != nil {
		return 0
	}
	return st.Ino
}

func ino(fi fs.FileInfo) uint64 { return fi.Sys().(*unix.Stat_t).Ino }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func errno(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func TestRootMethods(t *testing.T) {
	v := newView(t)
	w := "/workspace"
	must(t, v.Mkdir(w+"/d", 0o750))
	if fi, err := os.Stat(v.h(w + "/d")); err != nil || fi.Mode() != fs.ModeDir|0o750 {
		t.Fatalf("Mkdir: host sees %v, %v", fi, err)
	}
	f, err := v.OpenFile(w+"/d/a", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	must(t, err)
	if f.Name() != w+"/d/a" {
		t.Errorf("Name() = %q", f.Name())
	}
	if _, err := io.WriteString(f, "hello world"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := f.ReadAt(buf, 6); err != nil || string(buf) != "world" {
		t.Errorf("ReadAt = %q, %v", buf, err)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != 11 || fi.Name() != "a" {
		t.Errorf("File.Stat = %v, %v", fi, err)
	}
	must(t, f.Sync())
	must(t, f.Truncate(5))
	must(t, f.Close())
	if b, err := os.ReadFile(v.h(w + "/d/a")); string(b) != "hello" {
		t.Errorf("host reads %q, %v", b, err)
	}
	if b, err := v.ReadFile(w + "/d/a"); string(b) != "hello" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	must(t, v.WriteFile(w+"/d/b", []byte("bee"), 0o600))
	must(t, v.WriteFile(w+"/d/b", []byte("b"), 0o600)) // truncates
	if b, _ := os.ReadFile(v.h(w + "/d/b")); string(b) != "b" {
		t.Errorf("WriteFile over existing: host reads %q", b)
	}

	fi, err := v.Stat(w + "/d/a")
	must(t, err)
	if fi.Name() != "a" || fi.Size() != 5 || fi.Mode() != 0o640 || ino(fi) != inode(v.h(w+"/d/a"), true) {
		t.Errorf("Stat = %s %d %v", fi.Name(), fi.Size(), fi.Mode())
	}
	must(t, v.Symlink("a", w+"/d/s"))
	if target, err := v.Readlink(w + "/d/s"); target != "a" || err != nil {
		t.Errorf("Readlink = %q, %v", target, err)
	}
	if fi, err := v.Lstat(w + "/d/s"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat = %v, %v", fi, err)
	}
	if fi, err := v.Stat(w + "/d/s"); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("Stat through symlink = %v, %v", fi, err)
	}
	must(t, v.Link(w+"/d/a", w+"/d/hard"))
	if fi, _ := v.Stat(w + "/d/hard"); fi.Sys().(*unix.Stat_t).Nlink != 2 {
		t.Errorf("Link: nlink = %d", fi.Sys().(*unix.Stat_t).Nlink)
	}
	must(t, v.Chmod(w+"/d/s", 0o604)) // follows the symlink
	if fi, _ := os.Stat(v.h(w + "/d/a")); fi.Mode() != 0o604 {
		t.Errorf("Chmod: mode %v", fi.Mode())
	}
	mt := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	must(t, v.Chtimes(w+"/d/a", time.Time{}, mt))
	if fi, _ := os.Stat(v.h(w + "/d/a")); !fi.ModTime().Equal(mt) {
		t.Errorf("Chtimes: mtime %v", fi.ModTime())
	}
	must(t, v.Truncate(w+"/d/a", 2))
	if fi, _ := v.Stat(w + "/d/a"); fi.Size() != 2 {
		t.Errorf("Truncate: size %d", fi.Size())
	}
	must(t, v.Rename(w+"/d/b", w+"/c"))
	ents, err := v.ReadDir(w + "/d")
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name()+":"+e.Type().String())
	}
	if want := []string{"a:----------", "hard:----------", "s:L---------"}; !slices.Equal(names, want) {
		t.Errorf("ReadDir = %q, want %q", names, want)
	}
	if p, err := v.RealPath(w + "/d/s"); p != w+"/d/a" || err != nil {
		t.Errorf("RealPath = %q, %v", p, err)
	}
	must(t, v.Remove(w+"/c"))
	if err := v.Remove(w + "/d"); errno(err) != syscall.ENOTEMPTY {
		t.Errorf("Remove non-empty dir = %v", err)
	}
	for _, n := range []string{"a", "hard", "s"} {
		must(t, v.Remove(w+"/d/"+n))
	}
	must(t, v.Remove(w+"/d"))
	if _, err := os.Lstat(v.h(w + "/d")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove dir: host still has it: %v", err)
	}
	v.checkOutside(t)
}

func TestRootErrors(t *testing.T) {
	v := newView(t)
	must(t, os.MkdirAll(v.h("/workspace/d/sub"), 0o755))
	must(t, os.WriteFile(v.h("/workspace/f"), nil, 0o644))
	must(t, os.Symlink("loop2", v.h("/workspace/loop1")))
	must(t, os.Symlink("loop1", v.h("/workspace/loop2")))
	long := strings.Repeat("n", 256)
	deep := "/workspace" + strings.Repeat("/d", 2100)
	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"nul", func() error { _, err := v.Stat("/workspace/a\x00b"); return err }, syscall.EINVAL},
		{"nul symlink target", func() error { return v.Symlink("a\x00", "/workspace/x") }, syscall.EINVAL},
		{"relative", func() error { _, err := v.Stat("workspace"); return err }, syscall.EINVAL},
		{"name too long", func() error { _, err := v.OpenFile("/workspace/"+long, os.O_CREATE|os.O_WRONLY, 0o644); return err }, syscall.ENAMETOOLONG},
		{"mkdir name too long", func() error { return v.Mkdir("/workspace/"+long, 0o755) }, syscall.ENAMETOOLONG},
		{"path too long", func() error { _, err := v.Stat(deep); return err }, syscall.ENAMETOOLONG},
		{"loop", func() error { _, err := v.Stat("/workspace/loop1"); return err }, syscall.ELOOP},
		{"loop open", func() error { _, err := v.OpenFile("/workspace/loop1", os.O_RDONLY, 0); return err }, syscall.ELOOP},
		{"loop create", func() error { _, err := v.OpenFile("/workspace/loop1", os.O_CREATE|os.O_WRONLY, 0o644); return err }, syscall.ELOOP},
		{"loop realpath", func() error { _, err := v.RealPath("/workspace/loop1"); return err }, syscall.ELOOP},
		{"nofollow", func() error { _, err := v.OpenFile("/workspace/loop1", os.O_RDONLY|syscall.O_NOFOLLOW, 0); return err }, syscall.ELOOP},
		{"missing", func() error { _, err := v.Stat("/workspace/nope"); return err }, syscall.ENOENT},
		{"outside the view", func() error { _, err := v.Stat("/etc/passwd"); return err }, syscall.ENOENT},
		{"not a dir", func() error { _, err := v.Stat("/workspace/f/x"); return err }, syscall.ENOTDIR},
		{"trailing slash on file", func() error { _, err := v.OpenFile("/workspace/f/", os.O_RDONLY, 0); return err }, syscall.ENOTDIR},
		{"readdir of file", func() error { _, err := v.ReadDir("/workspace/f"); return err }, syscall.ENOTDIR},
		{"open dir for write", func() error { _, err := v.OpenFile("/workspace/d", os.O_WRONLY, 0); return err }, syscall.EISDIR},
		{"create over dir", func() error { _, err := v.OpenFile("/workspace/d", os.O_CREATE|os.O_RDONLY, 0); return err }, syscall.EISDIR},
		{"excl", func() error { _, err := v.OpenFile("/workspace/f", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0); return err }, syscall.EEXIST},
		{"mkdir exists", func() error { return v.Mkdir("/workspace/d", 0o755) }, syscall.EEXIST},
		{"rename into own child", func() error { return v.Rename("/workspace/d", "/workspace/d/sub/d") }, syscall.EINVAL},
		{"rename dot", func() error { return v.Rename("/workspace/d/.", "/workspace/e") }, syscall.EINVAL},
		{"remove root", func() error { return v.Remove("/") }, syscall.EBUSY},
		{"remove workspace", func() error { return v.Remove("/workspace") }, syscall.EBUSY},
		{"remove workspace via dotdot", func() error { return v.Remove("/tmp/../workspace/") }, syscall.EBUSY},
		{"rename tmp", func() error { return v.Rename("/tmp", "/workspace/t") }, syscall.EBUSY},
		{"rename onto tmp", func() error { return v.Rename("/workspace/d", "/tmp") }, syscall.EBUSY},
		{"readlink of file", func() error { _, err := v.Readlink("/workspace/f"); return err }, syscall.EINVAL},
		{"o_path", func() error { _, err := v.OpenFile("/workspace/f", unix.O_PATH, 0); return err }, syscall.EINVAL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			if errno(err) != tc.want {
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) {
				t.Errorf("error %T is not an *fs.PathError", err)
			}
			if strings.Contains(err.Error(), v.parent) {
				t.Errorf("error %q leaks the host path", err)
			}
		})
	}
	if _, err := v.Stat("/workspace/nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(%v, fs.ErrNotExist) = false", err)
	}
	v.checkOutside(t)
}

// TestRootEscape checks that symlinks and ".." pointing outside the root
// resolve inside it, for every operation, as in a chroot.
func TestRootEscape(t *testing.T) {
	v := newView(t)
	must(t, os.MkdirAll(v.h("/workspace/a/b"), 0o755))
	links := map[string]string{
		"/workspace/rel":     "../../secret",
		"/workspace/reldir":  "../../secretdir",
		"/workspace/a/b/up":  "../../../../../../../../secretdir",
		"/workspace/abs":     filepath.Join(v.parent, "secret"),
		"/workspace/absdir":  filepath.Join(v.parent, "secretdir"),
		"/workspace/passwd":  "/etc/passwd",
		"/workspace/root":    "/",
		"/workspace/dotdots": "/../../..",
	}
	for l, target := range links {
		must(t, os.Symlink(target, v.h(l)))
	}
	names := []string{"/../secret", "/workspace/../../secret", "/workspace/a/b/../../../../secretdir/f"}
	for l := range links {
		names = append(names, l, l+"/f", l+"/secretdir/f", l+"/../secret", l+"/"+filepath.Base(v.parent)+"/secret")
	}
	for _, n := range names {
		if b, err := v.ReadFile(n); err == nil {
			t.Errorf("ReadFile(%q) = %q; want an error", n, b)
		}
		if fi, err := v.Stat(n); err == nil && !fi.IsDir() {
			t.Errorf("Stat(%q) found a %v", n, fi.Mode())
		}
	}
	for _, n := range names {
		if f, err := v.OpenFile(n, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644); err == nil {
			f.Close()
		}
		v.Mkdir(n, 0o755)
		v.Symlink("x", n)
		v.Chmod(n, 0o777)
		v.Truncate(n, 0)
		v.Link("/workspace/a", n)
		v.Rename("/workspace/a/b", n)
		if b, err := v.ReadFile(n); err == nil && strings.Contains(string(b), "SENTINEL") {
			t.Errorf("ReadFile(%q) = %q", n, b)
		}
		if p, err := v.RealPath(n); err == nil && strings.Contains(p, v.parent) {
			t.Errorf("RealPath(%q) = %q leaks the host", n, p)
		}
	}
	// "/workspace/root" is "/": what was created through it went to the
	// view's top level, inside the root.
	if fi, err := v.Stat("/workspace/root/secret"); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("create through a link to / = %v, %v; want a file at /secret in the view", fi, err)
	}
	v.checkOutside(t)
}

// TestRootChroot compares resolution with a real chroot: busybox, run
// chrooted at the root, stats and resolves the same names.
func TestRootChroot(t *testing.T) {
	testenv.Require(t, "root", "busybox")
	v := newView(t)
	bb, err := exec.LookPath("busybox")
	must(t, err)
	must(t, os.MkdirAll(v.h("/bin"), 0o755))
	data, err := os.ReadFile(bb)
	must(t, err)
	must(t, os.WriteFile(v.h("/bin/busybox"), data, 0o755))
	must(t, os.MkdirAll(v.h("/workspace/dir/sub"), 0o755))
	must(t, os.WriteFile(v.h("/workspace/dir/file"), []byte("x"), 0o644))
	for l, target := range map[string]string{
		"/workspace/abs":      "/workspace/dir",
		"/workspace/rel":      "dir",
		"/workspace/up":       "../../../..",
		"/workspace/etc":      "/etc",
		"/workspace/passwd":   "/etc/passwd",
		"/workspace/dir/back": "../rel/file",
		"/workspace/loop1":    "loop2",
		"/workspace/loop2":    "loop1",
		"/workspace/self":     "self",
		"/workspace/dotdot":   "dir/..",
		"/workspace/dangling": "nothere",
		"/workspace/tmplink":  "/tmp",
		"/workspace/chain":    "abs/sub/../back",
		"/workspace/hostabs":  v.h("/workspace/dir/file"),
		"/tmp/t":              "../workspace/dir/file",
		"/tmp/tdir":           "../workspace/abs/sub/",
	} {
		must(t, os.Symlink(target, v.h(l)))
	}
	queries := []string{
		"/", "/workspace", "/workspace/abs/file", "/workspace/rel/file", "/workspace/up",
		"/workspace/up/workspace/dir/file", "/workspace/etc/passwd", "/workspace/passwd",
		"/workspace/dir/back", "/workspace/loop1", "/workspace/self/x", "/workspace/dotdot/dir/file",
		"/workspace/dangling", "/workspace/tmplink/t", "/../../workspace/dir/file",
		"/workspace/../../../tmp/t", "/workspace/dir/sub/../../dir/sub/../file",
		"/workspace/rel/../abs/../dir/file", "/workspace/abs/..", "/workspace/abs/../dir",
		"/workspace/chain", "/workspace/hostabs", "/tmp/t/", "/tmp/tdir/..", "/tmp/tdir/../file",
		"/workspace/dir/file/", "/workspace/dir/file/..", "/workspace/up/bin/busybox",
		"/workspace/dir/sub/../../up/../workspace/rel/../abs/back",
	}
	for _, q := range queries {
		t.Run(strings.ReplaceAll(q, "/", "|"), func(t *testing.T) {
			for _, follow := range []bool{true, false} {
				args := []string{v.host, "/bin/busybox", "stat", "-c", "%i"}
				stat, what := v.Lstat, "Lstat"
				if follow {
					args = append(args, "-L")
					stat, what = v.Stat, "Stat"
				}
				out, err := exec.Command("chroot", append(args, "--", q)...).CombinedOutput()
				fi, ourErr := stat(q)
				switch {
				case err != nil && ourErr == nil:
					t.Errorf("%s(%q) = inode %d; chroot: %s", what, q, ino(fi), out)
				case err != nil:
					if msg := errno(ourErr).Error(); !strings.Contains(strings.ToLower(string(out)), msg) {
						t.Errorf("%s(%q) error %q; chroot: %s", what, q, msg, out)
					}
				case ourErr != nil:
					t.Errorf("%s(%q) = %v; chroot: inode %s", what, q, ourErr, out)
				case strings.TrimSpace(string(out)) != itoa(int(ino(fi))):
					t.Errorf("%s(%q) = inode %d; chroot: %s", what, q, ino(fi), out)
				}
			}
			out, err := exec.Command("chroot", v.host, "/bin/busybox", "realpath", q).CombinedOutput()
			if q == "/workspace/dangling" {
				// busybox resolves a dangling relative symlink from "/";
				// GNU realpath, and we, from the link's directory.
				out = []byte("/workspace/nothere")
			}
			got, ourErr := v.RealPath(q)
			if (err == nil) != (ourErr == nil) || err == nil && got != strings.TrimSpace(string(out)) {
				t.Errorf("RealPath(%q) = %q, %v; chroot: %s (%v)", q, got, ourErr, out, err)
			}
		})
	}
}

// TestRootCreateThroughSymlink checks that O_CREAT through a dangling
// symlink creates its target, resolved inside the root, as open(2) does.
func TestRootCreateThroughSymlink(t *testing.T) {
	v := newView(t)
	must(t, os.MkdirAll(v.h("/workspace/dir/sub"), 0o755))
	for l, target := range map[string]string{
		"/workspace/abs":      "/tmp/new1",
		"/workspace/lnk":      "dir",
		"/workspace/dir/rel":  "sub/new2",
		"/workspace/out":      "../../../../new3",
		"/workspace/chain":    "dir/rel2",
		"/workspace/dir/rel2": "../lnk/sub/new4",
	} {
		must(t, os.Symlink(target, v.h(l)))
	}
	tests := []struct{ open, want string }{
		{"/workspace/abs", "/tmp/new1"},
		{"/workspace/lnk/rel", "/workspace/dir/sub/new2"},
		{"/workspace/out", "/new3"},
		{"/workspace/chain", "/workspace/dir/sub/new4"},
	}
	for _, tc := range tests {
		f, err := v.OpenFile(tc.open, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Errorf("OpenFile(%q, O_CREATE) = %v", tc.open, err)
			continue
		}
		f.Close()
		if _, err := os.Lstat(v.h(tc.want)); err != nil {
			t.Errorf("OpenFile(%q, O_CREATE) did not create %s: %v", tc.open, tc.want, err)
		}
	}
	v.checkOutside(t)
}

// guard fails t if fn does not return within a generous time: it catches
// an open that blocks (a FIFO with no writer).
func guard(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { // stops when fn returns
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

func TestRootSpecialFiles(t *testing.T) {
	v := newView(t)
	must(t, unix.Mkfifo(v.h("/workspace/fifo"), 0o644))
	l, err := net.Listen("unix", v.h("/workspace/sock"))
	must(t, err)
	defer l.Close()
	specials := map[string]fs.FileMode{"fifo": fs.ModeNamedPipe, "sock": fs.ModeSocket}
	if os.Geteuid() == 0 {
		// Major 240 is reserved for local use and has no driver here:
		// opening it would fail with ENXIO, so ErrSpecialFile proves
		// the device was never opened.
		must(t, unix.Mknod(v.h("/workspace/chr"), unix.S_IFCHR|0o666, int(unix.Mkdev(240, 0))))
		must(t, unix.Mknod(v.h("/workspace/null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
		must(t, unix.Mknod(v.h("/workspace/blk"), unix.S_IFBLK|0o666, int(unix.Mkdev(240, 0))))
		specials["chr"] = fs.ModeDevice | fs.ModeCharDevice
		specials["null"] = fs.ModeDevice | fs.ModeCharDevice
		specials["blk"] = fs.ModeDevice
	} else {
		t.Log("not root: device nodes not tested")
	}
	for n := range specials {
		must(t, os.Symlink(n, v.h("/workspace/to-"+n)))
	}
	flags := []int{os.O_RDONLY, os.O_WRONLY, os.O_RDWR, os.O_WRONLY | os.O_CREATE | os.O_TRUNC, os.O_RDWR | os.O_APPEND}
	for n, mode := range specials {
		t.Run(n, func(t *testing.T) {
			for _, name := range []string{"/workspace/" + n, "/workspace/to-" + n} {
				for _, flag := range flags {
					guard(t, "open "+name, func() {
						f, err := v.OpenFile(name, flag, 0o644)
						if !errors.Is(err, ErrSpecialFile) {
							t.Errorf("OpenFile(%q, %#x) = %v, want ErrSpecialFile", name, flag, err)
						}
						if f != nil {
							f.Close()
						}
					})
				}
				guard(t, "read "+name, func() {
					if _, err := v.ReadFile(name); !errors.Is(err, ErrSpecialFile) {
						t.Errorf("ReadFile(%q) = %v", name, err)
					}
					if err := v.WriteFile(name, []byte("x"), 0o644); !errors.Is(err, ErrSpecialFile) {
						t.Errorf("WriteFile(%q) = %v", name, err)
					}
					if err := v.Truncate(name, 0); !errors.Is(err, ErrSpecialFile) {
						t.Errorf("Truncate(%q) = %v", name, err)
					}
				})
				if _, err := v.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); errno(err) != syscall.EEXIST {
					t.Errorf("OpenFile(%q, O_EXCL) = %v", name, err)
				}
			}
			fi, err := v.Stat("/workspace/to-" + n)
			if err != nil || fi.Mode().Type() != mode {
				t.Errorf("Stat = %v, %v; want type %v", fi, err, mode)
			}
		})
	}
	ents, err := v.ReadDir("/workspace")
	must(t, err)
	for _, e := range ents {
		if want, ok := specials[e.Name()]; ok && e.Type() != want {
			t.Errorf("ReadDir: %s has type %v, want %v", e.Name(), e.Type(), want)
		}
	}
}

func TestRootSparse(t *testing.T) {
	v := newView(t)
	const size = 1 << 40
	must(t, v.WriteFile("/workspace/big", []byte("head"), 0o644))
	must(t, v.Truncate("/workspace/big", size))
	fi, err := v.Stat("/workspace/big")
	if err != nil || fi.Size() != size {
		t.Fatalf("Stat = %v, %v; want size %d", fi, err, size)
	}
	if blocks := fi.Sys().(*unix.Stat_t).Blocks; blocks > 1024 {
		t.Errorf("sparse file uses %d blocks", blocks)
	}
	f, err := v.OpenFile("/workspace/big", os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	if off, err := f.Seek(0, io.SeekEnd); off != size || err != nil {
		t.Errorf("Seek(end) = %d, %v", off, err)
	}
	buf := make([]byte, 16)
	if n, err := f.ReadAt(buf, size-8); n != 8 || err != io.EOF || !bytes.Equal(buf[:8], make([]byte, 8)) {
		t.Errorf("ReadAt(end-8) = %d %q, %v", n, buf[:n], err)
	}
	if _, err := f.Seek(size/2, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("middle")); err != nil {
		t.Fatal(err)
	}
	if n, err := f.ReadAt(buf[:6], size/2); n != 6 || string(buf[:6]) != "middle" {
		t.Errorf("ReadAt(middle) = %q, %v", buf[:n], err)
	}
}

func TestRootConcurrentWriters(t *testing.T) {
	v := newView(t)
	const writers, files = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			dir := "/workspace/w" + itoa(w)
			if err := v.Mkdir(dir, 0o755); err != nil {
				t.Error(err)
				return
			}
			for i := range files {
				name := dir + "/f" + itoa(i)
				if err := v.WriteFile(name, []byte(name), 0o644); err != nil {
					t.Error(err)
				}
				f, err := v.OpenFile("/workspace/log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
				if err != nil {
					t.Error(err)
					continue
				}
				f.Write([]byte(name + "\n"))
				f.Close()
				if err := v.Rename(name, name+".done"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for w := range writers {
		for i := range files {
			name := "/workspace/w" + itoa(w) + "/f" + itoa(i)
			if b, err := v.ReadFile(name + ".done"); string(b) != name {
				t.Errorf("ReadFile(%s.done) = %q, %v", name, b, err)
			}
		}
	}
	b, err := v.ReadFile("/workspace/log")
	must(t, err)
	if lines := strings.Count(string(b), "\n"); lines != writers*files {
		t.Errorf("log has %d lines, want %d", lines, writers*files)
	}
}

// TestRootSwapRace swaps an intermediate directory with a symlink pointing
// outside the root while other goroutines resolve paths through it. The
// kernel's RESOLVE_IN_ROOT must keep every lookup inside.
func TestRootSwapRace(t *testing.T) {
	v := newView(t)
	must(t, os.MkdirAll(v.h("/workspace/a"), 0o755))
	must(t, os.WriteFile(v.h("/workspace/a/f"), []byte("inside"), 0o644))
	iters := 20000
	if testing.Short() {
		iters = 2000
	}
	targets := []string{"../../secretdir", filepath.Join(v.parent, "secretdir"), "/../../../../.." + v.parent + "/secretdir"}
	for i, target := range targets {
		must(t, os.Symlink(target, v.h("/workspace/l"+itoa(i))))
	}
	stop := make(chan struct{})
	var swapper, readers sync.WaitGroup
	swapper.Go(func() { // stops when stop is closed
		a := v.h("/workspace/a")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			l := v.h("/workspace/l" + itoa(i%len(targets)))
			// Two exchanges: the symlink takes "a" for a moment.
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, l, unix.RENAME_EXCHANGE); err != nil {
				t.Error(err)
				return
			}
			unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, l, unix.RENAME_EXCHANGE)
		}
	})
	var mu sync.Mutex // guards escapes
	var escapes []string
	escape := func(s string) {
		mu.Lock()
		escapes = append(escapes, s)
		mu.Unlock()
	}
	for g := range 2 {
		readers.Go(func() {
			for i := range iters / 2 {
				if b, err := v.ReadFile("/workspace/a/f"); err == nil && string(b) != "inside" {
					escape("read " + string(b))
				}
				if fi, err := v.Stat("/workspace/a/f"); err == nil && fi.Size() != int64(len("inside")) {
					escape("stat of a file of size " + itoa(int(fi.Size())))
				}
				name := "/workspace/a/new" + itoa(g) + "-" + itoa(i%10)
				if f, err := v.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644); err == nil {
					f.Close()
				}
				v.Mkdir("/workspace/a/d"+itoa(g), 0o755)
				v.Remove("/workspace/a/d" + itoa(g))
				if p, err := v.RealPath("/workspace/a/f"); err == nil && !strings.HasPrefix(p, "/workspace/") {
					escape("realpath " + p)
				}
			}
		})
	}
	readers.Wait()
	close(stop)
	swapper.Wait()
	for _, e := range escapes {
		t.Errorf("escape: %s", e)
	}
	v.checkOutside(t)
}

// TestRootDirEntryInfo checks that DirEntry.Info stats the entry inside
// the view, while the directory is open and after it is closed, even when
// the host has a file at the same path.
func TestRootDirEntryInfo(t *testing.T) {
	v := newView(t)
	// The host's /tmp holds the test's directory under this name.
	clash := filepath.Base(filepath.Dir(v.parent))
	must(t, os.WriteFile(v.h("/tmp/"+clash), []byte("view"), 0o644))
	want := inode(v.h("/tmp/"+clash), false)
	f, err := v.OpenFile("/tmp", os.O_RDONLY, 0)
	must(t, err)
	ents, err := f.ReadDir(-1)
	must(t, err)
	if len(ents) != 1 || ents[0].Name() != clash || !ents[0].Type().IsRegular() {
		t.Fatalf("ReadDir = %v", ents)
	}
	for _, when := range []string{"open", "closed"} {
		fi, err := ents[0].Info()
		if err != nil || ino(fi) != want || fi.Size() != 4 {
			t.Errorf("Info with the directory %s = %v, %v; want the view's file", when, fi, err)
		}
		f.Close()
	}
	if _, err := f.ReadDir(-1); err == nil {
		t.Errorf("ReadDir after Close succeeded")
	}
	ents, err = v.ReadDir("/tmp")
	must(t, err)
	if fi, err := ents[0].Info(); err != nil || ino(fi) != want {
		t.Errorf("Root.ReadDir entry Info = %v, %v", fi, err)
	}
}

// TestRootReadDirBatches reads a large directory in batches, as a
// directory walker does, and checks every name is seen once.
func TestRootReadDirBatches(t *testing.T) {
	v := newView(t)
	const n = 1000
	for i := range n {
		must(t, os.WriteFile(v.h("/workspace/file-with-a-longish-name-"+itoa(i)), nil, 0o644))
	}
	f, err := v.OpenFile("/workspace", os.O_RDONLY, 0)
	must(t, err)
	defer f.Close()
	seen := map[string]bool{}
	for {
		ents, err := f.ReadDir(7)
		for _, e := range ents {
			if seen[e.Name()] {
				t.Fatalf("%s seen twice", e.Name())
			}
			seen[e.Name()] = true
		}
		if err == io.EOF {
			break
		}
		must(t, err)
		if len(ents) == 0 || len(ents) > 7 {
			t.Fatalf("ReadDir(7) returned %d entries", len(ents))
		}
	}
	if len(seen) != n {
		t.Errorf("saw %d names, want %d", len(seen), n)
	}
}

// TestRootClose closes a Root while calls are in flight: they finish or
// fail with EBADF, and later calls fail with EBADF.
func TestRootClose(t *testing.T) {
	v := newView(t)
	must(t, os.WriteFile(v.h("/workspace/f"), []byte("x"), 0o644))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				if _, err := v.ReadFile("/workspace/f"); err != nil && errno(err) != syscall.EBADF {
					t.Errorf("ReadFile during Close = %v", err)
				}
				if _, err := v.Stat("/workspace/f"); err != nil && errno(err) != syscall.EBADF {
					t.Errorf("Stat during Close = %v", err)
				}
			}
		})
	}
	must(t, v.Close())
	wg.Wait()
	for _, op := range []func() error{
		func() error { _, err := v.Stat("/workspace/f"); return err },
		func() error { _, err := v.ReadFile("/workspace/f"); return err },
		func() error { _, err := v.RealPath("/workspace/f"); return err },
		func() error { return v.Mkdir("/workspace/d", 0o755) },
		v.Close,
	} {
		if err := op(); errno(err) != syscall.EBADF {
			t.Errorf("after Close: %v, want EBADF", err)
		}
	}
}
