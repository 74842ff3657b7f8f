package sqlite_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

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

// TestObservedStore runs the suite through store.Observe, which must pass
// every call on unchanged and report each one.
func TestObservedStore(t *testing.T) {
	var mu sync.Mutex
	ops := map[string]int{}
	t.Run("suite", func(t *testing.T) { // returns once the suite's parallel subtests have
		storetest.Run(t, func(t *testing.T) store.Store {
			db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rung.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return store.Observe(db, func(op string, took time.Duration) {
				if took < 0 {
					t.Errorf("%s took %s", op, took)
				}
				mu.Lock()
				ops[op]++
				mu.Unlock()
			})
		})
	})
	mu.Lock()
	defer mu.Unlock()
	for _, op := range []string{"CreateTenant", "CreateSandbox", "SandboxStates", "ListEvents", "EndExec"} {
		if ops[op] == 0 {
			t.Errorf("no %s observed; saw %v", op, ops)
		}
	}
}
