package storage_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"rung.dev/rung/storage"
	"rung.dev/rung/storage/storagetest"
)

func TestDiff(t *testing.T) {
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	must(t, p.Create(ctx, "sbx_a"))
	base := filepath.Join(p.Path("sbx_a"), "fs")
	for _, f := range []string{"workspace/a", "workspace/b", "workspace/c", "workspace/same",
		"workspace/f", "workspace/r1", "workspace/t", "workspace/old/x", "workspace/old/y/z", "workspace/dir/keep"} {
		writeFile(t, p, "sbx_a", f, "aaa")
	}
	must(t, p.Snapshot(ctx, "sbx_a", "snp_1"))

	at := func(rel string) string { return filepath.Join(base, rel) }
	must(t, os.WriteFile(at("workspace/a"), []byte("bbb"), 0o644)) // same size, new content
	must(t, os.Chmod(at("workspace/b"), 0o600))
	must(t, os.Remove(at("workspace/c")))
	must(t, os.WriteFile(at("workspace/dir/new"), nil, 0o644))
	must(t, os.RemoveAll(at("workspace/old")))
	must(t, os.Remove(at("workspace/f")))
	must(t, os.MkdirAll(at("workspace/f/g"), 0o755))
	must(t, os.Symlink("/workspace/a", at("tmp/l")))
	must(t, os.Rename(at("workspace/r1"), at("workspace/r2")))
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	must(t, os.Chtimes(at("workspace/t"), old, old))
	must(t, p.Snapshot(ctx, "sbx_a", "snp_2"))

	got, err := p.Diff(ctx, "snp_1", "snp_2")
	must(t, err)
	want := []storage.Change{
		{"/tmp/l", storage.Added},
		{"/workspace/a", storage.Modified},
		{"/workspace/b", storage.Modified},
		{"/workspace/c", storage.Deleted},
		{"/workspace/dir/new", storage.Added},
		{"/workspace/f", storage.Deleted},
		{"/workspace/f", storage.Added},
		{"/workspace/f/g", storage.Added},
		{"/workspace/old", storage.Deleted},
		{"/workspace/old/x", storage.Deleted},
		{"/workspace/old/y", storage.Deleted},
		{"/workspace/old/y/z", storage.Deleted},
		{"/workspace/r1", storage.Deleted},
		{"/workspace/r2", storage.Added},
		{"/workspace/t", storage.Modified},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Diff(snp_1, snp_2) (-want +got):\n%s", d)
	}

	// Backwards, added and deleted swap.
	back, err := p.Diff(ctx, "snp_2", "snp_1")
	must(t, err)
	if len(back) != len(want) {
		t.Errorf("Diff(snp_2, snp_1) has %d changes, want %d: %v", len(back), len(want), back)
	}
	for _, c := range back {
		if c.Path == "/workspace/c" && c.Kind != storage.Added {
			t.Errorf("backwards diff says %v for /workspace/c, want added", c.Kind)
		}
	}

	// Equal trees, and a fork before it writes, have no changes.
	must(t, p.Fork(ctx, "snp_2", "sbx_f"))
	for _, pair := range [][2]string{{"snp_1", "snp_1"}, {"snp_2", "sbx_f"}} {
		got, err := p.Diff(ctx, pair[0], pair[1])
		must(t, err)
		if len(got) != 0 {
			t.Errorf("Diff(%s, %s) = %v, want none", pair[0], pair[1], got)
		}
	}
}
