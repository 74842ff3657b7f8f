// Package controllertest gives the tests of the packages above the
// controller (api, client) a real, throw-away controller: a SQLite store
// in t.TempDir() and a btrfs test pool, so those tests reach tenants,
// tokens and sandboxes through the controller and never import a store.
package controllertest

import (
	"path/filepath"
	"testing"

	"rung.dev/rung/controller"
	"rung.dev/rung/storage/storagetest"
	"rung.dev/rung/store/sqlite"
)

// New returns a controller opened with cfg. A nil cfg.Store becomes a
// fresh SQLite store in t.TempDir(), and a nil cfg.Pool a test pool
// ([storagetest.NewTestPool], which skips t without root or
// mkfs.btrfs). t.Cleanup closes the controller, then the store New
// opened; a store passed in is the caller's to close.
func New(t testing.TB, cfg controller.Config) *controller.Controller {
	t.Helper()
	if cfg.Pool == nil {
		cfg.Pool = storagetest.NewTestPool(t)
	}
	if cfg.Store == nil {
		st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rung.db"))
		if err != nil {
			t.Fatalf("open store: %v", err)
		}
		t.Cleanup(func() { st.Close() }) // runs after the controller's Close below
		cfg.Store = st
	}
	c, _, err := controller.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("open controller: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
