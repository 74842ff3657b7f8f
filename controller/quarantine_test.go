package controller_test

import (
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/storage/storagetest"
	"rung.dev/rung/store"
)

// lastJournal returns the type of sandbox id's last journal entry, read
// from the store (the API hides a tombstone's journal).
func (e *env) lastJournal(t *testing.T, id rung.SandboxID) (string, int) {
	t.Helper()
	evs, err := e.st.ListEvents(t.Context(), id, store.EventQuery{JournalOnly: true})
	if err != nil || len(evs) == 0 {
		t.Fatalf("journal of %s: %v, %d entries", id, err, len(evs))
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == "sandbox.quarantined" {
			n++
		}
	}
	return evs[len(evs)-1].Type, n
}

// usable checks that tenant acme's sandbox id takes a write and reads it
// back.
func (e *env) usable(t *testing.T, id string) {
	t.Helper()
	ctx := t.Context()
	if _, err := e.c.WriteFile(ctx, "acme", id, controller.WriteRequest{Path: "ok.txt"}, strings.NewReader("ok")); err != nil {
		t.Fatalf("write to %s: %v", id, err)
	}
	r, _, err := e.c.ReadFile(ctx, "acme", id, "ok.txt")
	if err != nil {
		t.Fatalf("read from %s: %v", id, err)
	}
	defer r.Close()
	if b, _ := io.ReadAll(r); string(b) != "ok" {
		t.Errorf("read back %q from %s, want ok", b, id)
	}
}

// TestQuarantine is issue 10's finding 3 in the controller: a sandbox
// whose subvolume the kernel will not remove is quarantined, at a delete
// and at start-up, instead of failing the delete (500) or the start (the
// daemon would not come up at all). The others keep working, and a later
// start finishes the removal once it can.
func TestQuarantine(t *testing.T) {
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	bystander := e.sandbox(t)

	// Deleted while undeletable: the tenant sees it gone at once.
	gone, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "gone", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	undoGone := storagetest.Undeletable(t, e.pool.Path(string(gone.ID)))
	if err := e.c.Delete(ctx, "acme", "gone"); err != nil {
		t.Fatalf("Delete of a sandbox whose subvolume cannot be removed: %v, want it quarantined", err)
	}
	if _, err := e.c.Get(ctx, "acme", string(gone.ID)); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("Get of the quarantined sandbox: err = %v, want not found", err)
	}
	if err := e.c.Delete(ctx, "acme", string(gone.ID)); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("second Delete: err = %v, want not found", err)
	}
	if typ, _ := e.lastJournal(t, gone.ID); typ != "sandbox.quarantined" {
		t.Errorf("last journal entry of the quarantined sandbox = %s, want sandbox.quarantined", typ)
	}
	// Its TTL alarm must not fire again and again on a row nobody reaches.
	due, err := e.st.DueSandboxes(ctx, time.Now().Add(100*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range due {
		if sb.ID == gone.ID {
			t.Errorf("the quarantined sandbox still has an alarm at %v", sb.Alarm())
		}
	}

	// A create a crash interrupted, and a subvolume no row owns, both
	// undeletable too.
	half := store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Name: "half", Tenant: "acme", State: store.StateCreating}}
	if err := e.st.CreateSandbox(ctx, half, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.pool.Create(ctx, string(half.ID)); err != nil {
		t.Fatal(err)
	}
	undoHalf := storagetest.Undeletable(t, e.pool.Path(string(half.ID)))
	if err := e.pool.Create(ctx, "sbx_rowless"); err != nil {
		t.Fatal(err)
	}
	undoRowless := storagetest.Undeletable(t, e.pool.Path("sbx_rowless"))

	e.close()
	rep := e.open(t, controller.Config{})
	var ids []rung.SandboxID
	for _, q := range rep.Quarantined {
		ids = append(ids, q.ID)
		if !strings.Contains(q.Reason, "operation not permitted") {
			t.Errorf("quarantine reason of %s = %q, want the kernel's EPERM", q.ID, q.Reason)
		}
	}
	slices.Sort(ids)
	want := []rung.SandboxID{gone.ID, half.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("report quarantined = %v, want %v", ids, want)
	}
	if len(rep.Pool.Quarantined) != 1 || rep.Pool.Quarantined[0].Name != "sbx_rowless" {
		t.Errorf("pool report quarantined = %+v, want sbx_rowless", rep.Pool.Quarantined)
	}
	if len(rep.Unfinished) != 0 || len(rep.Pool.Removed) != 0 {
		t.Errorf("report claims removals: unfinished %v, pool removed %v", rep.Unfinished, rep.Pool.Removed)
	}
	for _, id := range want {
		if typ, n := e.lastJournal(t, id); typ != "sandbox.quarantined" || n == 0 {
			t.Errorf("journal of %s ends with %s (%d quarantine entries), want sandbox.quarantined", id, typ, n)
		}
		if ok, _ := e.pool.Exists(ctx, string(id)); !ok {
			t.Errorf("quarantined %s's subvolume is gone, want it left in place", id)
		}
	}
	// The rest is served: the bystander works, and the names the
	// quarantined sandboxes had are free.
	e.usable(t, bystander)
	for _, name := range []string{"gone", "half"} {
		sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: name})
		if err != nil {
			t.Fatalf("Create %s after its quarantine: %v", name, err)
		}
		e.usable(t, string(sb.ID))
	}

	// The obstacles gone, the next start finishes the removals.
	undoGone()
	undoHalf()
	undoRowless()
	e.close()
	rep = e.open(t, controller.Config{})
	if len(rep.Quarantined) != 0 || len(rep.Pool.Quarantined) != 0 {
		t.Errorf("second start quarantined %+v and %+v, want nothing", rep.Quarantined, rep.Pool.Quarantined)
	}
	slices.Sort(rep.Unfinished)
	if !slices.Equal(rep.Unfinished, want) {
		t.Errorf("second start finished %v, want %v", rep.Unfinished, want)
	}
	if !slices.Equal(rep.Pool.Removed, []string{"sbx_rowless"}) {
		t.Errorf("second start removed %v from the pool, want [sbx_rowless]", rep.Pool.Removed)
	}
	for _, id := range append(want, "sbx_rowless") {
		if ok, err := e.pool.Exists(ctx, string(id)); ok || err != nil {
			t.Errorf("%s after the second start: exists %v, %v", id, ok, err)
		}
		if _, err := e.st.GetSandbox(ctx, "", id); !errors.Is(err, rung.ErrNotFound) {
			t.Errorf("row of %s after the second start: err = %v, want not found", id, err)
		}
	}
	e.usable(t, bystander)
}

// TestQuarantineRecreate checks a sandbox whose missing workspace cannot
// be recreated at start-up (something else holds its name in the pool):
// the start goes on, the sandbox is quarantined and journaled, and the
// next start recreates the workspace, limited to the sandbox's disk size.
func TestQuarantineRecreate(t *testing.T) {
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	id := e.sandbox(t)
	if err := e.pool.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	// A plain directory where the subvolume should be: not a workspace,
	// and it keeps Create from putting one there.
	if err := os.Mkdir(e.pool.Path(id), 0o700); err != nil {
		t.Fatal(err)
	}
	e.close()
	rep := e.open(t, controller.Config{})
	if len(rep.Quarantined) != 1 || rep.Quarantined[0].ID != rung.SandboxID(id) {
		t.Errorf("report quarantined = %+v, want %s", rep.Quarantined, id)
	}
	if typ, _ := e.lastJournal(t, rung.SandboxID(id)); typ != "sandbox.quarantined" {
		t.Errorf("last journal entry = %s, want sandbox.quarantined", typ)
	}
	e.close()
	rep = e.open(t, controller.Config{})
	if len(rep.Quarantined) != 0 || !slices.Equal(rep.Recreated, []rung.SandboxID{rung.SandboxID(id)}) {
		t.Errorf("second start: quarantined %+v, recreated %v; want %s recreated", rep.Quarantined, rep.Recreated, id)
	}
	e.usable(t, id)
	sb, err := e.c.Get(ctx, "acme", id)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := e.pool.Usage(ctx, id); err != nil || u.Limit != sb.Size.DiskBytes {
		t.Errorf("recreated workspace's usage = %+v, %v; want the %d limit", u, err, sb.Size.DiskBytes)
	}
}
