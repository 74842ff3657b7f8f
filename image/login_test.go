package image_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/image"
	"rung.dev/rung/internal/testenv"
)

// fsNode makes one entry under root: of a layer directory, or of an
// overlay's upper directory.
type fsNode func(t testing.TB, root string)

func nDir(p string, mode os.FileMode) fsNode {
	return func(t testing.TB, root string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
}

func nFile(p, body string, mode os.FileMode) fsNode {
	return func(t testing.TB, root string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
}

func nLink(p, target string) fsNode {
	return func(t testing.TB, root string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
}

// nDev makes a character device: 0/0 is overlayfs's whiteout.
func nDev(p string, major, minor uint32) fsNode {
	return func(t testing.TB, root string) {
		t.Helper()
		if err := unix.Mknod(filepath.Join(root, p), unix.S_IFCHR|0o644, int(unix.Mkdev(major, minor))); err != nil {
			t.Fatal(err)
		}
	}
}

func nWhiteout(p string) fsNode { return nDev(p, 0, 0) }

// nXattr sets a trusted.overlay attribute on p, made before.
func nXattr(p, attr, value string) fsNode {
	return func(t testing.TB, root string) {
		t.Helper()
		if err := unix.Lsetxattr(filepath.Join(root, p), "trusted.overlay."+attr, []byte(value), 0); err != nil {
			t.Fatal(err)
		}
	}
}

// nOpaque makes the directory p, hiding lower layers' entries.
func nOpaque(p string) fsNode {
	return func(t testing.TB, root string) {
		t.Helper()
		nDir(p, 0o755)(t, root)
		nXattr(p, "opaque", "y")(t, root)
	}
}

func build(t testing.TB, root string, nodes []fsNode) {
	t.Helper()
	for _, n := range nodes {
		n(t, root)
	}
}

// nodeLayer makes a layer directory of nodes in s's layer cache, as
// unpacking a layer tar would, and returns its digest.
func nodeLayer(t testing.TB, s *image.Store, nodes ...fsNode) string {
	t.Helper()
	var b [32]byte
	rand.Read(b[:])
	digest := "sha256:" + hex.EncodeToString(b[:])
	if err := os.Mkdir(s.LayerDir(digest), 0o755); err != nil {
		t.Fatal(err)
	}
	build(t, s.LayerDir(digest), nodes)
	return digest
}

// mountedLoginFiles is what a real overlayfs mount of im's layers and
// upper ("" for an empty one) shows at the paths LoginFiles returns.
func mountedLoginFiles(t *testing.T, s *image.Store, im image.Image, upper string) []image.RootFile {
	t.Helper()
	if upper == "" {
		upper = t.TempDir()
	}
	root := mountOverlay(t, s, im, upper)
	var out []image.RootFile
	add := func(p string) {
		fi, err := os.Lstat(filepath.Join(root, p))
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		f := image.RootFile{Path: p, Mode: fi.Mode(), UID: st.Uid, GID: st.Gid, Size: fi.Size(), ModTime: fi.ModTime()}
		if fi.Mode().IsRegular() {
			if f.Data, err = os.ReadFile(filepath.Join(root, p)); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, f)
	}
	add("/etc/profile")
	add("/etc/profile.d")
	ents, _ := os.ReadDir(filepath.Join(root, "etc/profile.d")) // sorted
	for _, e := range ents {
		add("/etc/profile.d/" + e.Name())
	}
	add("/etc/bash.bash_logout")
	return out
}

// sameBytes compares files' Data as a whole (cmp's element by element
// takes seconds on 1 MiB), nil (a directory's) apart from empty.
var sameBytes = cmp.Comparer(func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) })

func pathsOf(files []image.RootFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

// debianEtc is the bottom layer of most cases: an /etc as Debian's,
// with a logout file besides.
var debianEtc = []fsNode{
	nDir("etc", 0o755), nFile("etc/hostname", "host\n", 0o644),
	nFile("etc/profile", "# profile\n", 0o644),
	nDir("etc/profile.d", 0o755),
	nFile("etc/profile.d/a.sh", "a=low\n", 0o644), nFile("etc/profile.d/b.sh", "b=low\n", 0o644),
	nFile("etc/bash.bash_logout", "clear\n", 0o644),
}

var allPaths = []string{"/etc/profile", "/etc/profile.d", "/etc/profile.d/a.sh", "/etc/profile.d/b.sh", "/etc/bash.bash_logout"}

// profileDFiles are n files of size bytes in /etc/profile.d.
func profileDFiles(prefix string, n, size int) []fsNode {
	out := []fsNode{nDir("etc", 0o755), nDir("etc/profile.d", 0o755)}
	for i := range n {
		out = append(out, nFile(fmt.Sprintf("etc/profile.d/%s%03d.sh", prefix, i), strings.Repeat("x", size), 0o644))
	}
	return out
}

// TestLoginFiles checks what LoginFiles returns of an image's layers
// against a real overlayfs mount of them, and that it refuses what a
// login shell might read differently in the container.
func TestLoginFiles(t *testing.T) {
	testenv.Require(t, "root")
	s := newStore(t)
	etcTop := []fsNode{nDir("etc", 0o755), nDir("etc/profile.d", 0o755)}
	with := func(base []fsNode, more ...fsNode) []fsNode { return append(append([]fsNode{}, base...), more...) }
	tests := []struct {
		name   string
		layers [][]fsNode // bottom first
		want   []string   // the paths returned; checked against the mount
		err    error      // nil: no error; errAny: any error
	}{
		{"one layer", [][]fsNode{debianEtc}, allPaths, nil},
		{"merge across two layers", [][]fsNode{debianEtc, {nDir("etc", 0o755), nDir("etc/profile.d", 0o775),
			nFile("etc/profile.d/b.sh", "b=high\n", 0o644), nFile("etc/profile.d/c.sh", "c\n", 0o604)}},
			[]string{"/etc/profile", "/etc/profile.d", "/etc/profile.d/a.sh", "/etc/profile.d/b.sh", "/etc/profile.d/c.sh", "/etc/bash.bash_logout"}, nil},
		{"a whiteout deletes a lower file", [][]fsNode{debianEtc, with(etcTop, nWhiteout("etc/profile.d/a.sh"), nWhiteout("etc/bash.bash_logout"))},
			[]string{"/etc/profile", "/etc/profile.d", "/etc/profile.d/b.sh"}, nil},
		{"an opaque profile.d hides lower entries", [][]fsNode{debianEtc, {nDir("etc", 0o755), nOpaque("etc/profile.d"), nFile("etc/profile.d/c.sh", "c\n", 0o644)}},
			[]string{"/etc/profile", "/etc/profile.d", "/etc/profile.d/c.sh", "/etc/bash.bash_logout"}, nil},
		{"a whiteout deletes profile.d", [][]fsNode{debianEtc, {nDir("etc", 0o755), nWhiteout("etc/profile.d")}},
			[]string{"/etc/profile", "/etc/bash.bash_logout"}, nil},
		{"a whiteout deletes /etc", [][]fsNode{debianEtc, {nWhiteout("etc")}}, nil, nil},
		{"no login files", [][]fsNode{{nDir("etc", 0o755), nFile("etc/hostname", "h\n", 0o644)}}, nil, nil},
		{"no /etc", [][]fsNode{{nDir("bin", 0o755)}}, nil, nil},
		{"a lower symlinked /etc under a directory", [][]fsNode{{nDir("usr", 0o755), nLink("etc", "usr")}, debianEtc}, allPaths, nil},
		{"1 MiB file", [][]fsNode{debianEtc, profileDFiles("big", 1, 1<<20)}, []string{"/etc/profile", "/etc/profile.d", "/etc/profile.d/a.sh", "/etc/profile.d/b.sh", "/etc/profile.d/big000.sh", "/etc/bash.bash_logout"}, nil},
		{"256 names", [][]fsNode{profileDFiles("f", 256, 1)}, append([]string{"/etc/profile.d"}, numbered("f", 256)...), nil},

		{"a symlink entry", [][]fsNode{debianEtc, with(etcTop, nFile("etc/profile.d/vte-2.91.sh", "v\n", 0o644), nLink("etc/profile.d/vte.sh", "vte-2.91.sh"))}, nil, errAny},
		{"a directory entry", [][]fsNode{debianEtc, with(etcTop, nDir("etc/profile.d/sub", 0o755))}, nil, errAny},
		{"a device entry", [][]fsNode{debianEtc, with(etcTop, nDev("etc/profile.d/null", 1, 3))}, nil, errAny},
		{"a symlinked /etc/profile", [][]fsNode{debianEtc, {nDir("etc", 0o755), nFile("etc/profile.real", "p\n", 0o644), nLink("etc/profile", "profile.real")}}, nil, errAny},
		{"a directory at /etc/bash.bash_logout", [][]fsNode{debianEtc, {nDir("etc", 0o755), nDir("etc/bash.bash_logout", 0o755)}}, nil, errAny},
		{"a symlinked /etc on top", [][]fsNode{debianEtc, {nDir("usr/etc", 0o755), nLink("etc", "usr/etc")}}, nil, errAny},
		{"a symlinked profile.d on top", [][]fsNode{debianEtc, {nDir("etc", 0o755), nDir("etc/pd", 0o755), nLink("etc/profile.d", "pd")}}, nil, errAny},
		{"a file at profile.d on top", [][]fsNode{debianEtc, {nDir("etc", 0o755), nFile("etc/profile.d", "", 0o644)}}, nil, errAny},
		{"a profile.d file others cannot read", [][]fsNode{debianEtc, with(etcTop, nFile("etc/profile.d/secret.sh", "s\n", 0o640))}, nil, errAny},
		{"a /etc/profile others cannot read", [][]fsNode{debianEtc, {nDir("etc", 0o755), nFile("etc/profile", "p\n", 0o600)}}, nil, errAny},
		{"a logout file others cannot read", [][]fsNode{debianEtc, {nDir("etc", 0o755), nFile("etc/bash.bash_logout", "l\n", 0o640)}}, nil, errAny},
		{"a profile.d others cannot list", [][]fsNode{debianEtc, {nDir("etc", 0o755), nDir("etc/profile.d", 0o711)}}, nil, errAny},
		{"a profile.d others cannot search", [][]fsNode{debianEtc, {nDir("etc", 0o755), nDir("etc/profile.d", 0o754)}}, nil, errAny},
		{"an /etc others cannot search", [][]fsNode{debianEtc, {nDir("etc", 0o754)}}, nil, errAny},
		{"a file over 1 MiB", [][]fsNode{debianEtc, profileDFiles("big", 1, 1<<20+1)}, nil, rung.ErrLimit},
		{"over 4 MiB in all", [][]fsNode{debianEtc, profileDFiles("big", 4, 1<<20)}, nil, rung.ErrLimit},
		{"257 names", [][]fsNode{profileDFiles("f", 257, 1)}, nil, rung.ErrLimit},
		{"whiteouts count as names", [][]fsNode{profileDFiles("f", 200, 1), numberedWhiteouts("w", 57)}, nil, rung.ErrLimit},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // one store: its cache keeps every image apart
			var layers []string
			for _, nodes := range tc.layers {
				layers = append(layers, nodeLayer(t, s, nodes...))
			}
			im := put(t, s, fmt.Sprintf("case%d", i), layers...)
			got, _, err := s.LoginFiles(im, "")
			if tc.err != nil {
				if err == nil || (tc.err != errAny && !errors.Is(err, tc.err)) {
					t.Fatalf("LoginFiles = %v, %v; want error %v", pathsOf(got), err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoginFiles: %v", err)
			}
			if diff := cmp.Diff(tc.want, pathsOf(got)); diff != "" {
				t.Errorf("LoginFiles paths (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(mountedLoginFiles(t, s, im, ""), got, sameBytes); diff != "" {
				t.Errorf("LoginFiles against the overlay mount (-mount +got):\n%s", diff)
			}
		})
	}
}

// errAny stands for any error in test tables.
var errAny = errors.New("any error")

// numbered are the paths profileDFiles makes.
func numbered(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("/etc/profile.d/%s%03d.sh", prefix, i))
	}
	return out
}

func numberedWhiteouts(prefix string, n int) []fsNode {
	out := []fsNode{nDir("etc", 0o755), nDir("etc/profile.d", 0o755)}
	for i := range n {
		out = append(out, nWhiteout(fmt.Sprintf("etc/profile.d/%s%03d.sh", prefix, i)))
	}
	return out
}

// What the upper directory holds at a login file's path is merged over
// the layers' files as a real overlay mount shows it; what only the
// mount could answer (an /etc overlayfs does not merge plainly, a
// redirected profile.d, a metacopy file) is ErrMerged, and the layers'
// refusals and limits hold for its files too.
func TestLoginFilesUpper(t *testing.T) {
	testenv.Require(t, "root")
	s := newStore(t)
	im := put(t, s, "upper", nodeLayer(t, s, debianEtc...))
	etc := nDir("etc", 0o755)
	// What a container's writes leave: overlayfs copies /etc up with
	// attributes of its own (origin, impure), and a whiteout in it.
	copiedUp := func(t testing.TB, upper string) {
		t.Helper()
		merged := mountOverlay(t.(*testing.T), s, im, upper)
		if err := os.WriteFile(filepath.Join(merged, "etc/hostname"), []byte("sbx\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(merged, "etc/hostname"), filepath.Join(merged, "etc/hostname.old")); err != nil {
			t.Fatal(err)
		}
		if err := unix.Unmount(merged, 0); err != nil {
			t.Fatal(err)
		}
		if n, _ := unix.Listxattr(filepath.Join(upper, "etc"), nil); n == 0 {
			t.Fatal("overlayfs copied /etc up without attributes")
		}
	}
	tests := []struct {
		name  string
		upper []fsNode // nil: no upper directory ("")
		// fromUpper: upper changes the files, which are then compared
		// with the mount only (not with the layers' paths).
		fromUpper bool
		err       error // nil: the files as the mount shows them
	}{
		{"no upper directory", nil, false, nil},
		{"an empty upper directory", []fsNode{}, false, nil},
		{"an /etc overlayfs copied up", []fsNode{copiedUp}, false, nil},
		{"other files in upper /etc", []fsNode{etc, nFile("etc/hostname", "mine\n", 0o644), nWhiteout("etc/motd")}, false, nil},
		{"other files elsewhere", []fsNode{nDir("home/user", 0o755), nLink("home/user/profile", "/etc/profile")}, false, nil},
		{"a changed /etc/profile", []fsNode{etc, nFile("etc/profile", "mine\n", 0o644)}, true, nil},
		{"a changed /etc/profile in a copied-up /etc", []fsNode{copiedUp, nFile("etc/profile", "PATH=/x\n", 0o644)}, true, nil},
		{"a changed /etc/profile others cannot read", []fsNode{etc, nFile("etc/profile", "PATH=/x\n", 0o640)}, true, errAny},
		{"a removed /etc/profile", []fsNode{etc, nWhiteout("etc/profile")}, true, nil},
		{"a new profile.d file", []fsNode{etc, nDir("etc/profile.d", 0o755), nFile("etc/profile.d/z.sh", "z\n", 0o644)}, true, nil},
		{"a first profile.d file and a new mode", []fsNode{etc, nDir("etc/profile.d", 0o775), nFile("etc/profile.d/0.sh", "a\n", 0o644)}, true, nil},
		{"a changed and a removed profile.d file", []fsNode{etc, nDir("etc/profile.d", 0o755), nFile("etc/profile.d/b.sh", "b=upper\n", 0o644), nWhiteout("etc/profile.d/a.sh")}, true, nil},
		{"an opaque profile.d", []fsNode{etc, nOpaque("etc/profile.d"), nFile("etc/profile.d/only.sh", "o\n", 0o644)}, true, nil},
		{"a removed profile.d", []fsNode{etc, nWhiteout("etc/profile.d")}, true, nil},
		{"a changed logout file", []fsNode{etc, nFile("etc/bash.bash_logout", "", 0o644)}, true, nil},
		{"a removed logout file", []fsNode{etc, nWhiteout("etc/bash.bash_logout")}, true, nil},
		{"a symlink at /etc/profile", []fsNode{etc, nLink("etc/profile", "/etc/hostname")}, true, errAny},
		{"a directory at /etc/profile", []fsNode{etc, nDir("etc/profile", 0o755)}, true, errAny},
		{"a symlink in profile.d", []fsNode{etc, nDir("etc/profile.d", 0o755), nLink("etc/profile.d/l.sh", "/etc/hostname")}, true, errAny},
		{"a profile.d file others cannot read", []fsNode{etc, nDir("etc/profile.d", 0o755), nFile("etc/profile.d/p.sh", "p\n", 0o600)}, true, errAny},
		{"a profile.d others cannot list", []fsNode{etc, nDir("etc/profile.d", 0o711), nFile("etc/profile.d/p.sh", "p\n", 0o644)}, true, errAny},
		{"a file at profile.d", []fsNode{etc, nFile("etc/profile.d", "", 0o644)}, true, errAny},
		{"a redirected profile.d", []fsNode{etc, nDir("etc/profile.d", 0o755), nXattr("etc/profile.d", "redirect", "/usr/p")}, true, image.ErrMerged},
		{"a metacopy /etc/profile", []fsNode{etc, nFile("etc/profile", "", 0o644), nXattr("etc/profile", "metacopy", "")}, true, image.ErrMerged},
		{"254 upper names and the layers' two", profileDFiles("f", 254, 1), true, nil},
		{"255 upper names and the layers' two", profileDFiles("f", 255, 1), true, rung.ErrLimit},
		{"257 upper names", profileDFiles("f", 257, 1), true, rung.ErrLimit},
		{"257 upper whiteouts count as names", numberedWhiteouts("w", 257), true, rung.ErrLimit},
		{"an upper file over 1 MiB", profileDFiles("big", 1, 1<<20+1), true, rung.ErrLimit},
		{"upper files over 4 MiB in all", profileDFiles("big", 4, 1<<20), true, rung.ErrLimit},
		{"a symlinked /etc", []fsNode{nDir("usr/etc", 0o755), nLink("etc", "usr/etc")}, false, image.ErrMerged},
		{"a removed /etc", []fsNode{nWhiteout("etc")}, false, image.ErrMerged},
		{"a file at /etc", []fsNode{nFile("etc", "", 0o644)}, false, image.ErrMerged},
		{"an opaque /etc", []fsNode{nOpaque("etc")}, false, image.ErrMerged},
		{"a redirected /etc", []fsNode{etc, nXattr("etc", "redirect", "/usr/etc")}, false, image.ErrMerged},
		{"an /etc others cannot search", []fsNode{nDir("etc", 0o750)}, false, errAny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			upper := ""
			if tc.upper != nil {
				upper = t.TempDir()
				build(t, upper, tc.upper)
			}
			got, fromUpper, err := s.LoginFiles(im, upper)
			switch {
			case tc.err == errAny:
				if err == nil || errors.Is(err, image.ErrMerged) {
					t.Fatalf("LoginFiles = %v, %v; want an error, not ErrMerged", pathsOf(got), err)
				}
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Fatalf("LoginFiles = %v, %v; want %v", pathsOf(got), err, tc.err)
				}
			case err != nil:
				t.Fatalf("LoginFiles: %v", err)
			default:
				if fromUpper != tc.fromUpper {
					t.Errorf("fromUpper = %v, want %v", fromUpper, tc.fromUpper)
				}
				if diff := cmp.Diff(mountedLoginFiles(t, s, im, upper), got, sameBytes); diff != "" {
					t.Errorf("LoginFiles against the overlay mount (-mount +got):\n%s", diff)
				}
				if tc.fromUpper {
					return
				}
				if diff := cmp.Diff(allPaths, pathsOf(got)); diff != "" {
					t.Errorf("LoginFiles paths (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// Layers never change, so LoginFiles reads an image's once: a layer
// changed behind the store's back (which nothing does) shows only to an
// image of another digest. A refusal is remembered the same way, and a
// caller's changes to the list do not reach the next caller.
func TestLoginFilesCache(t *testing.T) {
	testenv.Require(t, "root")
	s := newStore(t)
	layer := nodeLayer(t, s, debianEtc...)
	im := put(t, s, "cached", layer)
	first, _, err := s.LoginFiles(im, "")
	if err != nil || len(first) == 0 || first[0].Path != "/etc/profile" {
		t.Fatalf("LoginFiles = %v, %v", pathsOf(first), err)
	}
	first[0].Path = "/changed/by/caller"
	if err := os.WriteFile(filepath.Join(s.LayerDir(layer), "etc/profile"), []byte("# changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, _, err := s.LoginFiles(im, "")
	if err != nil || again[0].Path != "/etc/profile" || string(again[0].Data) != "# profile\n" {
		t.Errorf("second LoginFiles: %s = %q, %v; want /etc/profile = %q (cached)", again[0].Path, again[0].Data, err, "# profile\n")
	}
	other, err := s.Put("recached", []string{layer}, image.Config{Env: []string{"OTHER=1"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	fresh, _, err := s.LoginFiles(other, "")
	if err != nil || string(fresh[0].Data) != "# changed\n" {
		t.Errorf("LoginFiles of another digest: %q, %v; want %q (read anew)", fresh[0].Data, err, "# changed\n")
	}

	bad := nodeLayer(t, s, nDir("etc", 0o755), nFile("etc/profile", "p\n", 0o600))
	refused := put(t, s, "refused", bad)
	if _, _, err := s.LoginFiles(refused, ""); err == nil {
		t.Fatal("LoginFiles of an unreadable /etc/profile: no error")
	}
	if err := os.Chmod(filepath.Join(s.LayerDir(bad), "etc/profile"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.LoginFiles(refused, ""); err == nil {
		t.Errorf("LoginFiles after the layer changed = %v; want the cached refusal", pathsOf(got))
	}
}

// UpperLink reads the link LinkDir leaves in an upper directory, and
// nothing else: "" for anything but a link there, ErrMerged when a
// parent in upper is a symlink or opaque, never following either.
func TestUpperLink(t *testing.T) {
	testenv.Require(t, "root")
	s := newStore(t)
	im := put(t, s, "home", nodeLayer(t, s, nDir("home/user", 0o755), nFile("home/user/.profile", "p\n", 0o644)))
	home := nDir("home", 0o755)
	tests := []struct {
		name  string
		upper []fsNode
		link  string
		want  string
		err   error
	}{
		{"a relative link", []fsNode{home, nLink("home/user", "../workspace")}, "home/user", "../workspace", nil},
		{"a deeper link", []fsNode{nDir("a/b", 0o755), nLink("a/b/c", "/x")}, "a/b/c", "/x", nil},
		{"a link at the top", []fsNode{nLink("work", "/workspace")}, "work", "/workspace", nil},
		{"a dangling link", []fsNode{home, nLink("home/user", "/nowhere")}, "home/user", "/nowhere", nil},
		{"nothing in upper", []fsNode{}, "home/user", "", nil},
		{"only the parent in upper", []fsNode{home}, "home/user", "", nil},
		{"a directory", []fsNode{nDir("home/user", 0o755)}, "home/user", "", nil},
		{"a file", []fsNode{home, nFile("home/user", "", 0o644)}, "home/user", "", nil},
		{"a whiteout", []fsNode{home, nWhiteout("home/user")}, "home/user", "", nil},
		{"a whiteout parent", []fsNode{nWhiteout("home")}, "home/user", "", nil},
		{"a file parent", []fsNode{nFile("home", "", 0o644)}, "home/user", "", nil},
		{"an opaque mark on the link itself", []fsNode{home, nLink("home/user", "/workspace"), nXattr("home/user", "opaque", "y")}, "home/user", "/workspace", nil},
		{"a symlinked parent", []fsNode{nDir("elsewhere", 0o755), nLink("elsewhere/user", "/workspace"), nLink("home", "elsewhere")}, "home/user", "", image.ErrMerged},
		{"an absolute symlinked parent", []fsNode{nLink("home", "/")}, "home/user", "", image.ErrMerged},
		{"an opaque parent", []fsNode{nOpaque("home"), nLink("home/user", "/workspace")}, "home/user", "/workspace", nil},
		{"an opaque grandparent", []fsNode{nOpaque("a"), nDir("a/b", 0o755), nLink("a/b/c", "/x")}, "a/b/c", "/x", nil},
		{"an absolute name", []fsNode{}, "/home/user", "", rung.ErrInvalid},
		{"an empty name", []fsNode{}, "", "", rung.ErrInvalid},
		{"dot", []fsNode{}, ".", "", rung.ErrInvalid},
		{"dot dot", []fsNode{}, "..", "", rung.ErrInvalid},
		{"up and out", []fsNode{}, "../x", "", rung.ErrInvalid},
		{"an unclean name", []fsNode{}, "home/../home/user", "", rung.ErrInvalid},
		{"a trailing slash", []fsNode{}, "home/user/", "", rung.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			upper := t.TempDir()
			build(t, upper, tc.upper)
			got, err := s.UpperLink(im, upper, tc.link)
			if got != tc.want || (tc.err == nil) != (err == nil) || !errors.Is(err, tc.err) {
				t.Errorf("UpperLink(%q) = %q, %v; want %q, %v", tc.link, got, err, tc.want, tc.err)
			}
		})
	}
	t.Run("LinkDir's link", func(t *testing.T) {
		upper := t.TempDir()
		if err := s.LinkDir(im, upper, "/home/user", "/workspace"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.UpperLink(im, upper, "home/user"); got != "/workspace" || err != nil {
			t.Errorf("UpperLink(home/user) = %q, %v; want /workspace", got, err)
		}
	})
}

// BenchmarkLoginFiles measures a call on an image whose layers are
// cached, the daemon's case before each login shell, beside one that
// reads the layers (a new digest each time).
func BenchmarkLoginFiles(b *testing.B) {
	testenv.Require(b, "root")
	s, _ := openStore(b)
	layers := []string{nodeLayer(b, s, debianEtc...), nodeLayer(b, s, []fsNode{nDir("etc", 0o755), nDir("etc/profile.d", 0o755), nFile("etc/profile.d/gawk.sh", strings.Repeat("#\n", 378), 0o644)}...)}
	im, err := s.Put("bench", layers, image.Config{}, 0)
	if err != nil {
		b.Fatal(err)
	}
	// A sandbox's upper directory after its container changed some of
	// /etc, with the attributes overlayfs gives a copied-up directory.
	upper := b.TempDir()
	build(b, upper, []fsNode{nDir("etc", 0o755), nXattr("etc", "origin", "\x00\xfb\x1d"), nXattr("etc", "impure", "y"),
		nFile("etc/hostname", "sbx\n", 0o644), nWhiteout("etc/motd")})
	// One whose container added a profile.d script: merged on each call.
	changed := b.TempDir()
	build(b, changed, []fsNode{nDir("etc", 0o755), nDir("etc/profile.d", 0o755), nFile("etc/profile.d/z.sh", "export Z=1\n", 0o644)})
	for _, bc := range []struct {
		name  string
		upper string
		fresh bool // a digest not cached: the layers are read
	}{
		{"cached/upper-etc", upper, false},
		{"cached/upper-profile.d", changed, false},
		{"cached/upper-no-etc", b.TempDir(), false},
		{"cached/no-upper", "", false},
		{"layers/upper-etc", upper, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				im := im
				if bc.fresh {
					n++
					im.Digest = fmt.Sprintf("sha256:bench%d", n)
				}
				if _, _, err := s.LoginFiles(im, bc.upper); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// An upper file the container replaces between LoginFiles' look at it
// and its open (here with a FIFO) is refused, not read as the file it
// looked at.
func TestLoginFilesUpperSwapped(t *testing.T) {
	testenv.Require(t, "root")
	s := newStore(t)
	im := put(t, s, "swapped", nodeLayer(t, s, debianEtc...))
	upper := t.TempDir()
	build(t, upper, []fsNode{nDir("etc", 0o755), nDir("etc/profile.d", 0o755), nFile("etc/profile.d/z.sh", "export Z=1\n", 0o644)})
	if files, fromUpper, err := s.LoginFiles(im, upper); err != nil || !fromUpper || len(files) != 6 {
		t.Fatalf("LoginFiles before the swap = %v, %v, %v", pathsOf(files), fromUpper, err)
	}
	z := filepath.Join(upper, "etc/profile.d/z.sh")
	image.SetLoginOpenHook(func(abs string) {
		if abs != "/etc/profile.d/z.sh" {
			return
		}
		fifo := filepath.Join(upper, "etc/profile.d/fifo")
		if err := unix.Mkfifo(fifo, 0o644); err != nil {
			t.Error(err)
		}
		if err := os.Rename(fifo, z); err != nil {
			t.Error(err)
		}
	})
	defer image.SetLoginOpenHook(nil)
	if files, _, err := s.LoginFiles(im, upper); err == nil {
		t.Errorf("LoginFiles with z.sh swapped for a FIFO = %v (%q); want an error", pathsOf(files), files[len(files)-2].Data)
	}
}

// Upper files past the bound on all login files are refused before they
// are read, not after: a container filling /etc/profile.d with files of
// 1 MiB costs each login shell 4 MiB, not all of them.
func TestLoginFilesUpperBudget(t *testing.T) {
	testenv.Require(t, "root")
	s := newStore(t)
	im := put(t, s, "budget", nodeLayer(t, s, debianEtc...))
	upper := t.TempDir()
	build(t, upper, profileDFiles("big", 10, 1<<20))
	if _, _, err := s.LoginFiles(im, ""); err != nil { // the layers' files, read and cached
		t.Fatal(err)
	}
	opened := 0
	image.SetLoginOpenHook(func(string) { opened++ })
	defer image.SetLoginOpenHook(nil)
	if _, _, err := s.LoginFiles(im, upper); !errors.Is(err, rung.ErrLimit) {
		t.Fatalf("LoginFiles with 10 MiB in upper profile.d: %v, want ErrLimit", err)
	}
	if opened > 4 {
		t.Errorf("%d of the ten files of 1 MiB opened; want at most the 4 that fit", opened)
	}
}

// BenchmarkLoginFilesRefused measures what a container that floods its
// /etc/profile.d costs each login shell before the refusal: 256 files of
// 1 MiB (past the 4 MiB of all files) and 20,000 empty ones (past the
// 256 names). B/op is the memory a call takes.
func BenchmarkLoginFilesRefused(b *testing.B) {
	testenv.Require(b, "root")
	s, _ := openStore(b)
	im, err := s.Put("bench", []string{nodeLayer(b, s, debianEtc...)}, image.Config{}, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		nodes []fsNode
	}{
		{"bytes-256MiB", profileDFiles("big", 256, 1<<20)},
		{"names-20000", profileDFiles("n", 20000, 0)},
	} {
		upper := b.TempDir()
		build(b, upper, bc.nodes)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := s.LoginFiles(im, upper); !errors.Is(err, rung.ErrLimit) {
					b.Fatalf("LoginFiles = %v, want ErrLimit", err)
				}
			}
		})
	}
}
