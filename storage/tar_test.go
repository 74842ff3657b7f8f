package storage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/internal/testenv"
)

// buildTree makes a tree with every kind of entry the tar code handles,
// under host directory root.
func buildTree(t *testing.T, root string) {
	t.Helper()
	mt := time.Date(2021, 5, 6, 7, 8, 9, 0, time.UTC)
	long := strings.Repeat("long-name-", 12)
	files := map[string]os.FileMode{
		"a.txt": 0o644, "exec.sh": 0o755, "private": 0o600, "dir/b.txt": 0o640,
		"dir/sub/c": 0o444, "dir/" + long + "/" + long: 0o644,
	}
	for name, mode := range files {
		p := filepath.Join(root, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte("content of "+name), mode))
		must(t, os.Chmod(p, mode))
	}
	must(t, os.WriteFile(filepath.Join(root, "empty"), nil, 0o644))
	must(t, os.MkdirAll(filepath.Join(root, "emptydir"), 0o700))
	must(t, os.Symlink("dir/b.txt", filepath.Join(root, "rel-link")))
	must(t, os.Symlink("/workspace/elsewhere", filepath.Join(root, "abs-link")))
	must(t, os.Symlink("../../../nowhere", filepath.Join(root, "dir/dangling")))
	must(t, os.Link(filepath.Join(root, "a.txt"), filepath.Join(root, "dir/hard")))
	must(t, os.Chmod(filepath.Join(root, "dir/sub"), 0o555))
	must(t, unix.Mkfifo(filepath.Join(root, "fifo"), 0o644)) // skipped on export
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if d.Type()&fs.ModeSymlink == 0 {
			os.Chtimes(p, mt, mt)
		}
		return nil
	})
}

// treeOf describes a host tree: one line per entry with type, mode,
// mtime, size, content or link target, and which names share an inode.
func treeOf(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	inodes := map[uint64]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := rel + " " + fi.Mode().String()
		switch {
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			line += " " + fi.ModTime().UTC().Format(time.RFC3339) + " " + string(b)
			ino := fi.Sys().(*syscall.Stat_t).Ino
			if first, ok := inodes[ino]; ok {
				line += " =" + first
			} else {
				inodes[ino] = rel
			}
		case fi.IsDir():
			line += " " + fi.ModTime().UTC().Format(time.RFC3339)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		default:
			return nil // special files are not archived
		}
		out = append(out, line)
		return nil
	})
	must(t, err)
	slices.Sort(out)
	return out
}

func TestTarRoundTrip(t *testing.T) {
	v := newView(t)
	buildTree(t, v.h("/workspace/src"))
	want := treeOf(t, v.h("/workspace/src"))

	var buf bytes.Buffer
	must(t, ExportTar(t.Context(), v, "/workspace/src", &buf))
	archive := buf.Bytes()
	must(t, importTar(t.Context(), v, "/workspace/dst", bytes.NewReader(archive), TarOptions{}))
	if got := treeOf(t, v.h("/workspace/dst")); !slices.Equal(got, want) {
		t.Errorf("round trip:\n got %q\nwant %q", got, want)
	}

	// Compressed input is detected.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(archive)
	zw.Close()
	must(t, importTar(t.Context(), v, "/tmp/gz", &gz, TarOptions{}))
	if got := treeOf(t, v.h("/tmp/gz")); !slices.Equal(got, want) {
		t.Errorf("gzip round trip:\n got %q\nwant %q", got, want)
	}
	// Importing over an existing tree replaces files and keeps dirs.
	must(t, importTar(t.Context(), v, "/workspace/dst", bytes.NewReader(archive), TarOptions{}))
	if got := treeOf(t, v.h("/workspace/dst")); !slices.Equal(got, want) {
		t.Errorf("second import:\n got %q\nwant %q", got, want)
	}
	v.checkOutside(t)
}

// TestTarGNU checks both directions against GNU tar.
func TestTarGNU(t *testing.T) {
	testenv.Require(t, "tar")
	v := newView(t)
	buildTree(t, v.h("/workspace/src"))
	want := treeOf(t, v.h("/workspace/src"))

	var buf bytes.Buffer
	must(t, ExportTar(t.Context(), v, "/workspace/src", &buf))
	out := t.TempDir()
	cmd := exec.Command("tar", "-x", "-p", "-C", out)
	cmd.Stdin = &buf
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GNU tar -x of our archive: %v\n%s", err, b)
	}
	if got := treeOf(t, out); !slices.Equal(got, want) {
		t.Errorf("GNU tar extracts:\n got %q\nwant %q", got, want)
	}

	gz, err := exec.Command("tar", "-c", "-z", "-C", v.h("/workspace/src"), ".").Output()
	must(t, err)
	must(t, importTar(t.Context(), v, "/workspace/fromgnu", bytes.NewReader(gz), TarOptions{SkipSpecial: true}))
	if got := treeOf(t, v.h("/workspace/fromgnu")); !slices.Equal(got, want) {
		t.Errorf("import of GNU tar -cz:\n got %q\nwant %q", got, want)
	}
}

type tarEntry struct {
	name, link string
	typ        byte
	body       string
}

func makeTar(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: typ, Mode: 0o644, Size: int64(len(e.body))}
		if typ != tar.TypeReg {
			hdr.Size = 0
		}
		must(t, tw.WriteHeader(hdr))
		tw.Write([]byte(e.body))
	}
	must(t, tw.Close())
	return buf.Bytes()
}

func TestTarMalicious(t *testing.T) {
	reg := func(name string) tarEntry { return tarEntry{name: name, body: "evil"} }
	sym := func(name, target string) tarEntry { return tarEntry{name: name, link: target, typ: tar.TypeSymlink} }
	tests := []struct {
		name    string
		entries []tarEntry
		opts    TarOptions
		want    error
	}{
		{"dotdot", []tarEntry{reg("../evil")}, TarOptions{}, rung.ErrInvalid},
		{"inner dotdot", []tarEntry{reg("a/../../evil")}, TarOptions{}, rung.ErrInvalid},
		{"absolute", []tarEntry{reg("/tmp/evil")}, TarOptions{}, rung.ErrInvalid},
		{"through abs symlink", []tarEntry{sym("l", "/tmp"), reg("l/evil")}, TarOptions{}, rung.ErrInvalid},
		{"through up symlink", []tarEntry{sym("l", "../../.."), reg("l/tmp/evil")}, TarOptions{}, rung.ErrInvalid},
		{"through inner symlink", []tarEntry{sym("l", "."), reg("l/evil")}, TarOptions{}, rung.ErrInvalid},
		{"through deep symlink", []tarEntry{{name: "d/", typ: tar.TypeDir}, sym("d/l", "/tmp"), reg("d/l/x/evil")}, TarOptions{}, rung.ErrInvalid},
		{"dir replaced by symlink", []tarEntry{{name: "d/", typ: tar.TypeDir}, sym("d", "/tmp"), reg("d/evil")}, TarOptions{}, rung.ErrInvalid},
		{"through existing symlink", []tarEntry{reg("pre/evil")}, TarOptions{}, rung.ErrInvalid},
		{"hard link up", []tarEntry{{name: "h", link: "../../secret", typ: tar.TypeLink}}, TarOptions{}, rung.ErrInvalid},
		{"hard link absolute", []tarEntry{{name: "h", link: "/tmp/x", typ: tar.TypeLink}}, TarOptions{}, rung.ErrInvalid},
		{"hard link through symlink", []tarEntry{sym("l", "/tmp"), {name: "h", link: "l/victim", typ: tar.TypeLink}}, TarOptions{}, rung.ErrInvalid},
		{"char device", []tarEntry{{name: "null", typ: tar.TypeChar}}, TarOptions{}, rung.ErrInvalid},
		{"fifo", []tarEntry{{name: "p", typ: tar.TypeFifo}}, TarOptions{}, rung.ErrInvalid},
		{"fifo skipped", []tarEntry{{name: "p", typ: tar.TypeFifo}, reg("ok")}, TarOptions{SkipSpecial: true}, nil},
		{"too many entries", []tarEntry{reg("a"), reg("b"), reg("c")}, TarOptions{MaxEntries: 2}, rung.ErrTooLarge},
		{"too many bytes", []tarEntry{reg("a"), reg("b"), reg("c")}, TarOptions{MaxBytes: 10}, rung.ErrTooLarge},
		{"garbage", nil, TarOptions{}, rung.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newView(t)
			must(t, os.MkdirAll(v.h("/workspace/dst"), 0o755))
			must(t, os.WriteFile(v.h("/tmp/victim"), []byte("victim"), 0o644))
			must(t, os.Symlink("/tmp", v.h("/workspace/dst/pre")))
			data := makeTar(t, tc.entries...)
			if tc.entries == nil {
				data = []byte(strings.Repeat("not a tar archive ", 100))
			}
			err := importTar(t.Context(), v, "/workspace/dst", bytes.NewReader(data), tc.opts)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("ImportTar = %v, want %v", err, tc.want)
			}
			if errors.Is(err, rung.ErrTooLarge) {
				if _, ok := errors.AsType[*rung.LimitError](err); !ok {
					t.Errorf("limit error %T is not a *rung.LimitError", err)
				}
			}
			if err != nil && strings.Contains(err.Error(), v.parent) {
				t.Errorf("error %q leaks the host path", err)
			}
			ents, _ := os.ReadDir(v.h("/tmp"))
			if len(ents) != 1 {
				t.Errorf("/tmp of the view now holds %d entries", len(ents))
			}
			if b, _ := os.ReadFile(v.h("/tmp/victim")); string(b) != "victim" {
				t.Errorf("/tmp/victim = %q", b)
			}
			if fi, _ := os.Stat(v.h("/tmp/victim")); fi.Sys().(*syscall.Stat_t).Nlink != 1 {
				t.Errorf("/tmp/victim was hard-linked")
			}
			v.checkOutside(t)
		})
	}
}

func TestTarCancel(t *testing.T) {
	v := newView(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	data := makeTar(t, tarEntry{name: "a", body: "x"})
	if err := importTar(ctx, v, "/workspace/dst", bytes.NewReader(data), TarOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("ImportTar with a cancelled ctx = %v", err)
	}
	if _, err := os.Lstat(v.h("/workspace/dst/a")); err == nil {
		t.Errorf("ImportTar wrote with a cancelled ctx")
	}
	must(t, os.WriteFile(v.h("/workspace/f"), nil, 0o644))
	if err := ExportTar(ctx, v, "/workspace", io.Discard); !errors.Is(err, context.Canceled) {
		t.Errorf("ExportTar with a cancelled ctx = %v", err)
	}
	if err := ExportTar(t.Context(), v, "/workspace/f", io.Discard); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("ExportTar of a file = %v, want ErrInvalid", err)
	}
}

// importTar is ImportTar for the tests that check only its error.
func importTar(ctx context.Context, v FS, dir string, r io.Reader, opts TarOptions) error {
	_, err := ImportTar(ctx, v, dir, r, opts)
	return err
}
