// Package storagetest gives tests in any package a real, throw-away
// storage pool: a small sparse btrfs image in t.TempDir(), loop-mounted,
// unmounted and detached again when the test ends.
package storagetest

import (
	"testing"

	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/storage"
)

// ImageSize is the apparent size of a test pool's image (sparse: a fresh
// pool takes a few MiB of real disk).
const ImageSize = 2 << 30

// NewTestPool returns an open pool in a fresh temporary directory, with
// quotas in their default mode. It skips t (or fails it under
// RUNG_REQUIRE_ALL=1) without root or mkfs.btrfs, and closes the pool in
// t.Cleanup, which unmounts it and detaches its loop device even when
// the test fails.
func NewTestPool(t testing.TB) *storage.Pool {
	t.Helper()
	return NewTestPoolConfig(t, storage.PoolConfig{})
}

// NewTestPoolConfig is [NewTestPool] with cfg's Quotas, ImageSize and
// Logger; Dir is always a fresh temporary directory.
func NewTestPoolConfig(t testing.TB, cfg storage.PoolConfig) *storage.Pool {
	t.Helper()
	testenv.Require(t, "root", "mkfs.btrfs")
	cfg.Dir = t.TempDir()
	cfg.Mount = ""
	if cfg.ImageSize == 0 {
		cfg.ImageSize = ImageSize
	}
	p, err := storage.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("open test pool: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close test pool: %v", err)
		}
	})
	return p
}
