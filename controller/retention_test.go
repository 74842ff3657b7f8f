package controller_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/storage/storagetest"
	"rung.dev/rung/store"
	"rung.dev/rung/store/sqlite"
)

// TestSnapshotRetention checks, on synctest's fake clock, that snapshots
// expire at their retention (the tenant's, or their own TTL) and not
// before, that a restore or fork renews it, that a pinned one never
// expires and an unpinned one gets its TTL from then, that expiry removes
// the subvolume and journals on the sandbox, that a snapshot a fork is
// reading outlives its expiry until the fork is done, and that the
// alarms survive a restart.
func TestSnapshotRetention(t *testing.T) {
	pool := storagetest.NewTestPool(t)
	dbPath := filepath.Join(t.TempDir(), "rung.db")
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		var inFork func()
		cfg := controller.Config{Pool: pool,
			Snapshots: controller.SnapshotPolicies{Tenants: map[rung.TenantID]controller.SnapshotPolicy{"*": {Retention: 2 * time.Hour}}},
			Fault: func(point string) {
				if point == "fork.row" && inFork != nil {
					inFork()
				}
			}}
		open := func() (*controller.Controller, *sqlite.DB) {
			st, err := sqlite.Open(ctx, dbPath)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Store = st
			c, _, err := controller.New(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return c, st
		}
		c, st := open()
		must(t, st.CreateTenant(ctx, store.Tenant{ID: "acme"}))
		sb, err := c.Create(ctx, "acme", controller.CreateRequest{})
		must(t, err)
		snap := func(req controller.SnapshotRequest) rung.SnapshotID {
			s, err := c.Snapshot(ctx, "acme", string(sb.ID), req)
			must(t, err)
			return s.ID
		}
		def := snap(controller.SnapshotRequest{})
		short := snap(controller.SnapshotRequest{TTL: time.Hour})
		pinned := snap(controller.SnapshotRequest{})
		_, err = c.PinSnapshot(ctx, "acme", string(pinned), true)
		must(t, err)
		exists := func(id rung.SnapshotID) bool {
			_, err := c.GetSnapshot(ctx, "acme", string(id))
			if err != nil && !errors.Is(err, rung.ErrNotFound) {
				t.Fatal(err)
			}
			ok, perr := pool.Exists(ctx, string(id))
			must(t, perr)
			if ok != (err == nil) {
				t.Fatalf("snapshot %s: row %v, subvolume %v", id, err == nil, ok)
			}
			return ok
		}
		wait := func(d time.Duration) {
			time.Sleep(d)
			synctest.Wait()
		}

		wait(59 * time.Minute)
		if !exists(short) || !exists(def) {
			t.Fatal("snapshot expired before its time")
		}
		wait(2 * time.Minute) // 1h01
		if exists(short) {
			t.Error("snapshot with a one-hour TTL still there after 61 minutes")
		}
		// A restore at 1h01 renews def to 3h01.
		_, err = c.Create(ctx, "acme", controller.CreateRequest{FromSnapshot: string(def)})
		must(t, err)
		wait(89 * time.Minute) // 2h30: past def's first expiry
		if !exists(def) {
			t.Error("restore did not renew the snapshot's retention")
		}
		// Restart: the alarm is read back from the store.
		c.Close()
		st.Close()
		c, st = open()
		wait(32 * time.Minute) // 3h02
		if exists(def) {
			t.Error("snapshot still there after its renewed retention")
		}
		if !exists(pinned) {
			t.Fatal("pinned snapshot expired")
		}
		_, err = c.PinSnapshot(ctx, "acme", string(pinned), false)
		must(t, err)
		wait(119 * time.Minute)
		if !exists(pinned) {
			t.Error("unpinned snapshot expired before its TTL from the unpin")
		}
		wait(2 * time.Minute)
		if exists(pinned) {
			t.Error("unpinned snapshot still there after its TTL")
		}

		// A fork holds its snapshot past the expiry, then renews it.
		held := snap(controller.SnapshotRequest{TTL: time.Hour})
		inFork = func() {
			inFork = nil
			time.Sleep(3 * time.Hour) // the expiry passes while the fork is being made
			synctest.Wait()
		}
		outs, err := c.ForkSnapshot(ctx, "acme", string(held), controller.ForkRequest{})
		must(t, err)
		if outs[0].Err != nil {
			t.Fatal(outs[0].Err)
		}
		if !exists(held) {
			t.Fatal("a snapshot expired while a fork read it")
		}
		wait(59 * time.Minute)
		if !exists(held) {
			t.Error("the fork did not renew the snapshot")
		}
		wait(2 * time.Minute)
		if exists(held) {
			t.Error("the renewed snapshot did not expire")
		}
		evs, err := st.ListEvents(ctx, sb.ID, store.EventQuery{JournalOnly: true, Limit: 1000})
		must(t, err)
		n := 0
		for _, ev := range evs {
			if ev.Type == "snapshot.expired" {
				n++
			}
		}
		if n != 4 {
			t.Errorf("%d snapshot.expired entries, want 4", n)
		}
		c.Close()
		st.Close()
	})
}

// TestSnapshotReconcile plants what a crash at each step of a snapshot,
// fork, rollback or import leaves, and checks that a restart removes every
// half-made thing, keeps what was finished, and journals what happened.
func TestSnapshotReconcile(t *testing.T) {
	testenv.Require(t, "btrfs")
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	parent, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "parent"})
	must(t, err)
	e.put(t, "parent", "/workspace/f", "v1")
	good, err := e.c.Snapshot(ctx, "acme", "parent", controller.SnapshotRequest{Name: "good"})
	must(t, err)
	e.put(t, "parent", "/workspace/f", "v2")
	rolled, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "rolled"})
	must(t, err)
	kept, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "kept"})
	must(t, err)
	e.close()
	st, err := sqlite.Open(ctx, e.db)
	must(t, err)
	now := time.Now().UTC()
	row := func(id rung.SnapshotID, sandbox rung.SandboxID, state store.SnapshotState) {
		must(t, st.CreateSnapshot(ctx, store.Snapshot{Snapshot: rung.Snapshot{ID: id, Tenant: "acme", Sandbox: sandbox, CreatedAt: now}, State: state}, 0))
	}
	// A snapshot stopped before its subvolume, and one after it.
	before, after := rung.NewSnapshotID(), rung.NewSnapshotID()
	row(before, parent.ID, store.SnapshotCreating)
	row(after, parent.ID, store.SnapshotCreating)
	must(t, e.pool.Snapshot(ctx, string(parent.ID), string(after)))
	// An interrupted import (no sandbox), a ready row whose subvolume is
	// gone, and a subvolume no row names (a live fork's snapshot).
	imp, gone, orphan := rung.NewSnapshotID(), rung.NewSnapshotID(), rung.NewSnapshotID()
	row(imp, "", store.SnapshotCreating)
	must(t, e.pool.Snapshot(ctx, string(parent.ID), string(imp)))
	row(gone, parent.ID, store.SnapshotReady)
	must(t, e.pool.Snapshot(ctx, string(parent.ID), string(orphan)))
	// A fork stopped after its subvolume.
	fork := store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Tenant: "acme", State: store.StateCreating,
		ForkedFrom: parent.ID, CreatedAt: now}}
	must(t, st.CreateSandbox(ctx, fork, 0))
	must(t, e.pool.Fork(ctx, string(good.ID), string(fork.ID)))
	// Rollbacks stopped before and after the exchange.
	// (What storage.Replace leaves before its exchange: the new subvolume
	// in staging, named after the sandbox, the snapshot and the uuid the
	// sandbox's subvolume has.)
	info, err := e.pool.Info(ctx, string(kept.ID))
	must(t, err)
	staged := filepath.Join(e.pool.Dir(), "staging", string(kept.ID)+".rb."+string(good.ID)+"."+strings.ReplaceAll(info.UUID, "-", ""))
	if out, err := exec.Command("btrfs", "subvolume", "snapshot", e.pool.Path(string(good.ID)), staged).CombinedOutput(); err != nil {
		t.Fatalf("btrfs subvolume snapshot: %v: %s", err, out)
	}
	if _, err := e.pool.Replace(ctx, string(rolled.ID), string(good.ID)); err != nil {
		t.Fatal(err)
	}
	st.Close()

	rep := e.open(t, controller.Config{})
	slices.Sort(rep.Snapshots.Unfinished)
	want := []rung.SnapshotID{before, after, imp}
	slices.Sort(want)
	if !slices.Equal(rep.Snapshots.Unfinished, want) || !slices.Equal(rep.Snapshots.Lost, []rung.SnapshotID{gone}) {
		t.Errorf("report: %+v, want unfinished %v, lost %v", rep.Snapshots, want, gone)
	}
	if len(rep.Pool.Rollbacks) != 2 {
		t.Errorf("pool rollbacks = %+v", rep.Pool.Rollbacks)
	}
	names, err := e.pool.List(ctx)
	must(t, err)
	wantNames := []string{string(good.ID), string(kept.ID), string(parent.ID), string(rolled.ID)}
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Errorf("pool after restart = %v, want %v", names, wantNames)
	}
	pj := e.journalTypes(t, parent.ID)
	if !slices.Contains(pj, "snapshot.lost") || !slices.Contains(pj, "sandbox.fork_lost") {
		t.Errorf("parent's journal = %v, want snapshot.lost and sandbox.fork_lost", pj)
	}
	if j := e.journalTypes(t, rolled.ID); j[len(j)-1] != "sandbox.restored" {
		t.Errorf("rolled back sandbox's journal = %v", j)
	}
	if sb, err := e.c.Get(ctx, "acme", "rolled"); err != nil || sb.Origin != good.ID {
		t.Errorf("rolled back sandbox = %+v, %v", sb, err)
	}
	if got := e.read(t, "acme", "rolled", "/workspace/f"); got != "v1" {
		t.Errorf("rolled back sandbox reads %q", got)
	}
	if j := e.journalTypes(t, kept.ID); j[len(j)-1] != "sandbox.restore_failed" {
		t.Errorf("sandbox whose rollback stopped before the exchange: journal %v", j)
	}
	if got := e.read(t, "acme", "kept", "/workspace/f"); got != "<missing>" {
		t.Errorf("sandbox whose rollback did not happen reads %q", got)
	}
	// A second start finds nothing to do.
	e.close()
	if rep := e.open(t, controller.Config{}); !rep.Empty() {
		t.Errorf("second start's report: %+v", rep)
	}
}
