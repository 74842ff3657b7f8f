package controller_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/store"
)

// put writes a file into tenant acme's sandbox id through the file API.
func (e *env) put(t *testing.T, id, path, data string) {
	t.Helper()
	if _, err := e.c.WriteFile(t.Context(), "acme", id, controller.WriteRequest{Path: path}, strings.NewReader(data)); err != nil {
		t.Fatalf("write %s in %s: %v", path, id, err)
	}
}

// read returns a file of tenant's sandbox id, or "<missing>".
func (e *env) read(t *testing.T, tenant rung.TenantID, id, path string) string {
	t.Helper()
	r, _, err := e.c.ReadFile(t.Context(), tenant, id, path)
	if errors.Is(err, rung.ErrNotFound) {
		return "<missing>"
	}
	if err != nil {
		t.Fatalf("read %s in %s: %v", path, id, err)
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	return string(b)
}

// journalTypes returns the types of sandbox id's journal entries.
func (e *env) journalTypes(t *testing.T, id rung.SandboxID) []string {
	t.Helper()
	evs, err := e.st.ListEvents(t.Context(), id, store.EventQuery{JournalOnly: true, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

func TestSnapshotRestore(t *testing.T) {
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	src, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "src", Labels: map[string]string{"team": "a"}, Env: map[string]string{"K": "v"}})
	must(t, err)
	e.put(t, "src", "/workspace/a.txt", "one")
	e.put(t, "src", "/tmp/t.txt", "tmp")
	snap, err := e.c.Snapshot(ctx, "acme", "src", controller.SnapshotRequest{Name: "base", Labels: map[string]string{"stage": "deps"}})
	must(t, err)
	if !snap.ID.Valid() || snap.Sandbox != src.ID || snap.Name != "base" || snap.Consistency != "crash" || snap.Pinned ||
		snap.ExpiresAt.Sub(snap.CreatedAt) != controller.DefaultSnapshotPolicy.Retention {
		t.Errorf("Snapshot = %+v", snap)
	}
	if _, err := e.c.Snapshot(ctx, "acme", "src", controller.SnapshotRequest{Name: "base"}); !errors.Is(err, rung.ErrExists) {
		t.Errorf("second snapshot named base: %v, want already_exists", err)
	}
	e.put(t, "src", "/workspace/a.txt", "two")

	sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "copy", FromSnapshot: "base"})
	must(t, err)
	if sb.Origin != snap.ID || sb.Env["K"] != "v" || sb.Labels["team"] != "a" || sb.Size != src.Size {
		t.Errorf("restored sandbox = %+v", sb)
	}
	if got := e.read(t, "acme", "copy", "/workspace/a.txt"); got != "one" {
		t.Errorf("restored a.txt = %q, want one", got)
	}
	if got := e.read(t, "acme", "copy", "/tmp/t.txt"); got != "tmp" {
		t.Errorf("restored /tmp = %q", got)
	}
	if got := e.read(t, "acme", "src", "/workspace/a.txt"); got != "two" {
		t.Errorf("source after restore = %q", got)
	}
	e.put(t, "copy", "/workspace/a.txt", "three")
	if got := e.read(t, "acme", "src", "/workspace/a.txt"); got != "two" {
		t.Errorf("a write in the restored sandbox reached the source: %q", got)
	}
	if j := e.journalTypes(t, sb.ID); len(j) == 0 || j[0] != "sandbox.created" {
		t.Errorf("restored sandbox's journal = %v", j)
	}
	if j := e.journalTypes(t, src.ID); !slices.Contains(j, "sandbox.snapshotted") {
		t.Errorf("source's journal = %v, want sandbox.snapshotted", j)
	}
	// Its next snapshot's parent is the one it came from.
	child, err := e.c.Snapshot(ctx, "acme", "copy", controller.SnapshotRequest{})
	must(t, err)
	if child.Parent != snap.ID {
		t.Errorf("child's parent = %q, want %s", child.Parent, snap.ID)
	}

	// List, filters, paging.
	page, err := e.c.ListSnapshots(ctx, "acme", controller.SnapshotFilter{})
	must(t, err)
	if len(page.Snapshots) != 2 || page.Next != "" {
		t.Errorf("ListSnapshots = %+v", page)
	}
	for _, f := range []controller.SnapshotFilter{{Sandbox: "src"}, {Sandbox: string(src.ID)}, {Name: "base"}, {Labels: map[string]string{"stage": "deps"}}} {
		page, err := e.c.ListSnapshots(ctx, "acme", f)
		if err != nil || len(page.Snapshots) != 1 || page.Snapshots[0].ID != snap.ID {
			t.Errorf("ListSnapshots(%+v) = %+v, %v", f, page, err)
		}
	}
	p1, err := e.c.ListSnapshots(ctx, "acme", controller.SnapshotFilter{Limit: 1})
	must(t, err)
	p2, err := e.c.ListSnapshots(ctx, "acme", controller.SnapshotFilter{Limit: 1, After: p1.Next})
	must(t, err)
	if len(p1.Snapshots) != 1 || p1.Next == "" || len(p2.Snapshots) != 1 || p2.Snapshots[0].ID == p1.Snapshots[0].ID || p2.Next != "" {
		t.Errorf("pages = %+v / %+v", p1, p2)
	}

	// Pin, unpin, delete.
	pinned, err := e.c.PinSnapshot(ctx, "acme", "base", true)
	must(t, err)
	if !pinned.Pinned || !pinned.ExpiresAt.IsZero() {
		t.Errorf("pinned = %+v", pinned)
	}
	unpinned, err := e.c.PinSnapshot(ctx, "acme", string(snap.ID), false)
	must(t, err)
	if unpinned.Pinned || unpinned.ExpiresAt.IsZero() {
		t.Errorf("unpinned = %+v", unpinned)
	}
	must(t, e.c.DeleteSnapshot(ctx, "acme", "base"))
	if _, err := e.c.GetSnapshot(ctx, "acme", "base"); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("get after delete: %v", err)
	}
	if ok, _ := e.pool.Exists(ctx, string(snap.ID)); ok {
		t.Error("deleted snapshot's subvolume remains")
	}
	if got := e.read(t, "acme", "copy", "/workspace/a.txt"); got != "three" {
		t.Errorf("sandbox restored from a deleted snapshot: a.txt = %q", got)
	}
	// The source can go; its snapshots stay.
	must(t, e.c.Delete(ctx, "acme", "src"))
	if _, err := e.c.GetSnapshot(ctx, "acme", string(child.ID)); err != nil {
		t.Errorf("snapshot after its sandbox's delete: %v", err)
	}
}

// TestSnapshotTenantIsolation: tenant beta cannot see, restore, fork,
// roll back to, pin, export or delete acme's snapshot, and every answer
// is the one a missing snapshot gets.
func TestSnapshotTenantIsolation(t *testing.T) {
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	e.sandbox(t)
	a, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "a"})
	must(t, err)
	snap, err := e.c.Snapshot(ctx, "acme", "a", controller.SnapshotRequest{Name: "secret"})
	must(t, err)
	b, err := e.c.Create(ctx, "beta", controller.CreateRequest{Name: "b"})
	must(t, err)
	missing := string(rung.NewSnapshotID())
	ops := map[string]func(ref string) error{
		"get": func(ref string) error { _, err := e.c.GetSnapshot(ctx, "beta", ref); return err },
		"restore": func(ref string) error {
			_, err := e.c.Create(ctx, "beta", controller.CreateRequest{FromSnapshot: ref})
			return err
		},
		"fork": func(ref string) error {
			_, err := e.c.ForkSnapshot(ctx, "beta", ref, controller.ForkRequest{})
			return err
		},
		"rollback": func(ref string) error {
			_, err := e.c.Rollback(ctx, "beta", string(b.ID), ref)
			return err
		},
		"pin":    func(ref string) error { _, err := e.c.PinSnapshot(ctx, "beta", ref, true); return err },
		"export": func(ref string) error { return e.c.Export(ctx, "beta", ref, "", io.Discard) },
		"delete": func(ref string) error { return e.c.DeleteSnapshot(ctx, "beta", ref) },
	}
	for name, op := range ops {
		for _, ref := range []string{string(snap.ID), "secret"} {
			err := op(ref)
			want := op(strings.Replace(ref, string(snap.ID), missing, 1))
			if ref == "secret" {
				want = op("nosuchname")
			}
			if !errors.Is(err, rung.ErrNotFound) {
				t.Errorf("%s of acme's snapshot %s as beta: %v, want not_found", name, ref, err)
			} else if strings.ReplaceAll(err.Error(), ref, "X") != strings.ReplaceAll(strings.ReplaceAll(want.Error(), missing, "X"), "nosuchname", "X") {
				t.Errorf("%s: %q differs from a missing snapshot's %q", name, err, want)
			}
		}
	}
	page, err := e.c.ListSnapshots(ctx, "beta", controller.SnapshotFilter{})
	if err != nil || len(page.Snapshots) != 0 {
		t.Errorf("beta's list = %+v, %v", page, err)
	}
	if _, err := e.c.ListSnapshots(ctx, "beta", controller.SnapshotFilter{Sandbox: "a"}); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("beta listing by acme's sandbox name: %v", err)
	}
	if _, err := e.c.Snapshot(ctx, "beta", string(a.ID), controller.SnapshotRequest{}); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("beta snapshotting acme's sandbox: %v", err)
	}
	if _, err := e.c.Fork(ctx, "beta", string(a.ID), controller.ForkRequest{}); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("beta forking acme's sandbox: %v", err)
	}
	if _, err := e.c.GetSnapshot(ctx, "acme", "secret"); err != nil {
		t.Errorf("acme lost its snapshot: %v", err)
	}
}

// TestRollback puts a snapshot's files back in place: the sandbox keeps
// its id, name and journal (one sequence), its fs/ stays sealed, execs and
// file operations after it see the snapshot's files, and the snapshot is
// untouched by later writes.
func TestRollback(t *testing.T) {
	requireShell(t)
	e := newEnv(t, controller.Config{Tools: nil})
	ctx := t.Context()
	sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "work"})
	must(t, err)
	e.put(t, "work", "/workspace/f", "good")
	snap, err := e.c.Snapshot(ctx, "acme", "work", controller.SnapshotRequest{Name: "good"})
	must(t, err)
	e.put(t, "work", "/workspace/f", "bad")
	e.put(t, "work", "/workspace/junk", "junk")
	before, err := e.st.LastSeq(ctx, sb.ID)
	must(t, err)

	got, err := e.c.Rollback(ctx, "acme", "work", "good")
	must(t, err)
	if got.ID != sb.ID || got.Name != "work" || got.Origin != snap.ID || got.State != rung.StateReady {
		t.Errorf("Rollback = %+v", got)
	}
	if f := e.read(t, "acme", "work", "/workspace/f"); f != "good" {
		t.Errorf("f after rollback = %q", f)
	}
	if j := e.read(t, "acme", "work", "/workspace/junk"); j != "<missing>" {
		t.Errorf("junk after rollback = %q", j)
	}
	res, err := e.c.Exec(ctx, "acme", "work", rung.ExecRequest{Command: "read -r x < /workspace/f; echo -n $x; echo x > /workspace/g", Backend: rung.BackendIsolate}, controller.ExecOptions{})
	if err != nil || string(res.Stdout) != "good" {
		t.Errorf("exec after rollback = %q, %v", res.Stdout, err)
	}
	evs, err := e.st.ListEvents(ctx, sb.ID, store.EventQuery{After: before, JournalOnly: true})
	must(t, err)
	if len(evs) == 0 || evs[0].Type != "sandbox.restored" || evs[0].Seq != before+1 {
		t.Errorf("journal after rollback = %+v, want sandbox.restored at seq %d", evs, before+1)
	}
	if err := os.Mkdir(filepath.Join(e.pool.Path(string(sb.ID)), "fs/x"), 0o755); !errors.Is(err, unix.EPERM) {
		t.Errorf("mkdir in fs/ after rollback: %v, want EPERM (sealed)", err)
	}
	// The snapshot is a snapshot still: roll back again from it.
	e.put(t, "work", "/workspace/f", "worse")
	_, err = e.c.Rollback(ctx, "acme", string(sb.ID), string(snap.ID))
	must(t, err)
	if f := e.read(t, "acme", "work", "/workspace/f"); f != "good" {
		t.Errorf("f after the second rollback = %q", f)
	}
	entries, _ := os.ReadDir(filepath.Join(e.pool.Dir(), "staging"))
	for _, ent := range entries {
		if !strings.HasSuffix(ent.Name(), ".spare") { // a spare made ahead for the next rollback
			t.Errorf("staging after rollbacks holds %s", ent.Name())
		}
	}
}

// TestRollbackConcurrent rolls back while execs and file writes run
// against the sandbox: each either lands before the rollback (and is
// undone), or after it (and stays), or is refused to be run again; none
// is lost in between, and no request fails otherwise.
func TestRollbackConcurrent(t *testing.T) {
	requireShell(t)
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	e.put(t, e.sandbox(t), "/workspace/f", "v1")
	id := e.sandbox(t)
	e.put(t, id, "/workspace/f", "v1")
	_, err := e.c.Snapshot(ctx, "acme", id, controller.SnapshotRequest{Name: "v1"})
	must(t, err)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := e.c.Exec(ctx, "acme", id, rung.ExecRequest{Command: "echo x >> /workspace/log", Backend: rung.BackendIsolate}, controller.ExecOptions{})
				if err != nil && !errors.Is(err, rung.ErrConflict) {
					t.Errorf("writer %d exec %d: %v", w, i, err)
					return
				}
			}
		})
	}
	for range 5 {
		if _, err := e.c.Rollback(ctx, "acme", id, "v1"); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if f := e.read(t, "acme", id, "/workspace/f"); f != "v1" {
		t.Errorf("f = %q", f)
	}
	e.put(t, id, "/workspace/after", "kept")
	if got := e.read(t, "acme", id, "/workspace/after"); got != "kept" {
		t.Errorf("write after the rollbacks = %q", got)
	}
}

// TestFork makes 10 forks of a live sandbox that each write the same path:
// none sees another's write or the parent's, each has its own id and
// journal, and a fork whose name is taken fails alone.
func TestFork(t *testing.T) {
	requireShell(t)
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	parent, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "parent", Labels: map[string]string{"p": "1"}})
	must(t, err)
	e.put(t, "parent", "/workspace/shared", "base")
	_, err = e.c.Create(ctx, "acme", controller.CreateRequest{Name: "taken"})
	must(t, err)
	names := []string{"f0", "f1", "taken"}
	outs, err := e.c.Fork(ctx, "acme", "parent", controller.ForkRequest{Count: 10, Names: names})
	must(t, err)
	if len(outs) != 10 {
		t.Fatalf("%d outcomes, want 10", len(outs))
	}
	var ids []rung.SandboxID
	for i, o := range outs {
		if i == 2 {
			if !errors.Is(o.Err, rung.ErrExists) {
				t.Errorf("fork named taken: %v, want already_exists", o.Err)
			}
			continue
		}
		if o.Err != nil {
			t.Fatalf("fork %d: %v", i, o.Err)
		}
		if o.Sandbox.ForkedFrom != parent.ID || o.Sandbox.Labels["p"] != "1" || i < 2 && o.Sandbox.Name != names[i] {
			t.Errorf("fork %d = %+v", i, o.Sandbox)
		}
		ids = append(ids, o.Sandbox.ID)
	}
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			_, err := e.c.Exec(ctx, "acme", string(id), rung.ExecRequest{Command: "read -r x < /workspace/shared; echo " + string(rune('a'+i)) + " > /workspace/shared", Backend: rung.BackendIsolate}, controller.ExecOptions{})
			if err != nil {
				t.Errorf("exec in fork %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		if got, want := e.read(t, "acme", string(id), "/workspace/shared"), string(rune('a'+i))+"\n"; got != want {
			t.Errorf("fork %d reads %q, want only its own write %q", i, got, want)
		}
		if j := e.journalTypes(t, id); len(j) == 0 || j[0] != "sandbox.forked" {
			t.Errorf("fork %d journal = %v", i, j)
		}
	}
	if got := e.read(t, "acme", "parent", "/workspace/shared"); got != "base" {
		t.Errorf("parent reads %q after its forks wrote", got)
	}
	if j := e.journalTypes(t, parent.ID); !slices.Contains(j, "sandbox.fork_made") {
		t.Errorf("parent's journal = %v", j)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.pool.Dir(), "snapshots")); len(ents) != 0 {
		t.Errorf("a live fork left %d snapshots", len(ents))
	}

	// From a snapshot.
	snap, err := e.c.Snapshot(ctx, "acme", "parent", controller.SnapshotRequest{})
	must(t, err)
	outs, err = e.c.ForkSnapshot(ctx, "acme", string(snap.ID), controller.ForkRequest{Count: 3})
	must(t, err)
	for _, o := range outs {
		if o.Err != nil || o.Sandbox.Origin != snap.ID || e.read(t, "acme", string(o.Sandbox.ID), "/workspace/shared") != "base" {
			t.Errorf("snapshot fork = %+v, %v", o.Sandbox, o.Err)
		}
	}
	for _, bad := range []controller.ForkRequest{{Count: 101}, {Count: -1}, {Count: 1, Names: []string{"a", "b"}}, {Names: []string{"x", "x"}}} {
		if _, err := e.c.Fork(ctx, "acme", "parent", bad); !errors.Is(err, rung.ErrInvalid) {
			t.Errorf("Fork(%+v): %v, want invalid_argument", bad, err)
		}
	}
}

// TestSnapshotCaps holds a tenant to its snapshot count and bytes: past
// either the snapshot is refused with limit_exceeded and nothing is left.
func TestSnapshotCaps(t *testing.T) {
	e := newEnv(t, controller.Config{Snapshots: controller.SnapshotPolicies{Tenants: map[rung.TenantID]controller.SnapshotPolicy{
		"acme": {Retention: 3600e9, MaxSnapshots: 2, MaxBytes: 8 << 20},
	}}})
	ctx := t.Context()
	id := e.sandbox(t)
	_, err := e.c.Snapshot(ctx, "acme", id, controller.SnapshotRequest{})
	must(t, err)
	e.put(t, id, "/workspace/big", strings.Repeat("x", 12<<20))
	must(t, e.pool.Sync(ctx)) // the quota counters are as of the last commit
	_, err = e.c.Snapshot(ctx, "acme", id, controller.SnapshotRequest{})
	var le *rung.LimitError
	if !errors.As(err, &le) || le.Limit != "snapshot_bytes" {
		t.Errorf("snapshot past the byte cap: %v", err)
	}
	_, err = e.c.Snapshot(ctx, "acme", e.sandbox(t), controller.SnapshotRequest{})
	must(t, err)
	_, err = e.c.Snapshot(ctx, "acme", id, controller.SnapshotRequest{})
	if !errors.As(err, &le) || le.Limit != "snapshots" {
		t.Errorf("third snapshot: %v, want the count limit", err)
	}
	page, err := e.c.ListSnapshots(ctx, "acme", controller.SnapshotFilter{})
	must(t, err)
	if len(page.Snapshots) != 2 {
		t.Errorf("%d snapshots, want 2", len(page.Snapshots))
	}
	names, _ := e.pool.List(ctx)
	n := 0
	for _, name := range names {
		if strings.HasPrefix(name, "snp_") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d snapshot subvolumes, want 2: refused snapshots must leave none", n)
	}

	// An import past the byte cap is refused as it is received, and
	// leaves nothing.
	big, err := e.c.Create(ctx, "beta", controller.CreateRequest{})
	must(t, err)
	_, err = e.c.WriteFile(ctx, "beta", string(big.ID), controller.WriteRequest{Path: "/workspace/big"}, strings.NewReader(strings.Repeat("y", 12<<20)))
	must(t, err)
	_, err = e.c.Snapshot(ctx, "beta", string(big.ID), controller.SnapshotRequest{Name: "big"})
	must(t, err)
	var arch bytes.Buffer
	must(t, e.c.Export(ctx, "beta", "big", "", &arch))
	must(t, e.c.DeleteSnapshot(ctx, "acme", string(page.Snapshots[0].ID)))
	_, err = e.c.Import(ctx, "acme", &arch, controller.ImportRequest{})
	if !errors.As(err, &le) || le.Limit != "snapshot_bytes" {
		t.Errorf("import past the byte cap: %v", err)
	}
	if page, _ := e.c.ListSnapshots(ctx, "acme", controller.SnapshotFilter{}); len(page.Snapshots) != 1 {
		t.Errorf("acme has %d snapshots after the refused import, want 1", len(page.Snapshots))
	}
	if ents, _ := os.ReadDir(filepath.Join(e.pool.Dir(), "staging")); len(ents) != 0 {
		t.Errorf("the refused import left %d staging entries", len(ents))
	}
}

// TestExportImport moves a snapshot to another tenant through an archive
// (whole, then incremental), where it is that tenant's own: restorable,
// and invisible to the exporter. A damaged archive leaves nothing.
func TestExportImportController(t *testing.T) {
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	id := e.sandbox(t)
	e.put(t, id, "/workspace/a", "1")
	s1, err := e.c.Snapshot(ctx, "acme", id, controller.SnapshotRequest{Name: "s1", Labels: map[string]string{"k": "v"}})
	must(t, err)
	var whole bytes.Buffer
	must(t, e.c.Export(ctx, "acme", "s1", "", &whole))
	in1, err := e.c.Import(ctx, "beta", bytes.NewReader(whole.Bytes()), controller.ImportRequest{})
	must(t, err)
	if in1.Tenant != "beta" || in1.Name != "s1" || in1.Labels["k"] != "v" || in1.Sandbox != "" || in1.SizeBytes <= 0 {
		t.Errorf("imported = %+v", in1)
	}
	if _, err := e.c.Import(ctx, "beta", bytes.NewReader(whole.Bytes()), controller.ImportRequest{}); !errors.Is(err, rung.ErrExists) {
		t.Errorf("second import under the same name: %v", err)
	}
	sb, err := e.c.Create(ctx, "beta", controller.CreateRequest{FromSnapshot: "s1"})
	must(t, err)
	if got := e.read(t, "beta", string(sb.ID), "/workspace/a"); got != "1" {
		t.Errorf("restored import reads %q", got)
	}
	if _, err := e.c.GetSnapshot(ctx, "acme", string(in1.ID)); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("the exporter sees the importer's snapshot: %v", err)
	}

	e.put(t, id, "/workspace/b", "2")
	_, err = e.c.Snapshot(ctx, "acme", id, controller.SnapshotRequest{Name: "s2"})
	must(t, err)
	var inc bytes.Buffer
	must(t, e.c.Export(ctx, "acme", "s2", "s1", &inc))
	if _, err := e.c.Import(ctx, "acme", bytes.NewReader(inc.Bytes()), controller.ImportRequest{Name: "nope"}); err != nil {
		t.Errorf("acme imports an incremental archive whose parent it has: %v", err)
	}
	in2, err := e.c.Import(ctx, "beta", bytes.NewReader(inc.Bytes()), controller.ImportRequest{Name: "s2b"})
	must(t, err)
	if in2.Parent != in1.ID {
		t.Errorf("incremental import's parent = %q, want %s", in2.Parent, in1.ID)
	}
	sb2, err := e.c.Create(ctx, "beta", controller.CreateRequest{FromSnapshot: "s2b"})
	must(t, err)
	if got := e.read(t, "beta", string(sb2.ID), "/workspace/b"); got != "2" {
		t.Errorf("restored incremental import reads %q", got)
	}
	// A tenant without the parent cannot take the incremental archive.
	must(t, e.st.CreateTenant(ctx, store.Tenant{ID: "gamma"}))
	if _, err := e.c.Import(ctx, "gamma", bytes.NewReader(inc.Bytes()), controller.ImportRequest{}); !errors.Is(err, rung.ErrConflict) {
		t.Errorf("incremental import without the parent: %v, want conflict", err)
	}
	// Damaged: nothing visible.
	bad := slices.Clone(whole.Bytes())
	bad[len(bad)/2] ^= 1
	if _, err := e.c.Import(ctx, "gamma", bytes.NewReader(bad), controller.ImportRequest{}); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("damaged import: %v, want invalid_argument", err)
	}
	if page, _ := e.c.ListSnapshots(ctx, "gamma", controller.SnapshotFilter{}); len(page.Snapshots) != 0 {
		t.Errorf("gamma has %d snapshots after failed imports", len(page.Snapshots))
	}
	_ = s1
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
