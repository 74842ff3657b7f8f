package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// Builtins are the images [Store.Build] makes: lite (busybox, seconds),
// base (the agent-ready default, minutes) and debian (a smaller Debian,
// minutes).
var Builtins = []string{"lite", "base", "debian"}

// IsBuiltin reports whether name is one of [Builtins].
func IsBuiltin(name string) bool {
	for _, b := range Builtins {
		if b == name {
			return true
		}
	}
	return false
}

// Build builds built-in image name as a new version, whether or not one
// exists, after any build of it under way (see [Store.Ensure]) is over.
// progress receives the build's output lines (see [Store.BuildDebian]).
// Another name is rung.ErrInvalid.
func (s *Store) Build(ctx context.Context, name string, progress func(string)) (Image, error) {
	if !IsBuiltin(name) {
		return Image{}, rung.Errorf(rung.ErrInvalid, "unknown built-in image %q (want lite, base or debian)", name)
	}
	if progress == nil {
		progress = func(string) {}
	}
	unlock, err := s.buildLock(ctx, name, progress)
	if err != nil {
		return Image{}, err
	}
	defer unlock()
	return s.build(ctx, name, progress)
}

func (s *Store) build(ctx context.Context, name string, progress func(string)) (Image, error) {
	switch name {
	case "lite":
		return s.BuildLite(ctx, progress)
	case "base":
		return s.BuildBase(ctx, progress)
	case "debian":
		return s.BuildDebian(ctx, DebianConfig{}, progress)
	}
	return Image{}, rung.Errorf(rung.ErrInvalid, "unknown built-in image %q (want lite, base or debian)", name)
}

// Ensure returns the current version of image name, building it when the
// store has none and name is built in; built reports a build. Callers
// that share the store's directory (the daemon and `rung image build`,
// test packages sharing a cache) build a name once: an Ensure that finds
// another build of it under way waits for that one (progress is told)
// and returns its image, and builds only if that build failed. A missing
// image that is not built in is rung.ErrNotFound.
func (s *Store) Ensure(ctx context.Context, name string, progress func(string)) (im Image, built bool, err error) {
	if progress == nil {
		progress = func(string) {}
	}
	if im, err := s.Get(name); err == nil || !errors.Is(err, rung.ErrNotFound) || !IsBuiltin(name) {
		return im, false, err
	}
	unlock, err := s.buildLock(ctx, name, progress)
	if err != nil {
		return Image{}, false, err
	}
	defer unlock()
	if im, err := s.Get(name); err == nil || !errors.Is(err, rung.ErrNotFound) {
		return im, false, err // the build this waited for made it
	}
	im, err = s.build(ctx, name, progress)
	return im, err == nil, err
}

// buildPoll is how often a waiting Ensure tries the build lock: flock has
// no timeout, and a build takes minutes, so a poll costs nothing.
const buildPoll = 200 * time.Millisecond

// buildLock takes the store's lock on building name, held across
// processes (flock on build-<name>.lock) until unlock, waiting for
// another holder as long as ctx allows.
func (s *Store) buildLock(ctx context.Context, name string, progress func(string)) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(s.dir, "build-"+name+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", name, err)
	}
	told := false
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing drops the lock
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			f.Close()
			return nil, fmt.Errorf("build %s: lock: %w", name, err)
		}
		if !told {
			progress("waiting for another build of " + name + " to finish")
			told = true
		}
		t := time.NewTimer(buildPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
