// Package storagetest gives tests in any package a real, throw-away
// storage pool: a small sparse btrfs image in t.TempDir(), loop-mounted,
// unmounted and detached again when the test ends.
package storagetest

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

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
	sweepOnce.Do(func() { sweepStale(t.Context()) })
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

var sweepOnce sync.Once

// sweepStale unmounts test pools that a killed test process left behind
// (a test binary killed by -timeout or ^C runs no cleanups). A pool is
// stale when it is mounted under the temporary directory and nobody holds
// its pool.lock: the kernel drops that lock when its holder dies, so a
// live test's pool is never touched.
func sweepStale(ctx context.Context) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	tmp := filepath.Clean(os.TempDir()) + "/"
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || !strings.Contains(sc.Text(), " - btrfs ") {
			continue
		}
		target := fields[4]
		if strings.HasPrefix(target, tmp) && filepath.Base(target) == "pool" {
			dirs = append(dirs, filepath.Dir(target))
		}
	}
	for _, dir := range dirs {
		fd, err := unix.Open(filepath.Join(dir, "pool.lock"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		free := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil
		unix.Close(fd) // drops our probe lock, if we got it
		if !free {
			continue
		}
		// Open adopts the mount after checking it is this image's; Close
		// unmounts it and waits for the loop device to detach.
		p, err := storage.Open(ctx, storage.PoolConfig{Dir: dir})
		if err != nil {
			continue
		}
		if p.Close() == nil {
			os.RemoveAll(dir)
		}
	}
}
