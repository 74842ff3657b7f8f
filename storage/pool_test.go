package storage_test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/storage"
	"rung.dev/rung/storage/storagetest"
)

func writeFile(t *testing.T, p *storage.Pool, name, rel, data string) {
	t.Helper()
	path := filepath.Join(p.Path(name), "fs", rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p *storage.Pool, name, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.Path(name), "fs", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCreateLayout(t *testing.T) {
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	if err := p.Create(ctx, "sbx_a"); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		path string
		mode os.FileMode
	}{
		{"fs", 0o755 | os.ModeDir},
		{"fs/workspace", 0o755 | os.ModeDir},
		{"fs/tmp", 0o777 | os.ModeDir | os.ModeSticky},
		{"rootfs/upper", 0o755 | os.ModeDir},
		{"rootfs/work", 0o700 | os.ModeDir},
	}
	for _, w := range want {
		fi, err := os.Lstat(filepath.Join(p.Path("sbx_a"), w.path))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != w.mode {
			t.Errorf("mode of %s = %v, want %v", w.path, fi.Mode(), w.mode)
		}
	}
	if ok, err := p.Exists(ctx, "sbx_a"); !ok || err != nil {
		t.Errorf("Exists(sbx_a) = %v, %v, want true, nil", ok, err)
	}
	if ok, err := p.Exists(ctx, "sbx_b"); ok || err != nil {
		t.Errorf("Exists(sbx_b) = %v, %v, want false, nil", ok, err)
	}
	if got, want := p.Path("sbx_a"), filepath.Join(p.Dir(), "sandboxes", "sbx_a"); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
	if got := p.Path("snp_a"); got != filepath.Join(p.Dir(), "snapshots", "snp_a") {
		t.Errorf("Path(snp_a) = %q", got)
	}
	// The file view and the host directory are the same files.
	r, err := p.Root("sbx_a")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := r.OpenFile("/workspace/hello", os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "hi")
	f.Close()
	if got := readFile(t, p, "sbx_a", "workspace/hello"); got != "hi" {
		t.Errorf("file written through Root reads %q, want %q", got, "hi")
	}
	// No staging leftovers after a successful create.
	if ents, _ := os.ReadDir(filepath.Join(p.Dir(), "staging")); len(ents) != 0 {
		t.Errorf("staging holds %v after Create", ents)
	}
}

func TestSnapshotFork(t *testing.T) {
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	must(t, p.Create(ctx, "sbx_a"))
	writeFile(t, p, "sbx_a", "workspace/f", "v1")
	writeFile(t, p, "sbx_a", "tmp/t", "tmp1")
	must(t, os.WriteFile(filepath.Join(p.Path("sbx_a"), "rootfs/upper/etc"), []byte("up"), 0o644))
	must(t, p.Snapshot(ctx, "sbx_a", "snp_1"))
	writeFile(t, p, "sbx_a", "workspace/f", "v2")

	// The snapshot kept v1 of everything, and is read-only.
	if got := readFile(t, p, "snp_1", "workspace/f"); got != "v1" {
		t.Errorf("snapshot reads %q, want v1", got)
	}
	if got := readFile(t, p, "snp_1", "tmp/t"); got != "tmp1" {
		t.Errorf("snapshot tmp reads %q, want tmp1", got)
	}
	if b, err := os.ReadFile(filepath.Join(p.Path("snp_1"), "rootfs/upper/etc")); string(b) != "up" {
		t.Errorf("snapshot rootfs/upper/etc = %q, %v", b, err)
	}
	err := os.WriteFile(filepath.Join(p.Path("snp_1"), "fs/workspace/f"), []byte("x"), 0o644)
	if !errors.Is(err, syscall.EROFS) {
		t.Errorf("write into snapshot: %v, want EROFS", err)
	}

	// Forks of the snapshot and of the live sandbox are writable and
	// independent.
	must(t, p.Fork(ctx, "snp_1", "sbx_b"))
	must(t, p.Fork(ctx, "sbx_a", "sbx_c"))
	if got := readFile(t, p, "sbx_b", "workspace/f"); got != "v1" {
		t.Errorf("fork of snapshot reads %q, want v1", got)
	}
	if got := readFile(t, p, "sbx_c", "workspace/f"); got != "v2" {
		t.Errorf("fork of sandbox reads %q, want v2", got)
	}
	writeFile(t, p, "sbx_b", "workspace/f", "b")
	if got := readFile(t, p, "snp_1", "workspace/f"); got != "v1" {
		t.Errorf("snapshot changed by its fork: %q", got)
	}
	// A snapshot of a snapshot works too.
	must(t, p.Snapshot(ctx, "snp_1", "snp_2"))

	got, err := p.List(ctx)
	must(t, err)
	if want := []string{"sbx_a", "sbx_b", "sbx_c", "snp_1", "snp_2"}; !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}

	// Delete works on sandboxes and read-only snapshots alike, and a
	// fork survives the deletion of its origin.
	for _, n := range []string{"snp_1", "sbx_a", "snp_2"} {
		must(t, p.Delete(ctx, n))
		if ok, _ := p.Exists(ctx, n); ok {
			t.Errorf("%s exists after Delete", n)
		}
	}
	if got := readFile(t, p, "sbx_b", "workspace/f"); got != "b" {
		t.Errorf("fork reads %q after its origin was deleted", got)
	}
	got, _ = p.List(ctx)
	if want := []string{"sbx_b", "sbx_c"}; !slices.Equal(got, want) {
		t.Errorf("List after deletes = %v, want %v", got, want)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestBadInput(t *testing.T) {
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	must(t, p.Create(ctx, "sbx_ok"))
	must(t, p.Snapshot(ctx, "sbx_ok", "snp_ok"))

	bad := []string{
		"", "sbx_", "snp_", "sbx", "abc", "sbx_A", "sbx_a-b", "sbx_a.b", "sbx_a/b",
		"../sbx_a", "sbx_../../etc", "sbx_..", "..", ".", "/", "sbx_a\x00", "sbx_a\n",
		"sbx_é", " sbx_a", "SBX_a", "sbx_" + strings.Repeat("a", 61),
		"staging", "sandboxes", "tmp_x",
	}
	ops := map[string]func(name string) error{
		"Create":       func(n string) error { return p.Create(ctx, n) },
		"SnapshotSrc":  func(n string) error { return p.Snapshot(ctx, n, "snp_new") },
		"SnapshotDst":  func(n string) error { return p.Snapshot(ctx, "sbx_ok", n) },
		"ForkSrc":      func(n string) error { return p.Fork(ctx, n, "sbx_new") },
		"ForkDst":      func(n string) error { return p.Fork(ctx, "sbx_ok", n) },
		"Delete":       func(n string) error { return p.Delete(ctx, n) },
		"Exists":       func(n string) error { _, err := p.Exists(ctx, n); return err },
		"SetQuota":     func(n string) error { return p.SetQuota(ctx, n, 1<<20) },
		"Usage":        func(n string) error { _, err := p.Usage(ctx, n); return err },
		"Root":         func(n string) error { _, err := p.Root(n); return err },
		"DiffFrom":     func(n string) error { _, err := p.Diff(ctx, n, "snp_ok"); return err },
		"DiffTo":       func(n string) error { _, err := p.Diff(ctx, "snp_ok", n); return err },
		"SnapshotKind": func(string) error { return p.Snapshot(ctx, "sbx_ok", "sbx_new") },
		"ForkKind":     func(string) error { return p.Fork(ctx, "sbx_ok", "snp_new") },
		"CreateKind":   func(string) error { return p.Create(ctx, "snp_new") },
	}
	for op, f := range ops {
		for _, n := range bad {
			if err := f(n); !errors.Is(err, rung.ErrInvalid) {
				t.Errorf("%s(%q) = %v, want ErrInvalid", op, n, err)
			}
		}
	}
	if got := p.Path("../x"); got != "" {
		t.Errorf("Path(../x) = %q, want empty", got)
	}
	// A maximal valid name works.
	long := "sbx_" + strings.Repeat("a", storage.MaxSubvolNameLen-4)
	must(t, p.Create(ctx, long))
	must(t, p.Delete(ctx, long))

	tests := []struct {
		name string
		err  error
		do   func() error
	}{
		{"delete missing", rung.ErrNotFound, func() error { return p.Delete(ctx, "sbx_missing") }},
		{"delete missing snapshot", rung.ErrNotFound, func() error { return p.Delete(ctx, "snp_missing") }},
		{"snapshot missing", rung.ErrNotFound, func() error { return p.Snapshot(ctx, "sbx_missing", "snp_x") }},
		{"fork missing", rung.ErrNotFound, func() error { return p.Fork(ctx, "snp_missing", "sbx_x") }},
		{"root missing", rung.ErrNotFound, func() error { _, err := p.Root("sbx_missing"); return err }},
		{"quota missing", rung.ErrNotFound, func() error { return p.SetQuota(ctx, "sbx_missing", 1) }},
		{"usage missing", rung.ErrNotFound, func() error { _, err := p.Usage(ctx, "sbx_missing"); return err }},
		{"diff missing", rung.ErrNotFound, func() error { _, err := p.Diff(ctx, "snp_ok", "snp_missing"); return err }},
		{"double create", rung.ErrExists, func() error { return p.Create(ctx, "sbx_ok") }},
		{"snapshot onto existing", rung.ErrExists, func() error { return p.Snapshot(ctx, "sbx_ok", "snp_ok") }},
		{"fork onto existing", rung.ErrExists, func() error { return p.Fork(ctx, "snp_ok", "sbx_ok") }},
		{"negative quota", rung.ErrInvalid, func() error { return p.SetQuota(ctx, "sbx_ok", -1) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, tc.err) {
				t.Errorf("got %v, want %v", err, tc.err)
			}
		})
	}
	// A plain directory where a subvolume should be is not a subvolume.
	must(t, os.Mkdir(filepath.Join(p.Dir(), "sandboxes", "sbx_plain"), 0o700))
	if err := p.Delete(ctx, "sbx_plain"); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("Delete(plain dir) = %v, want ErrNotFound", err)
	}
	// Failed operations left nothing behind.
	got, _ := p.List(ctx)
	if want := []string{"sbx_ok", "sbx_plain", "snp_ok"}; !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	if ents, _ := os.ReadDir(filepath.Join(p.Dir(), "staging")); len(ents) != 0 {
		t.Errorf("staging holds %v", ents)
	}
	// Closed pools refuse work.
	must(t, p.Close())
	must(t, p.Close())
	if err := p.Create(ctx, "sbx_late"); !errors.Is(err, rung.ErrUnavailable) {
		t.Errorf("Create after Close = %v, want ErrUnavailable", err)
	}
}

func TestConcurrentCreate(t *testing.T) {
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() { errs <- p.Create(ctx, "sbx_race") }()
	}
	var ok, exists int
	for range n {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, rung.ErrExists):
			exists++
		default:
			t.Errorf("Create: %v", err)
		}
	}
	if ok != 1 || exists != n-1 {
		t.Errorf("%d creates succeeded and %d said exists, want 1 and %d", ok, exists, n-1)
	}
	if ents, _ := os.ReadDir(filepath.Join(p.Dir(), "staging")); len(ents) != 0 {
		t.Errorf("staging holds %v", ents)
	}
}

func TestOpenReopenClose(t *testing.T) {
	testenv.Require(t, "root", "mkfs.btrfs", "losetup")
	ctx := t.Context()
	dir := t.TempDir()
	cfg := storage.PoolConfig{Dir: dir, ImageSize: 1 << 30}
	image := filepath.Join(dir, "pool.img")

	p, err := storage.Open(ctx, cfg)
	must(t, err)
	t.Cleanup(func() { p.Close() })
	must(t, p.Create(ctx, "sbx_a"))
	writeFile(t, p, "sbx_a", "workspace/f", "kept")

	// The pool is mounted nodev,nosuid.
	var st unix.Statfs_t
	must(t, unix.Statfs(p.Dir(), &st))
	if st.Flags&unix.ST_NODEV == 0 || st.Flags&unix.ST_NOSUID == 0 {
		t.Errorf("pool mount flags %#x lack nodev or nosuid", st.Flags)
	}
	if devs, _ := storage.LoopDevices(image); len(devs) != 1 {
		t.Errorf("loop devices for the image = %v, want one", devs)
	}
	// A second opener is refused while the first holds the pool.
	if _, err := storage.Open(ctx, cfg); !errors.Is(err, rung.ErrConflict) {
		t.Errorf("second Open = %v, want ErrConflict", err)
	}
	must(t, p.Close())
	must(t, p.Close())
	if devs, _ := storage.LoopDevices(image); len(devs) != 0 {
		t.Errorf("loop devices after Close = %v, want none", devs)
	}
	if mounted(t, filepath.Join(dir, "pool")) {
		t.Errorf("pool still mounted after Close")
	}

	// A loop device left on the image (attached by hand, without
	// autoclear) is detached rather than stacked under a second one.
	if out, err := exec.Command("losetup", "-f", image).CombinedOutput(); err != nil {
		t.Fatalf("losetup: %v: %s", err, out)
	}
	if devs, _ := storage.LoopDevices(image); len(devs) != 1 {
		t.Fatalf("loop devices after losetup = %v, want one", devs)
	}

	// Re-open: the image is mounted again and the data is there.
	p2, err := storage.Open(ctx, cfg)
	must(t, err)
	t.Cleanup(func() { p2.Close() })
	if devs, _ := storage.LoopDevices(image); len(devs) != 1 {
		t.Errorf("loop devices after re-open = %v, want one", devs)
	}
	if got := readFile(t, p2, "sbx_a", "workspace/f"); got != "kept" {
		t.Errorf("after re-open read %q, want kept", got)
	}
	if p2.QuotaMode() != p.QuotaMode() {
		t.Errorf("quota mode changed across re-open: %s -> %s", p.QuotaMode(), p2.QuotaMode())
	}

	// A user-provided mount is used as is and left mounted by Close.
	p3, err := storage.Open(ctx, storage.PoolConfig{Mount: p2.Dir()})
	must(t, err)
	if ok, err := p3.Exists(ctx, "sbx_a"); !ok || err != nil {
		t.Errorf("Exists through user mount = %v, %v", ok, err)
	}
	must(t, p3.Close())
	if !mounted(t, p2.Dir()) {
		t.Errorf("Close of a user-provided mount unmounted it")
	}

	// Grow enlarges the filesystem online.
	must(t, unix.Statfs(p2.Dir(), &st))
	before := st.Blocks * uint64(st.Bsize)
	must(t, p2.Grow(ctx, 2<<30))
	must(t, unix.Statfs(p2.Dir(), &st))
	if after := st.Blocks * uint64(st.Bsize); after <= before {
		t.Errorf("size after Grow = %d, before %d", after, before)
	}
	if err := p2.Grow(ctx, 1<<20); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("shrinking Grow = %v, want ErrInvalid", err)
	}
	must(t, p2.Close())
	if devs, _ := storage.LoopDevices(image); len(devs) != 0 {
		t.Errorf("loop devices after Close = %v, want none", devs)
	}
}

func TestOpenUnavailable(t *testing.T) {
	testenv.Require(t, "root")
	ctx := t.Context()
	// t.TempDir is not btrfs on the test hosts; skip where it is.
	dir := t.TempDir()
	var st unix.Statfs_t
	must(t, unix.Statfs(dir, &st))
	if st.Type == unix.BTRFS_SUPER_MAGIC {
		t.Skip("temp dir is on btrfs")
	}
	_, err := storage.Open(ctx, storage.PoolConfig{Mount: dir})
	if !errors.Is(err, rung.ErrUnavailable) || !strings.Contains(err.Error(), "btrfs") {
		t.Errorf("Open on a non-btrfs mount = %v, want ErrUnavailable naming btrfs", err)
	}
	if _, err := storage.Open(ctx, storage.PoolConfig{}); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("Open with no Dir = %v, want ErrInvalid", err)
	}
	if _, err := storage.Open(ctx, storage.PoolConfig{Dir: t.TempDir(), Quotas: "bogus", ImageSize: 1 << 30}); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("Open with bad quota mode = %v, want ErrInvalid", err)
	}
	// Without mkfs.btrfs on PATH, a new pool cannot be made, and the
	// message says what to install.
	t.Setenv("PATH", t.TempDir())
	_, err = storage.Open(ctx, storage.PoolConfig{Dir: t.TempDir()})
	if !errors.Is(err, rung.ErrUnavailable) || !strings.Contains(err.Error(), "btrfs-progs") {
		t.Errorf("Open without mkfs.btrfs = %v, want ErrUnavailable naming btrfs-progs", err)
	}
}

func mounted(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	must(t, err)
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// TestDeleteNested: a container can create subvolumes inside its
// sandbox (it needs no privilege to); Delete and Reconcile remove them too.
func TestDeleteNested(t *testing.T) {
	testenv.Require(t, "btrfs")
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	for _, n := range []string{"sbx_a", "sbx_b"} {
		must(t, p.Create(ctx, n))
		ws := filepath.Join(p.Path(n), "fs/workspace")
		for _, rel := range []string{"n1", "n1/n2", "n3"} {
			out, err := exec.Command("btrfs", "subvolume", "create", filepath.Join(ws, rel)).CombinedOutput()
			if err != nil {
				t.Fatalf("btrfs subvolume create: %v: %s", err, out)
			}
		}
		out, err := exec.Command("btrfs", "subvolume", "snapshot", "-r", filepath.Join(ws, "n3"), filepath.Join(ws, "n1/n2/ro")).CombinedOutput()
		if err != nil {
			t.Fatalf("btrfs subvolume snapshot: %v: %s", err, out)
		}
	}
	must(t, p.Delete(ctx, "sbx_a"))
	_, err := p.Reconcile(ctx, func(string) bool { return false })
	must(t, err)
	out, err := exec.Command("btrfs", "subvolume", "list", p.Dir()).CombinedOutput()
	must(t, err)
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("subvolumes left after Delete and Reconcile:\n%s", s)
	}
}
