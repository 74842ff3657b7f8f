package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// TestMigrateSnapshots opens a database whose snapshots table predates the
// snapshot API (five columns, no writer), as every database made before
// issue 13 has, and checks the columns are added, once, and work.
func TestMigrateSnapshots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rung.db")
	db, err := Open(t.Context(), path)
	must(t, err)
	ctx := t.Context()
	_, err = db.w.ExecContext(ctx, `DROP TABLE snapshots; CREATE TABLE snapshots (
		id TEXT PRIMARY KEY, tenant TEXT NOT NULL, sandbox TEXT NOT NULL, created INTEGER NOT NULL, doc TEXT NOT NULL);
		DROP INDEX IF EXISTS snapshots_name; DROP INDEX IF EXISTS snapshots_expires; DROP INDEX IF EXISTS snapshots_sandbox`)
	must(t, err)
	db.Close()
	for range 2 { // the second open finds the columns there
		db, err = Open(ctx, path)
		must(t, err)
		s := store.Snapshot{Snapshot: rung.Snapshot{ID: rung.NewSnapshotID(), Name: "n", Tenant: "acme",
			CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour), ExclusiveBytes: 7}, State: store.SnapshotReady}
		must(t, db.CreateSnapshot(ctx, s, 0))
		got, err := db.SnapshotByName(ctx, "acme", "n")
		must(t, err)
		if got.ID != s.ID {
			t.Errorf("SnapshotByName = %s, want %s", got.ID, s.ID)
		}
		if _, ok, err := db.NextSnapshotExpiry(ctx); !ok || err != nil {
			t.Errorf("NextSnapshotExpiry: %v, %v", ok, err)
		}
		must(t, db.DeleteSnapshot(ctx, s.ID))
		db.Close()
	}
}
