package storage

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// FuzzResolve plants two symlinks with fuzzed targets in a fresh view,
// then runs every operation of Root on two fuzzed names. Invariants: no
// panic; nothing outside the root is read, stat'ed, created or changed
// (the sentinels next to the root stay as they are and are never
// reached); no host path appears in a result or an error.
//
//	go test ./storage -run '^$' -fuzz FuzzResolve -fuzztime 60s
func FuzzResolve(f *testing.F) {
	for _, s := range resolveSeeds {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(checkResolve)
}

var resolveSeeds = [][4]string{
	{"../../secret", "/etc/passwd", "/workspace/l1", "/workspace/d/l2/x"},
	{"../../secretdir", "../../../../..", "/workspace/l1/f", "/workspace/d/l2/secretdir/f"},
	{"/", "..", "/workspace/l1/../secret", "/workspace/d/l2/../../secret"},
	{"l1", "l2", "/workspace/l1", "/workspace/d/l2"},
	{"d/l2", "../l1/x", "/workspace/l1", "/workspace/new"},
	{"/tmp/", "/../../../tmp/../..", "/workspace/d/l2/../l1/secret", "/tmp/x"},
	{"d/f/", "f/..", "/workspace/l1", "/workspace/d/l2/y"},
	{"/workspace/d", "./././", "/workspace/l1/l2/l2/l2", "/workspace/l1/../d"},
	{"/proc/self/root", "/dev/null", "/workspace/l1/etc", "/workspace/d/l2"},
	{strings.Repeat("../", 300), "x\x00y", "/" + strings.Repeat("a/", 200), "/workspace/\x00"},
	{"", "", "/", "//workspace//d/./f/"},
}

// checkResolve is FuzzResolve's body.
func checkResolve(t *testing.T, target1, target2, name1, name2 string) {
	v := newView(t)
	must(t, os.MkdirAll(v.h("/workspace/d"), 0o755))
	must(t, os.WriteFile(v.h("/workspace/d/f"), []byte("inside"), 0o644))
	// Errors are fine: an empty or NUL-bearing target cannot be made.
	os.Symlink(target1, v.h("/workspace/l1"))
	os.Symlink(target2, v.h("/workspace/d/l2"))
	outside := outsideInodes(t, v)
	check := func(op, name string, fi fs.FileInfo, err error) {
		t.Helper()
		if err != nil {
			if strings.Contains(err.Error(), v.parent) {
				t.Errorf("%s(%q): error %q leaks the host path", op, name, err)
			}
			return
		}
		if fi != nil {
			st := fi.Sys().(*unix.Stat_t)
			if outside[[2]uint64{st.Dev, st.Ino}] {
				t.Errorf("%s(%q) reached %q outside the root", op, name, fi.Name())
			}
		}
	}
	names := []string{name1, name2, "/workspace/l1/" + name1, "/workspace/d/l2/" + name2}
	for _, n := range names {
		fi, err := v.Stat(n)
		check("Stat", n, fi, err)
		fi, err = v.Lstat(n)
		check("Lstat", n, fi, err)
		b, err := v.ReadFile(n)
		check("ReadFile", n, nil, err)
		if strings.Contains(string(b), "SENTINEL") {
			t.Errorf("ReadFile(%q) read a sentinel", n)
		}
		if f, err := v.OpenFile(n, os.O_RDONLY|unix.O_DIRECTORY, 0); err == nil {
			fi, err := f.Stat()
			check("OpenFile(O_DIRECTORY)", n, fi, err)
			f.Close()
		}
		p, err := v.RealPath(n)
		check("RealPath", n, nil, err)
		if err == nil && (!strings.HasPrefix(p, "/") || strings.Contains(p, v.parent)) {
			t.Errorf("RealPath(%q) = %q", n, p)
		}
		l, err := v.Readlink(n)
		check("Readlink", n, nil, err)
		_ = l
		ents, err := v.ReadDir(n)
		check("ReadDir", n, nil, err)
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				check("ReadDir.Info", n, fi, nil)
			}
		}
	}
	for _, n := range names {
		if f, err := v.OpenFile(n, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
			f.Write([]byte("w"))
			f.Close()
		}
		v.WriteFile(n+"2", []byte("w"), 0o644)
		v.Mkdir(n+"3", 0o755)
		v.Symlink(target1, n+"4")
		v.Chmod(n, 0o600)
		v.Chtimes(n, time.Unix(1, 0), time.Unix(1, 0))
		v.Truncate(n, 1)
		v.Link(n, n+"5")
		v.Rename(n, name2)
		v.Rename(name1, n)
		v.Remove(n)
	}
	v.checkOutside(t)
}

// outsideInodes returns the (device, inode) pairs of everything next to
// and above the test root.
func outsideInodes(t *testing.T, v *testView) map[[2]uint64]bool {
	t.Helper()
	out := map[[2]uint64]bool{}
	add := func(p string) {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err == nil {
			out[[2]uint64{st.Dev, st.Ino}] = true
		}
	}
	for _, p := range []string{"secret", "secretdir", "secretdir/f"} {
		add(filepath.Join(v.parent, p))
	}
	for p := v.parent; ; p = filepath.Dir(p) {
		add(p)
		if p == "/" {
			break
		}
	}
	return out
}
