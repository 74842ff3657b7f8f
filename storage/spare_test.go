package storage_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"rung.dev/rung/storage"
)

// TestSpare: a spare made ahead becomes the next fork of its snapshot (or
// the next rollback to it) by a rename, holding exactly the snapshot's
// files, sealed and limited like any fork; a snapshot's delete takes its
// spare along, and Reconcile removes spares without reporting them.
func TestSpare(t *testing.T) {
	p := rollbackPool(t)
	ctx := t.Context()
	staging := func() int {
		ents, err := os.ReadDir(filepath.Join(p.Dir(), "staging"))
		must(t, err)
		return len(ents)
	}
	must(t, p.MakeSpare(ctx, "snp_then"))
	must(t, p.MakeSpare(ctx, "snp_then")) // one is enough
	if n := staging(); n != 1 {
		t.Fatalf("staging holds %d entries, want the spare", n)
	}
	spareID, err := storage.SubvolIDOf(filepath.Join(p.Dir(), "staging", "snp_then.spare"))
	must(t, err)
	must(t, p.Fork(ctx, "snp_then", "sbx_b"))
	if n := staging(); n != 0 {
		t.Errorf("the fork did not take the spare: staging holds %d", n)
	}
	if id, _ := storage.SubvolIDOf(p.Path("sbx_b")); id != spareID {
		t.Errorf("fork is subvolume %d, the spare was %d", id, spareID)
	}
	if got := readFile(t, p, "sbx_b", "workspace/f"); got != "then" {
		t.Errorf("fork from a spare reads %q", got)
	}
	if err := os.Mkdir(filepath.Join(p.Path("sbx_b"), "fs/x"), 0o755); !errors.Is(err, unix.EPERM) {
		t.Errorf("fork from a spare: mkdir in fs/: %v, want EPERM", err)
	}
	if u, err := p.Usage(ctx, "sbx_b"); err == nil && u.Limit != 64<<20 {
		t.Errorf("fork from a spare has limit %d, want the snapshot's %d", u.Limit, 64<<20)
	}
	// The next fork, with no spare, snapshots as before.
	must(t, p.Fork(ctx, "snp_then", "sbx_c"))

	must(t, p.MakeSpare(ctx, "snp_then"))
	commit, err := p.Replace(ctx, "sbx_a", "snp_then")
	must(t, err)
	commit()
	if n := staging(); n != 0 {
		t.Errorf("the rollback did not take the spare: staging holds %d", n)
	}
	if got := readFile(t, p, "sbx_a", "workspace/f"); got != "then" {
		t.Errorf("rolled back from a spare: %q", got)
	}

	must(t, p.MakeSpare(ctx, "snp_then"))
	rep, err := p.Reconcile(ctx, nil)
	must(t, err)
	if n := staging(); n != 0 || !rep.Empty() {
		t.Errorf("after Reconcile: staging %d, report %+v; want the spare gone, quietly", n, rep)
	}
	must(t, p.MakeSpare(ctx, "snp_then"))
	must(t, p.Delete(ctx, "snp_then"))
	if n := staging(); n != 0 {
		t.Errorf("a deleted snapshot's spare stayed")
	}
	if err := p.MakeSpare(ctx, "snp_then"); err == nil {
		t.Error("spare of a deleted snapshot")
	}
}
