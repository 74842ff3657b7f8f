package sqlite_test

import (
	"path/filepath"
	"testing"

	"rung.dev/rung/store"
	"rung.dev/rung/store/sqlite"
	"rung.dev/rung/store/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rung.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}
