package storage_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/storage"
	"rung.dev/rung/storage/storagetest"
)

// tree describes every entry under dir: type, mode, owner, size, times,
// content digest, link target, device number and xattrs, one line each.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		line := fmt.Sprintf("%s mode=%o uid=%d gid=%d nlink=%d", rel, st.Mode, st.Uid, st.Gid, st.Nlink)
		if rel != "." {
			// The subvolume root's times change with every rename in it.
			line += fmt.Sprintf(" mtime=%d.%09d", st.Mtim.Sec, st.Mtim.Nsec)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" size=%d sha=%x", st.Size, sha256.Sum256(b))
		case unix.S_IFLNK:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case unix.S_IFCHR, unix.S_IFBLK:
			line += fmt.Sprintf(" rdev=%d", st.Rdev)
		}
		line += xattrs(t, p)
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func xattrs(t *testing.T, p string) string {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil || n == 0 {
		return ""
	}
	names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
	slices.Sort(names)
	var s string
	for _, name := range names {
		v := make([]byte, 4096)
		m, _ := unix.Lgetxattr(p, name, v)
		s += fmt.Sprintf(" %s=%q", name, v[:max(m, 0)])
	}
	return s
}

// populate gives sandbox name a bit of everything a sandbox holds:
// files large and small, holes, hard and symbolic links, a FIFO, modes and
// owners, xattrs, a reflink, and in rootfs/upper an overlay whiteout and
// an opaque directory.
func populate(t *testing.T, p *storage.Pool, name string) {
	t.Helper()
	root := p.Path(name)
	ws := filepath.Join(root, "fs/workspace")
	must(t, os.MkdirAll(filepath.Join(ws, "src/deep/er"), 0o755))
	for i := range 50 {
		must(t, os.WriteFile(filepath.Join(ws, "src", fmt.Sprintf("f%02d.txt", i)), []byte(strings.Repeat(fmt.Sprint(i), i*100)), 0o644))
	}
	big := make([]byte, 9<<20+123) // spans several 4 MiB archive chunks
	rand.Read(big)
	must(t, os.WriteFile(filepath.Join(ws, "big.bin"), big, 0o600))
	f, err := os.Create(filepath.Join(ws, "sparse"))
	must(t, err)
	f.WriteAt([]byte("end"), 64<<20)
	f.Close()
	must(t, os.Link(filepath.Join(ws, "src/f01.txt"), filepath.Join(ws, "hardlink")))
	must(t, os.Symlink("/etc/passwd", filepath.Join(ws, "abs-link")))
	must(t, os.Symlink("../src/deep", filepath.Join(ws, "src/deep/er/up")))
	must(t, unix.Mkfifo(filepath.Join(ws, "fifo"), 0o640))
	must(t, os.Chmod(filepath.Join(ws, "src/f02.txt"), 0o4755))
	must(t, os.Lchown(filepath.Join(ws, "src/f03.txt"), 1000, 1001))
	must(t, os.Lchown(filepath.Join(ws, "abs-link"), 1000, 1000))
	must(t, unix.Lsetxattr(filepath.Join(ws, "src/f04.txt"), "user.note", []byte("kept"), 0))
	src, err := os.Open(filepath.Join(ws, "big.bin"))
	must(t, err)
	dst, err := os.Create(filepath.Join(ws, "reflink.bin"))
	must(t, err)
	must(t, unix.IoctlFileClone(int(dst.Fd()), int(src.Fd())))
	src.Close()
	dst.Close()
	upper := filepath.Join(root, "rootfs/upper")
	must(t, os.MkdirAll(filepath.Join(upper, "usr/lib/pkg"), 0o755))
	must(t, os.WriteFile(filepath.Join(upper, "usr/lib/pkg/mod.py"), []byte("print('installed')\n"), 0o644))
	must(t, unix.Mknod(filepath.Join(upper, "usr/lib/removed"), unix.S_IFCHR|0o000, 0))
	must(t, unix.Lsetxattr(filepath.Join(upper, "usr/lib/pkg"), "trusted.overlay.opaque", []byte("y"), 0))
	must(t, os.WriteFile(filepath.Join(root, "fs/tmp/scratch"), []byte("tmp"), 0o644))
}

func exportBytes(t *testing.T, p *storage.Pool, name, parent string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := p.Export(t.Context(), &buf, storage.ExportRequest{Name: name, Parent: parent, Meta: []byte(`{"k":"v"}`)}); err != nil {
		t.Fatalf("Export(%s, parent %q): %v", name, parent, err)
	}
	return buf.Bytes()
}

// importBytes imports archive as name, incremental against parent.
func importBytes(t *testing.T, p *storage.Pool, archive []byte, name, parent string) (storage.ArchiveHeader, error) {
	t.Helper()
	var h storage.ArchiveHeader
	_, err := p.Import(t.Context(), bytes.NewReader(archive), storage.ImportRequest{Name: name, Accept: func(got storage.ArchiveHeader) (string, int64, error) {
		h = got
		return parent, 0, nil
	}})
	return h, err
}

func sameTree(t *testing.T, p *storage.Pool, a, b string) {
	t.Helper()
	if d := cmp.Diff(tree(t, p.Path(a)), tree(t, p.Path(b))); d != "" {
		t.Errorf("%s and %s differ (-%s +%s):\n%s", a, b, a, b, d)
	}
}

// TestExportImport round-trips a snapshot through an archive, whole and
// then incrementally against the imported parent, and checks that the
// imported snapshots hold exactly what the originals do.
func TestExportImport(t *testing.T) {
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	must(t, p.Create(ctx, "sbx_a"))
	populate(t, p, "sbx_a")
	must(t, p.Snapshot(ctx, "sbx_a", "snp_v1"))

	arch := exportBytes(t, p, "snp_v1", "")
	h, err := importBytes(t, p, arch, "snp_in1", "")
	must(t, err)
	if string(h.Meta) != `{"k":"v"}` || h.ParentUUID != "" {
		t.Errorf("header = %+v", h)
	}
	sameTree(t, p, "snp_v1", "snp_in1")
	info, err := p.Info(ctx, "snp_in1")
	must(t, err)
	v1, _ := p.Info(ctx, "snp_v1")
	if !info.ReadOnly || info.ReceivedUUID != v1.UUID {
		t.Errorf("imported snapshot info %+v; want read-only, received as %s", info, v1.UUID)
	}

	// Changes of every kind, then an incremental archive.
	ws := filepath.Join(p.Path("sbx_a"), "fs/workspace")
	must(t, os.Rename(filepath.Join(ws, "src/f05.txt"), filepath.Join(ws, "moved.txt")))
	must(t, os.Remove(filepath.Join(ws, "src/f06.txt")))
	must(t, os.RemoveAll(filepath.Join(ws, "src/deep")))
	must(t, os.WriteFile(filepath.Join(ws, "src/f07.txt"), []byte("changed"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "new.txt"), []byte("new"), 0o644))
	must(t, os.Chmod(filepath.Join(ws, "src/f08.txt"), 0o600))
	f, err := os.OpenFile(filepath.Join(ws, "big.bin"), os.O_WRONLY, 0)
	must(t, err)
	f.WriteAt([]byte("patched"), 5<<20)
	f.Close()
	must(t, p.Snapshot(ctx, "sbx_a", "snp_v2"))
	inc := exportBytes(t, p, "snp_v2", "snp_v1")
	if len(inc) >= len(arch)/4 {
		t.Errorf("incremental archive is %d bytes, the whole one %d: want much smaller", len(inc), len(arch))
	}
	if _, err := importBytes(t, p, inc, "snp_in2", ""); !errors.Is(err, rung.ErrConflict) {
		t.Errorf("incremental import without its parent: %v, want conflict", err)
	}
	if _, err := importBytes(t, p, inc, "snp_in2", "snp_v2"); !errors.Is(err, rung.ErrConflict) {
		t.Errorf("incremental import on the wrong parent: %v, want conflict", err)
	}
	_, err = importBytes(t, p, inc, "snp_in2", "snp_in1")
	must(t, err)
	sameTree(t, p, "snp_v2", "snp_in2")
	// A chain: the imported snapshot is a parent for the next export too.
	must(t, p.Fork(ctx, "snp_in2", "sbx_b"))
	must(t, os.WriteFile(filepath.Join(p.Path("sbx_b"), "fs/workspace/third"), []byte("3"), 0o644))
	must(t, p.Snapshot(ctx, "sbx_b", "snp_v3"))
	_, err = importBytes(t, p, exportBytes(t, p, "snp_v3", "snp_in2"), "snp_in3", "snp_v2")
	must(t, err)
	sameTree(t, p, "snp_v3", "snp_in3")
	assertStagingEmpty(t, p)
}

func assertStagingEmpty(t *testing.T, p *storage.Pool) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(p.Dir(), "staging"))
	must(t, err)
	if len(ents) != 0 {
		t.Errorf("staging holds %d entries, want none", len(ents))
	}
}
