package storage_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/internal/testenv"
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

// TestForkMany makes forks side by side, each with the snapshot's files,
// sealed and limited, and reports a taken name as that fork's error; a
// crash's leftover (a fork still in its staging directory) is removed by
// Reconcile.
func TestForkMany(t *testing.T) {
	testenv.Require(t, "btrfs") // to plant a leftover
	p := rollbackPool(t)
	ctx := t.Context()
	must(t, p.Create(ctx, "sbx_taken"))
	names := []string{"sbx_f0", "sbx_f1", "sbx_taken", "sbx_f3", "snp_bad"}
	errs := p.ForkMany(ctx, "snp_then", names)
	for i, err := range errs {
		switch names[i] {
		case "sbx_taken":
			if !errors.Is(err, rung.ErrExists) {
				t.Errorf("fork onto a taken name: %v", err)
			}
		case "snp_bad":
			if !errors.Is(err, rung.ErrInvalid) {
				t.Errorf("fork to a snapshot name: %v", err)
			}
		default:
			must(t, err)
			if got := readFile(t, p, names[i], "workspace/f"); got != "then" {
				t.Errorf("%s reads %q", names[i], got)
			}
			if err := os.Mkdir(filepath.Join(p.Path(names[i]), "fs/x"), 0o755); !errors.Is(err, unix.EPERM) {
				t.Errorf("%s: mkdir in fs/: %v, want EPERM", names[i], err)
			}
			if u, err := p.Usage(ctx, names[i]); err == nil && u.Limit != 64<<20 {
				t.Errorf("%s: limit %d", names[i], u.Limit)
			}
		}
	}
	assertStagingEmpty(t, p)
	// What a crash between the snapshot and the rename leaves.
	must(t, os.Mkdir(filepath.Join(p.Dir(), "staging", "sbx_g.f"), 0o700))
	if out, err := exec.Command("btrfs", "subvolume", "snapshot", p.Path("sbx_f0"), filepath.Join(p.Dir(), "staging", "sbx_g.f", "sbx_g")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	_, err := p.Reconcile(ctx, nil)
	must(t, err)
	assertStagingEmpty(t, p)
}
