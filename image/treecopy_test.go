package image_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"rung.dev/rung"
	"rung.dev/rung/image"
	"rung.dev/rung/internal/testenv"
)

// layerOfHeaders is a layer tar of hdrs, a regular file's body being its
// name (so that copies are told apart).
func layerOfHeaders(t *testing.T, hdrs ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		h.Format = tar.FormatPAX
		if h.ModTime.IsZero() {
			h.ModTime = time.Unix(1_000_000_000, 123_000_000)
		}
		var body []byte
		if h.Typeflag == tar.TypeReg {
			body = []byte("body of " + h.Name + "\n")
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func dirH(name string, mode int64, uid int) tar.Header {
	return tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: mode, Uid: uid, Gid: uid}
}

func regH(name string, mode int64, uid int) tar.Header {
	return tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Uid: uid, Gid: uid}
}

// treeOf describes every entry under dir: type, mode, owner, times,
// link target and contents, one line each, sorted.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		st := fi.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("%s %o %d:%d", rel, st.Mode, st.Uid, st.Gid)
		if fi.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			line += " -> " + target
		} else if rel != "." && !fi.IsDir() {
			// A directory's own mtime changes as its entries are made;
			// compared only where nothing is made in it after.
			line += " " + time.Unix(st.Mtim.Unix()).UTC().Format(time.RFC3339Nano)
		}
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			line += " " + strings.TrimSpace(string(b))
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// mountOverlay mounts im's layers with upper at a new directory.
func mountOverlay(t *testing.T, s *image.Store, im image.Image, upper string) string {
	t.Helper()
	root := t.TempDir()
	target, work := filepath.Join(root, "merged"), filepath.Join(root, "work")
	for _, d := range []string{target, work} {
		os.Mkdir(d, 0o755)
	}
	opts := "lowerdir=" + strings.Join(s.LowerDirs(im), ":") + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("overlay", target, "overlay", 0, opts); err != nil {
		if errors.Is(err, unix.ENODEV) {
			t.Skip("kernel without overlayfs")
		}
		t.Fatalf("mount overlay: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(target, unix.MNT_DETACH) })
	return target
}

// TestCopyDir checks CopyDir against `cp -a DIR/. DST` in a real
// overlayfs mount of the same layers.
func TestCopyDir(t *testing.T) {
	testenv.Require(t, "root")
	lower := layerOfHeaders(t,
		dirH("home/", 0o755, 0), dirH("home/user/", 0o700, 1000),
		regH("home/user/.bashrc", 0o644, 1000), regH("home/user/gone", 0o644, 1000),
		dirH("home/user/opq/", 0o755, 1000), regH("home/user/opq/hidden", 0o644, 1000),
		dirH("home/user/merge/", 0o750, 1000), regH("home/user/merge/low", 0o600, 1000),
		regH("home/user/becomes-dir", 0o644, 1000),
		regH("home/other", 0o644, 0),
		tar.Header{Name: "home/linked", Typeflag: tar.TypeSymlink, Linkname: "/etc"},
	)
	upper := layerOfHeaders(t,
		dirH("home/", 0o755, 0), dirH("home/user/", 0o750, 1000),
		regH("home/user/.wh.gone", 0, 0),
		dirH("home/user/opq/", 0o755, 1000), regH("home/user/opq/.wh..wh..opq", 0, 0), regH("home/user/opq/shown", 0o640, 1001),
		dirH("home/user/merge/", 0o750, 1000), regH("home/user/merge/high", 0o4755, 0),
		dirH("home/user/becomes-dir/", 0o711, 1000), regH("home/user/becomes-dir/in", 0o644, 1000),
		tar.Header{Name: "home/user/link", Typeflag: tar.TypeSymlink, Linkname: "../other", Uid: 1000, Gid: 1000},
		tar.Header{Name: "home/user/dangling", Typeflag: tar.TypeSymlink, Linkname: "/nowhere/at/all"},
		tar.Header{Name: "home/user/fifo", Typeflag: tar.TypeFifo, Mode: 0o620, Uid: 1000, Gid: 1000},
	)
	l := newLayout(t)
	s, _ := openStore(t)
	im, err := s.Import(t.Context(), "tree", l.top(l.image(ociImage{layers: [][]byte{lower, upper}, compress: "gzip"})))
	if err != nil {
		t.Fatal(err)
	}
	merged := mountOverlay(t, s, im, t.TempDir())

	want := t.TempDir()
	if out, err := exec.Command("cp", "-a", filepath.Join(merged, "home/user")+"/.", want+"/").CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	got := t.TempDir()
	found, err := s.CopyDir(im, "/home/user", got)
	if err != nil || !found {
		t.Fatalf("CopyDir = %v, %v; want true, nil", found, err)
	}
	w, g := treeOf(t, want), treeOf(t, got)
	if strings.Join(w, "\n") != strings.Join(g, "\n") {
		t.Errorf("CopyDir made\n%s\n\ncp -a made\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	if len(g) < 10 {
		t.Errorf("only %d entries copied: %v", len(g), g)
	}
	// The directory itself: its mode and owner onto dst (the times
	// change as entries are made, so they are not compared).
	var st unix.Stat_t
	unix.Stat(got, &st)
	if st.Mode&0o7777 != 0o750 || st.Uid != 1000 {
		t.Errorf("dst mode %o owner %d, want 750 1000", st.Mode&0o7777, st.Uid)
	}

	// No directory there: nothing copied.
	for _, dir := range []string{"/home/linked", "/home/user/gone", "/home/other", "/nope", "/home/user/.bashrc/x"} {
		dst := t.TempDir()
		found, err := s.CopyDir(im, dir, dst)
		if found || err != nil {
			t.Errorf("CopyDir(%s) = %v, %v; want false, nil", dir, found, err)
		}
		if ents, _ := os.ReadDir(dst); len(ents) != 0 {
			t.Errorf("CopyDir(%s) copied %d entries", dir, len(ents))
		}
	}
	for _, dir := range []string{"home/user", "/home/../etc", "/home/user/"} {
		if _, err := s.CopyDir(im, dir, t.TempDir()); err == nil {
			t.Errorf("CopyDir(%q): no error", dir)
		}
	}
}

// TestLinkDir checks that a directory LinkDir replaced in an overlay's
// upper directory shows as the link, beside what the image has there.
func TestLinkDir(t *testing.T) {
	testenv.Require(t, "root")
	layer := layerOfHeaders(t,
		dirH("home/", 0o751, 0), dirH("home/user/", 0o700, 1000), regH("home/user/.profile", 0o644, 1000),
		regH("home/note", 0o644, 0), dirH("etc/", 0o755, 0),
	)
	l := newLayout(t)
	s, _ := openStore(t)
	im, err := s.Import(t.Context(), "link", l.top(l.image(ociImage{layers: [][]byte{layer}})))
	if err != nil {
		t.Fatal(err)
	}
	upper := t.TempDir()
	if err := s.LinkDir(im, upper, "/home/user", "/workspace"); err != nil {
		t.Fatal(err)
	}
	merged := mountOverlay(t, s, im, upper)
	if target, err := os.Readlink(filepath.Join(merged, "home/user")); err != nil || target != "/workspace" {
		t.Errorf("home/user -> %q, %v; want /workspace", target, err)
	}
	ents, err := os.ReadDir(filepath.Join(merged, "home"))
	if err != nil || len(ents) != 2 || ents[0].Name() != "note" || ents[1].Name() != "user" {
		t.Errorf("home lists %v, %v; want note, user", ents, err)
	}
	var st unix.Stat_t
	unix.Stat(filepath.Join(merged, "home"), &st)
	if st.Mode&0o7777 != 0o751 || st.Uid != 0 {
		t.Errorf("home mode %o owner %d, want 751 0", st.Mode&0o7777, st.Uid)
	}
	// Nothing to link in an image without the directory.
	empty := t.TempDir()
	if err := s.LinkDir(im, empty, "/home/nobody", "/workspace"); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("LinkDir of a missing directory made %d entries", len(ents))
	}
}

// TestCopyDirDepthLimit: a directory tree deeper than CopyDir descends
// (an imported image is untrusted) is refused with rung.ErrLimit.
func TestCopyDirDepthLimit(t *testing.T) {
	testenv.Require(t, "root")
	hdrs := []tar.Header{dirH("home/", 0o755, 0)}
	p := "home/user/"
	for range 200 {
		hdrs = append(hdrs, dirH(p, 0o755, 1000))
		p += "d/"
	}
	l := newLayout(t)
	s, _ := openStore(t)
	im, err := s.Import(t.Context(), "deep", l.top(l.image(ociImage{layers: [][]byte{layerOfHeaders(t, hdrs...)}})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CopyDir(im, "/home/user", t.TempDir()); !errors.Is(err, rung.ErrLimit) {
		t.Errorf("CopyDir of a tree 200 deep: %v, want ErrLimit", err)
	}
}
