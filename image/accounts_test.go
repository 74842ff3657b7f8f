package image_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/image"
	"rung.dev/rung/internal/passwd"
	"rung.dev/rung/internal/testenv"
)

// An image's accounts come from its own layers, top first, never from
// the host: a symlink planted in a layer resolves inside it, and a
// whiteout hides a lower layer's file. Root is uid 0 even in an image
// without the files; an unknown user is ErrInvalid naming it.
func TestAccount(t *testing.T) {
	testenv.Require(t, "root", "busybox")
	s := newStore(t)
	lite, err := s.BuildLite(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	layer := func(entries ...entry) string {
		d, _, err := s.AddLayer(t.Context(), bytes.NewReader(tarOf(t, entries...)))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	bottom := layer(entry{name: "etc/", typ: tar.TypeDir},
		entry{name: "etc/passwd", body: "root:x:0:0::/root:/bin/sh\nalice:x:1500:1500::/home/alice:/bin/sh\n", typ: tar.TypeReg},
		entry{name: "etc/group", body: "alice:x:1500:\ndev:x:1600:alice\n", typ: tar.TypeReg})
	// The host's /etc/passwd lists root and others; through the symlink
	// the layer must see only its own (missing) /etc/shadow.
	escape := layer(entry{name: "etc/", typ: tar.TypeDir}, entry{name: "etc/passwd", link: "/etc/shadow", typ: tar.TypeSymlink},
		entry{name: "etc/group", link: "../../../../../etc/group", typ: tar.TypeSymlink})
	whiteout := layer(entry{name: "etc/", typ: tar.TypeDir}, entry{name: "etc/.wh.passwd", typ: tar.TypeReg})
	put := func(name string, layers ...string) image.Image {
		im, err := s.Put(name, layers, image.Config{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return im
	}
	layered, escaping, hidden := put("layered", bottom), put("escaping", bottom, escape), put("hidden", bottom, whiteout)
	tests := []struct {
		name string
		im   image.Image
		user string
		want passwd.Account
		err  bool
	}{
		{"lite's root", lite, "", passwd.Account{Name: "root", Home: "/root", Shell: "/bin/sh"}, false},
		{"lite's user", lite, "user", passwd.Account{Name: "user", UID: 1000, GID: 1000, Home: "/home/user", Shell: "/bin/sh"}, false},
		{"lite's unknown user", lite, "alice", passwd.Account{}, true},
		{"groups from the image", layered, "alice", passwd.Account{Name: "alice", UID: 1500, GID: 1500, Groups: []uint32{1600}, Home: "/home/alice", Shell: "/bin/sh"}, false},
		{"a numeric user not listed", layered, "2000:2001", passwd.Account{UID: 2000, GID: 2001, Home: "/"}, false},
		{"symlinks stay in their layer", escaping, "alice", passwd.Account{}, true},
		{"root without files", escaping, "root", passwd.Account{Name: "root", Home: "/root"}, false},
		{"whiteout hides the lower file", hidden, "alice", passwd.Account{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Account(tc.im, tc.user)
			if tc.err {
				if !errors.Is(err, rung.ErrInvalid) || !bytes.Contains([]byte(err.Error()), []byte(tc.user)) {
					t.Fatalf("Account(%s, %q) error = %v, want ErrInvalid naming the user", tc.im.Name, tc.user, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Account(%s, %q): %v", tc.im.Name, tc.user, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Account(%s, %q) (-want +got):\n%s", tc.im.Name, tc.user, diff)
			}
		})
	}
	// lite's home for its user belongs to it.
	fi, err := os.Stat(filepath.Join(s.LayerDir(lite.Layers[0]), "home/user"))
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid := owner(fi); uid != 1000 || gid != 1000 {
		t.Errorf("lite's /home/user is owned by %d:%d, want 1000:1000", uid, gid)
	}
}

func owner(fi os.FileInfo) (uid, gid uint32) {
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}

// A container's account files are its overlay's upper directory's copy
// when it changed them, none when it removed them, else the image's;
// what only the merged mount could answer (a symlink in the upper
// directory, an opaque /etc) is an error, never a host file.
func TestAccountFile(t *testing.T) {
	testenv.Require(t, "root")
	s := newStore(t)
	d, _, err := s.AddLayer(t.Context(), bytes.NewReader(tarOf(t, entry{name: "etc/", typ: tar.TypeDir},
		entry{name: "etc/passwd", body: "image\n", typ: tar.TypeReg}, entry{name: "etc/group", body: "igroup\n", typ: tar.TypeReg})))
	if err != nil {
		t.Fatal(err)
	}
	im, err := s.Put("accounts", []string{d}, image.Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	upper := func(t *testing.T, setup func(etc string)) string {
		u := t.TempDir()
		if setup != nil {
			etc := filepath.Join(u, "etc")
			if err := os.Mkdir(etc, 0o755); err != nil {
				t.Fatal(err)
			}
			setup(etc)
		}
		return u
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		setup func(etc string) // nil: the upper directory has no /etc
		file  string
		want  string
		err   bool
	}{
		{"image's", nil, "etc/passwd", "image\n", false},
		{"image's group", func(string) {}, "etc/group", "igroup\n", false},
		{"changed by the container", func(etc string) { must(os.WriteFile(filepath.Join(etc, "passwd"), []byte("mine\n"), 0o644)) }, "etc/passwd", "mine\n", false},
		{"removed by the container", func(etc string) { must(unix.Mknod(filepath.Join(etc, "passwd"), unix.S_IFCHR, 0)) }, "etc/passwd", "", false},
		{"symlink in the upper directory", func(etc string) { must(os.Symlink("/etc/shadow", filepath.Join(etc, "passwd"))) }, "etc/passwd", "", true},
		{"opaque /etc", func(etc string) { must(unix.Setxattr(etc, "trusted.overlay.opaque", []byte("y"), 0)) }, "etc/passwd", "", true},
		{"not an account file", nil, "etc/shadow", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := s.AccountFile(im, upper(t, tc.setup), tc.file)
			if (err != nil) != tc.err || string(b) != tc.want {
				t.Errorf("AccountFile(%s) = %q, %v; want %q, error %v", tc.file, b, err, tc.want, tc.err)
			}
		})
	}
	t.Run("symlinked /etc", func(t *testing.T) {
		u := t.TempDir()
		must(os.Symlink("/etc", filepath.Join(u, "etc")))
		if b, err := s.AccountFile(im, u, "etc/passwd"); err == nil {
			t.Errorf("AccountFile through a symlinked upper /etc = %q, want an error", b)
		}
	})
}
