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
