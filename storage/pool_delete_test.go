package storage_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/storage"
	"rung.dev/rung/storage/storagetest"
)

// TestDeleteFullWithNested is issue 10's finding 3: a sandbox holding a
// nested subvolume and filled to its quota must still be deleted, nested
// subvolume and all. Before the fix Delete failed with "delete nested
// subvolume N: disk quota exceeded": removing a subvolume reserves
// metadata space charged to the subvolume that holds it, which was full.
// It also pins down what happens to the nested subvolume's writes under
// the level-0 limits (see docs/decisions/storage-pool.md).
func TestDeleteFullWithNested(t *testing.T) {
	testenv.Require(t, "btrfs") // `btrfs subvolume sync` waits for the cleaner
	for _, mode := range []string{storage.QuotaSimple, storage.QuotaFull} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := storagetest.NewTestPoolConfig(t, storage.PoolConfig{Quotas: mode})
			ctx := t.Context()
			const limit = 64 * mib
			must(t, p.Create(ctx, "sbx_a"))
			must(t, p.SetQuota(ctx, "sbx_a", limit))
			ws := filepath.Join(p.Path("sbx_a"), "fs/workspace")
			sub := filepath.Join(ws, "sub")
			storagetest.NestedSubvolume(t, sub)

			// The nested subvolume has a quota group of its own, without
			// a limit: its writes are not charged to the sandbox. The
			// container's seccomp profile is what keeps a sandbox from
			// making one.
			f, err := os.Create(filepath.Join(sub, "big"))
			must(t, err)
			if n, err := storagetest.Fill(f, 96*mib); err != nil {
				t.Errorf("writing 96 MiB into the nested subvolume stopped at %d bytes: %v", n, err)
			}
			f.Close()
			f, err = os.Create(filepath.Join(ws, "fill"))
			must(t, err)
			n, err := storagetest.Fill(f, 4*limit)
			f.Close()
			if !isQuotaErr(err) {
				t.Fatalf("filling the sandbox: wrote %d bytes, err %v; want EDQUOT", n, err)
			}
			must(t, p.Sync(ctx))
			u, err := p.Usage(ctx, "sbx_a")
			must(t, err)
			if u.Bytes > limit {
				t.Errorf("sandbox usage %d past its %d limit", u.Bytes, limit)
			}
			top, err := storage.SubvolIDOf(ws)
			must(t, err)
			nested, err := storage.SubvolIDOf(sub)
			must(t, err)

			if err := p.Delete(ctx, "sbx_a"); err != nil {
				t.Fatalf("Delete of a full sandbox with a nested subvolume: %v", err)
			}
			if names, err := p.List(ctx); err != nil || len(names) != 0 {
				t.Errorf("List after Delete = %v, %v; want nothing", names, err)
			}
			if _, err := p.Usage(ctx, "sbx_a"); !errors.Is(err, rung.ErrNotFound) {
				t.Errorf("Usage after Delete: err = %v, want ErrNotFound", err)
			}
			// The space comes back: once the cleaner has dropped both
			// subvolumes and a commit has run, their quota groups are
			// gone or hold nothing. (The commit first wakes the cleaner;
			// without it the tool waits for the next periodic commit.)
			must(t, p.Sync(ctx))
			if out, err := exec.Command("btrfs", "subvolume", "sync", p.Dir()).CombinedOutput(); err != nil {
				t.Fatalf("btrfs subvolume sync: %v: %s", err, out)
			}
			must(t, p.Sync(ctx))
			for _, id := range []uint64{top, nested} {
				if b := qgroupBytes(t, p.QgroupDirOf(id)); b != 0 {
					t.Errorf("quota group 0/%d still holds %d bytes after Delete", id, b)
				}
			}
			if out, _ := exec.Command("btrfs", "subvolume", "list", p.Dir()).CombinedOutput(); len(strings.TrimSpace(string(out))) != 0 {
				t.Errorf("subvolumes left in the pool:\n%s", out)
			}
		})
	}
}

// qgroupBytes returns the referenced bytes in a quota group's sysfs
// directory, 0 when the group is gone.
func qgroupBytes(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "referenced"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	must(t, err)
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	must(t, err)
	return n
}

// TestDeleteFailureKeepsLimit checks that a Delete that fails after
// lifting the sandbox's limit (to remove its nested subvolumes) puts the
// limit back: a sandbox left in place stays limited.
func TestDeleteFailureKeepsLimit(t *testing.T) {
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	const limit = 16 * mib
	must(t, p.Create(ctx, "sbx_a"))
	must(t, p.SetQuota(ctx, "sbx_a", limit))
	sub := filepath.Join(p.Path("sbx_a"), "fs/workspace/sub")
	storagetest.NestedSubvolume(t, sub)
	undo := storagetest.Undeletable(t, sub)
	if err := p.Delete(ctx, "sbx_a"); err == nil {
		t.Fatal("Delete of a sandbox whose nested subvolume cannot be removed succeeded")
	}
	if ok, err := p.Exists(ctx, "sbx_a"); !ok || err != nil {
		t.Fatalf("Exists after a failed Delete = %v, %v; want it in place", ok, err)
	}
	if u, err := p.Usage(ctx, "sbx_a"); err != nil || u.Limit != limit {
		t.Errorf("Usage after a failed Delete = %+v, %v; want the %d limit back", u, err, limit)
	}
	undo()
	must(t, p.Delete(ctx, "sbx_a"))
}
