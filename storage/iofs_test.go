package storage

import (
	"errors"
	"io/fs"
	"os"
	"testing"
	"testing/fstest"
)

func TestIOFS(t *testing.T) {
	v := newView(t)
	files := map[string]string{
		"/workspace/a.txt":         "a",
		"/workspace/dir/b.txt":     "bee",
		"/workspace/dir/sub/c.go":  "package c\n",
		"/workspace/.hidden":       "",
		"/tmp/outside-of-dir.txt":  "tmp",
		"/workspace/dir/empty.txt": "",
	}
	for p, data := range files {
		must(t, os.MkdirAll(v.h(p[:len(p)-len(baseName(p))]), 0o755))
		must(t, os.WriteFile(v.h(p), []byte(data), 0o644))
	}
	must(t, os.MkdirAll(v.h("/workspace/emptydir"), 0o755))
	must(t, os.Symlink("dir/b.txt", v.h("/workspace/link")))
	must(t, os.Symlink("/tmp", v.h("/workspace/tmplink")))

	fsys := IOFS(v, "/workspace")
	if err := fstest.TestFS(fsys, "a.txt", "dir/b.txt", "dir/sub/c.go", "emptydir", "link", "tmplink"); err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(IOFS(v, "/"), "workspace/a.txt", "tmp/outside-of-dir.txt"); err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(IOFS(v, "/workspace/dir/"), "b.txt", "sub/c.go"); err != nil {
		t.Fatal(err)
	}

	// A dangling link would fail TestFS's walk (as it does for os.DirFS).
	must(t, os.Symlink("../../secret", v.h("/workspace/escape")))
	tests := []struct {
		name string
		want error
	}{
		{"../secret", fs.ErrInvalid},
		{"/etc/passwd", fs.ErrInvalid},
		{"dir/../a.txt", fs.ErrInvalid},
		{"escape", fs.ErrNotExist},
		{"nope", fs.ErrNotExist},
	}
	for _, tc := range tests {
		_, err := fs.ReadFile(fsys, tc.name)
		if !errors.Is(err, tc.want) {
			t.Errorf("ReadFile(%q) = %v, want %v", tc.name, err, tc.want)
		}
		if pe, ok := errors.AsType[*fs.PathError](err); !ok || pe.Path != tc.name {
			t.Errorf("ReadFile(%q): error %v does not name %q", tc.name, err, tc.name)
		}
	}
	if b, err := fs.ReadFile(fsys, "tmplink/outside-of-dir.txt"); string(b) != "tmp" {
		t.Errorf("ReadFile through a link to /tmp = %q, %v", b, err)
	}
	matches, err := fs.Glob(fsys, "dir/*.txt")
	if err != nil || len(matches) != 2 {
		t.Errorf("Glob = %q, %v", matches, err)
	}
	v.checkOutside(t)
}
