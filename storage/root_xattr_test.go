package storage

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// hostXattrs returns the user.* attributes of host path p, not following
// a final symlink.
func hostXattrs(t *testing.T, p string) map[string]string {
	t.Helper()
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		t.Fatalf("llistxattr %s: %v", p, err)
	}
	out := map[string]string{}
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if !strings.HasPrefix(name, "user.") {
			continue
		}
		v := make([]byte, 64<<10)
		m, err := unix.Lgetxattr(p, name, v)
		if err != nil {
			t.Fatalf("lgetxattr %s %s: %v", p, name, err)
		}
		out[name] = string(v[:m])
	}
	return out
}

func TestRootXattr(t *testing.T) {
	v := newView(t)
	must(t, os.MkdirAll(v.h("/workspace/d"), 0o755))
	must(t, os.WriteFile(v.h("/workspace/f"), []byte("x"), 0o644))
	for _, name := range []string{"/workspace/f", "/workspace/d"} {
		must(t, v.SetXattr(name, "user.e2b.author", []byte("mish")))
		must(t, v.SetXattr(name, "user.e2b.empty", nil))
		must(t, v.SetXattr(name, "user.other", []byte("kept")))
		if got, err := v.GetXattr(name, "user.e2b.author"); err != nil || string(got) != "mish" {
			t.Errorf("GetXattr(%s) = %q, %v; want mish", name, got, err)
		}
		names, err := v.ListXattr(name)
		must(t, err)
		slices.Sort(names)
		if want := []string{"user.e2b.author", "user.e2b.empty", "user.other"}; !slices.Equal(names, want) {
			t.Errorf("ListXattr(%s) = %q, want %q", name, names, want)
		}
		got, err := v.Xattrs(name, "user.e2b.")
		must(t, err)
		if want := map[string][]byte{"author": []byte("mish"), "empty": {}}; !maps.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("Xattrs(%s) = %q, want %q", name, got, want)
		}
		// Replacing drops author, changes empty, adds new, and leaves
		// user.other (another prefix) alone.
		must(t, v.ReplaceXattrs(name, "user.e2b.", map[string][]byte{"empty": []byte("1"), "new": []byte("2")}))
		want := map[string]string{"user.e2b.empty": "1", "user.e2b.new": "2", "user.other": "kept"}
		if got := hostXattrs(t, v.h(name)); !maps.Equal(got, want) {
			t.Errorf("after ReplaceXattrs(%s): %q, want %q", name, got, want)
		}
		must(t, v.ReplaceXattrs(name, "user.e2b.", nil))
		if got := hostXattrs(t, v.h(name)); !maps.Equal(got, map[string]string{"user.other": "kept"}) {
			t.Errorf("after ReplaceXattrs(%s, nil): %q, want only user.other", name, got)
		}
		must(t, v.RemoveXattr(name, "user.other"))
		if _, err := v.GetXattr(name, "user.other"); !errors.Is(err, unix.ENODATA) {
			t.Errorf("GetXattr of a removed attribute: %v, want ENODATA", err)
		}
		if err := v.RemoveXattr(name, "user.other"); !errors.Is(err, unix.ENODATA) {
			t.Errorf("RemoveXattr of a missing attribute: %v, want ENODATA", err)
		}
	}
	if _, err := v.ListXattr("/workspace/missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ListXattr of a missing file: %v, want not exist", err)
	}
	if err := v.SetXattr("/workspace/missing", "user.a", nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SetXattr of a missing file: %v, want not exist", err)
	}
}

// TestRootXattrEscape: a symlink to a file or directory outside the view,
// absolute or relative, as the final component or on the way, never lets
// an attribute call read or change the file it names on the host.
func TestRootXattrEscape(t *testing.T) {
	v := newView(t)
	secret, secretF := filepath.Join(v.parent, "secret"), filepath.Join(v.parent, "secretdir", "f")
	for _, p := range []string{secret, secretF, filepath.Join(v.parent, "secretdir")} {
		must(t, unix.Setxattr(p, "user.e2b.host", []byte("HOST"), 0))
	}
	links := map[string]string{
		"/workspace/abs":    secret,
		"/workspace/rel":    "../../secret",
		"/workspace/absdir": filepath.Join(v.parent, "secretdir"),
		"/workspace/reldir": "../../secretdir",
		"/workspace/passwd": "/etc/passwd",
	}
	for l, target := range links {
		must(t, os.Symlink(target, v.h(l)))
	}
	var names []string
	for l := range links {
		names = append(names, l, l+"/f")
	}
	names = append(names, "/../secret", "/workspace/../../secretdir/f")
	for _, n := range names {
		if got, err := v.Xattrs(n, "user.e2b."); len(got) != 0 {
			t.Errorf("Xattrs(%q) = %q, %v; want nothing", n, got, err)
		}
		if got, err := v.GetXattr(n, "user.e2b.host"); err == nil {
			t.Errorf("GetXattr(%q) = %q; want an error", n, got)
		}
		if got, err := v.ListXattr(n); err == nil {
			t.Errorf("ListXattr(%q) = %q; want an error", n, got)
		}
		if err := v.SetXattr(n, "user.e2b.host", []byte("CHANGED")); err == nil {
			t.Errorf("SetXattr(%q) succeeded", n)
		}
		if err := v.SetXattr(n, "user.e2b.added", []byte("x")); err == nil {
			t.Errorf("SetXattr(%q) succeeded", n)
		}
		v.RemoveXattr(n, "user.e2b.host")
		v.ReplaceXattrs(n, "user.e2b.", nil)
		v.ReplaceXattrs(n, "user.e2b.", map[string][]byte{"host": []byte("CHANGED")})
	}
	// A final symlink is ELOOP, as open(2) with O_NOFOLLOW says.
	if err := v.SetXattr("/workspace/abs", "user.a", nil); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("SetXattr through a final symlink: %v, want ELOOP", err)
	}
	for _, p := range []string{secret, secretF, filepath.Join(v.parent, "secretdir")} {
		if got := hostXattrs(t, p); !maps.Equal(got, map[string]string{"user.e2b.host": "HOST"}) {
			t.Errorf("outside %s: attributes %q, want only the planted one", p, got)
		}
	}
	v.checkOutside(t)
}

func TestRootXattrLimits(t *testing.T) {
	v := newView(t)
	must(t, os.WriteFile(v.h("/workspace/f"), []byte("x"), 0o644))
	must(t, unix.Mkfifo(v.h("/workspace/fifo"), 0o644))
	many := map[string][]byte{}
	for i := range MaxXattrs + 1 {
		many[itoa(i)] = nil
	}
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"trusted namespace", func() error { return v.SetXattr("/workspace/f", "trusted.x", nil) }, ErrXattrName},
		{"security namespace", func() error { return v.SetXattr("/workspace/f", "security.capability", []byte{1}) }, ErrXattrName},
		{"get security", func() error { _, err := v.GetXattr("/workspace/f", "security.selinux"); return err }, ErrXattrName},
		{"remove trusted", func() error { return v.RemoveXattr("/workspace/f", "trusted.x") }, ErrXattrName},
		{"namespace alone", func() error { return v.SetXattr("/workspace/f", "user.", nil) }, ErrXattrName},
		{"name too long", func() error { return v.SetXattr("/workspace/f", "user."+strings.Repeat("k", 251), nil) }, ErrXattrName},
		{"nul in name", func() error { return v.SetXattr("/workspace/f", "user.a\x00b", nil) }, ErrXattrName},
		{"value too large", func() error { return v.SetXattr("/workspace/f", "user.a", make([]byte, MaxXattrSize-len("user.a")+1)) }, ErrXattrSize},
		{"replace prefix outside user", func() error { return v.ReplaceXattrs("/workspace/f", "trusted.", nil) }, ErrXattrName},
		{"replace empty key", func() error { return v.ReplaceXattrs("/workspace/f", "user.e2b.", map[string][]byte{"": nil}) }, ErrXattrName},
		{"replace key too long", func() error {
			return v.ReplaceXattrs("/workspace/f", "user.e2b.", map[string][]byte{strings.Repeat("k", 247): nil})
		}, ErrXattrName},
		{"replace value too large", func() error {
			return v.ReplaceXattrs("/workspace/f", "user.e2b.", map[string][]byte{"a": make([]byte, MaxXattrSize-len("user.e2b.a")+1)})
		}, ErrXattrSize},
		{"replace too many", func() error { return v.ReplaceXattrs("/workspace/f", "user.e2b.", many) }, ErrXattrCount},
		{"read prefix outside user", func() error { _, err := v.Xattrs("/workspace/f", "security."); return err }, ErrXattrName},
		{"fifo", func() error { return v.SetXattr("/workspace/fifo", "user.a", nil) }, ErrSpecialFile},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// Nothing was set by the refused calls.
	if got := hostXattrs(t, v.h("/workspace/f")); len(got) != 0 {
		t.Errorf("attributes after refused calls: %q", got)
	}
	// The longest allowed name works.
	long := "user." + strings.Repeat("k", MaxXattrName-len("user."))
	must(t, v.SetXattr("/workspace/f", long, []byte("v")))
	if got, err := v.GetXattr("/workspace/f", long); err != nil || string(got) != "v" {
		t.Errorf("GetXattr of a %d-byte name = %q, %v", len(long), got, err)
	}
}

// TestFileXattrsAndChmod: ReplaceFileXattrs and ChmodFile act on the file
// open, not on what its name leads to afterwards (here a symlink put in
// its place, to a file outside the view), check names as ReplaceXattrs
// does, and refuse a File with no descriptor.
func TestFileXattrsAndChmod(t *testing.T) {
	v := newView(t)
	must(t, os.WriteFile(v.h("/workspace/f"), []byte("x"), 0o600))
	must(t, unix.Setxattr(v.h("/workspace/f"), "user.e2b.old", []byte("1"), 0))
	must(t, unix.Setxattr(v.h("/workspace/f"), "user.other", []byte("kept"), 0))
	f, err := v.OpenFile("/workspace/f", os.O_WRONLY|os.O_TRUNC, 0o644)
	must(t, err)
	defer f.Close()
	// The name now leads outside; the open file is in the trash.
	secret := filepath.Join(v.parent, "secret")
	must(t, os.Rename(v.h("/workspace/f"), v.h("/workspace/moved")))
	must(t, os.Symlink(secret, v.h("/workspace/f")))

	must(t, ChmodFile(f, 0o640))
	must(t, ReplaceFileXattrs(f, "user.e2b.", map[string][]byte{"new": []byte("2")}))
	if err := ReplaceFileXattrs(f, "trusted.", nil); !errors.Is(err, ErrXattrName) {
		t.Errorf("trusted prefix: %v, want ErrXattrName", err)
	}
	if err := ReplaceFileXattrs(f, "user.e2b.", map[string][]byte{"": nil}); !errors.Is(err, ErrXattrName) {
		t.Errorf("empty key: %v, want ErrXattrName", err)
	}
	want := map[string]string{"user.e2b.new": "2", "user.other": "kept"}
	if got := hostXattrs(t, v.h("/workspace/moved")); !maps.Equal(got, want) {
		t.Errorf("attributes %q, want %q", got, want)
	}
	fi, err := os.Stat(v.h("/workspace/moved"))
	must(t, err)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode())
	}
	if got := hostXattrs(t, secret); len(got) != 0 {
		t.Errorf("outside file got attributes %q", got)
	}
	if fi, err := os.Stat(secret); err != nil || fi.Mode().Perm() == 0o640 {
		t.Errorf("outside file: %v, %v", fi, err)
	}
	if err := ChmodFile(noConn{f}, 0o600); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("ChmodFile of a File without a descriptor: %v, want ErrUnsupported", err)
	}
	f.Close()
	if err := ChmodFile(f, 0o600); !errors.Is(err, os.ErrClosed) {
		t.Errorf("ChmodFile after Close: %v, want ErrClosed", err)
	}
}

// noConn hides a File's SyscallConn.
type noConn struct{ File }
