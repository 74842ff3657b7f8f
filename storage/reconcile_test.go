package storage_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/storage"
	"rung.dev/rung/storage/storagetest"
)

func TestReconcile(t *testing.T) {
	testenv.Require(t, "btrfs") // to plant foreign subvolumes
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	for _, n := range []string{"sbx_keep", "sbx_drop"} {
		must(t, p.Create(ctx, n))
	}
	must(t, p.Snapshot(ctx, "sbx_keep", "snp_keep"))
	must(t, p.Snapshot(ctx, "sbx_drop", "snp_drop"))

	// What a crash or a confused operator can leave behind.
	subvol := func(rel string) {
		t.Helper()
		out, err := exec.Command("btrfs", "subvolume", "create", filepath.Join(p.Dir(), rel)).CombinedOutput()
		if err != nil {
			t.Fatalf("btrfs subvolume create: %v: %s", err, out)
		}
	}
	subvol("staging/sbx_half.0123456789ab")
	must(t, os.MkdirAll(filepath.Join(p.Dir(), "staging/junk/deep"), 0o700))
	subvol("sandboxes/snp_wrongdir")
	subvol("sandboxes/sbx_Bad")
	must(t, os.Mkdir(filepath.Join(p.Dir(), "sandboxes/sbx_plain"), 0o700))
	must(t, os.WriteFile(filepath.Join(p.Dir(), "snapshots/file"), nil, 0o600))

	keep := func(name string) bool { return name == "sbx_keep" || name == "snp_keep" }
	rep, err := p.Reconcile(ctx, keep)
	must(t, err)
	slices.Sort(rep.Staging)
	slices.Sort(rep.Removed)
	slices.Sort(rep.Stray)
	want := storage.ReconcileReport{
		Staging: []string{"junk", "sbx_half.0123456789ab"},
		Removed: []string{"sbx_drop", "snp_drop"},
		Stray:   []string{"sandboxes/sbx_Bad", "sandboxes/sbx_plain", "sandboxes/snp_wrongdir", "snapshots/file"},
	}
	if d := cmp.Diff(want, rep); d != "" {
		t.Errorf("Reconcile report (-want +got):\n%s", d)
	}
	got, err := p.List(ctx)
	must(t, err)
	if want := []string{"sbx_keep", "snp_keep"}; !slices.Equal(got, want) {
		t.Errorf("List after Reconcile = %v, want %v", got, want)
	}
	for _, dir := range []string{"staging", "sandboxes", "snapshots"} {
		ents, _ := os.ReadDir(filepath.Join(p.Dir(), dir))
		for _, e := range ents {
			if !keep(e.Name()) {
				t.Errorf("%s/%s left after Reconcile", dir, e.Name())
			}
		}
	}
	// Nothing left to fix; a nil keep keeps everything.
	rep, err = p.Reconcile(ctx, nil)
	must(t, err)
	if !rep.Empty() {
		t.Errorf("second Reconcile fixed %+v, want nothing", rep)
	}
}

// TestReconcileQuarantine checks that an entry Reconcile cannot remove
// does not stop it: the entry stays, is reported with its reason, the
// other stale entries go, and the next Reconcile removes it once it can.
func TestReconcileQuarantine(t *testing.T) {
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	for _, n := range []string{"sbx_keep", "sbx_busy", "sbx_drop"} {
		must(t, p.Create(ctx, n))
	}
	must(t, p.Snapshot(ctx, "sbx_drop", "snp_drop"))
	storagetest.NestedSubvolume(t, filepath.Join(p.Dir(), "staging/sbx_half.0123456789ab"))
	storagetest.NestedSubvolume(t, filepath.Join(p.Dir(), "staging/sbx_stuck.0123456789ab"))
	undoBusy := storagetest.Undeletable(t, p.Path("sbx_busy"))
	undoStuck := storagetest.Undeletable(t, filepath.Join(p.Dir(), "staging/sbx_stuck.0123456789ab"))

	keep := func(name string) bool { return name == "sbx_keep" }
	rep, err := p.Reconcile(ctx, keep)
	if err != nil {
		t.Fatalf("Reconcile with an undeletable sandbox: %v", err)
	}
	var quarantined []string
	for _, q := range rep.Quarantined {
		quarantined = append(quarantined, q.Name)
		if !strings.Contains(q.Reason, "operation not permitted") {
			t.Errorf("quarantine reason of %s = %q, want the kernel's EPERM", q.Name, q.Reason)
		}
	}
	slices.Sort(quarantined)
	slices.Sort(rep.Removed)
	if want := []string{"sbx_busy", "staging/sbx_stuck.0123456789ab"}; !slices.Equal(quarantined, want) {
		t.Errorf("Quarantined = %v, want %v", quarantined, want)
	}
	if want := []string{"sbx_drop", "snp_drop"}; !slices.Equal(rep.Removed, want) {
		t.Errorf("Removed = %v, want %v", rep.Removed, want)
	}
	if want := []string{"sbx_half.0123456789ab"}; !slices.Equal(rep.Staging, want) {
		t.Errorf("Staging = %v, want %v", rep.Staging, want)
	}
	got, err := p.List(ctx)
	must(t, err)
	if want := []string{"sbx_busy", "sbx_keep"}; !slices.Equal(got, want) {
		t.Errorf("List after Reconcile = %v, want %v", got, want)
	}

	// The obstacle gone, the next Reconcile finishes the job.
	undoBusy()
	undoStuck()
	rep, err = p.Reconcile(ctx, keep)
	must(t, err)
	want := storage.ReconcileReport{Staging: []string{"sbx_stuck.0123456789ab"}, Removed: []string{"sbx_busy"}}
	if d := cmp.Diff(want, rep); d != "" {
		t.Errorf("second Reconcile report (-want +got):\n%s", d)
	}
	got, err = p.List(ctx)
	must(t, err)
	if want := []string{"sbx_keep"}; !slices.Equal(got, want) {
		t.Errorf("List after the second Reconcile = %v, want %v", got, want)
	}
}
