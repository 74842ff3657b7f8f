package storage_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/storage"
	"rung.dev/rung/storage/storagetest"
)

// rollbackPool returns a pool with sandbox sbx_a at its second version
// ("now"), limited to 64 MiB, and snapshot snp_then of its first.
func rollbackPool(t *testing.T) *storage.Pool {
	t.Helper()
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	must(t, p.Create(ctx, "sbx_a"))
	must(t, p.SetQuota(ctx, "sbx_a", 64<<20))
	writeFile(t, p, "sbx_a", "workspace/f", "then")
	must(t, p.Snapshot(ctx, "sbx_a", "snp_then"))
	writeFile(t, p, "sbx_a", "workspace/f", "now")
	writeFile(t, p, "sbx_a", "tmp/later", "x")
	return p
}

// TestReplace rolls a sandbox back to a snapshot: its files become the
// snapshot's, it keeps its quota limit, its fs/ stays sealed, and the old
// subvolume waits in staging until commit.
func TestReplace(t *testing.T) {
	p := rollbackPool(t)
	ctx := t.Context()
	commit, err := p.Replace(ctx, "sbx_a", "snp_then")
	must(t, err)
	if got := readFile(t, p, "sbx_a", "workspace/f"); got != "then" {
		t.Errorf("after Replace f = %q, want the snapshot's", got)
	}
	if _, err := os.Stat(filepath.Join(p.Path("sbx_a"), "fs/tmp/later")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file made after the snapshot survived the rollback: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(p.Dir(), "staging")); len(ents) != 1 {
		t.Errorf("staging before commit: %d entries, want the old subvolume", len(ents))
	}
	commit()
	assertStagingEmpty(t, p)
	if u, err := p.Usage(ctx, "sbx_a"); err == nil && u.Limit != 64<<20 {
		t.Errorf("limit after rollback = %d, want %d", u.Limit, 64<<20)
	}
	if err := os.Mkdir(filepath.Join(p.Path("sbx_a"), "fs/planted"), 0o755); !errors.Is(err, unix.EPERM) {
		t.Errorf("mkdir in fs/ after rollback: %v, want EPERM (sealed)", err)
	}
	writeFile(t, p, "sbx_a", "workspace/g", "writable")
	if got := readFile(t, p, "snp_then", "workspace/f"); got != "then" {
		t.Errorf("snapshot changed: %q", got)
	}
	if _, err := p.Replace(ctx, "sbx_a", "snp_missing"); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("Replace from a missing snapshot: %v", err)
	}
	if _, err := p.Replace(ctx, "sbx_missing", "snp_then"); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("Replace of a missing sandbox: %v", err)
	}
	assertStagingEmpty(t, p)
}

// TestReplaceCrash stops a rollback at each step where a crash can, and
// checks that Reconcile says what became of it and leaves the sandbox
// whole, with either its own files or the snapshot's, and nothing else.
func TestReplaceCrash(t *testing.T) {
	for _, tc := range []struct {
		name     string
		crash    func(p *storage.Pool) error
		wantDone bool
		wantF    string
	}{
		{"before the exchange", func(p *storage.Pool) error { return p.StageRollback(t.Context(), "sbx_a", "snp_then") }, false, "now"},
		{"after the exchange", func(p *storage.Pool) error { _, err := p.Replace(t.Context(), "sbx_a", "snp_then"); return err }, true, "then"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := rollbackPool(t)
			must(t, tc.crash(p))
			rep, err := p.Reconcile(t.Context(), nil)
			must(t, err)
			want := []storage.Rollback{{Sandbox: "sbx_a", Snapshot: "snp_then", Done: tc.wantDone}}
			if d := cmp.Diff(want, rep.Rollbacks); d != "" {
				t.Errorf("Reconcile rollbacks (-want +got):\n%s", d)
			}
			if got := readFile(t, p, "sbx_a", "workspace/f"); got != tc.wantF {
				t.Errorf("f = %q, want %q", got, tc.wantF)
			}
			assertStagingEmpty(t, p)
			names, _ := p.List(t.Context())
			if d := cmp.Diff([]string{"sbx_a", "snp_then"}, names); d != "" {
				t.Errorf("pool after reconcile (-want +got):\n%s", d)
			}
		})
	}
}
