package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// ReconcileReport lists what [Pool.Reconcile] fixed. The daemon logs it
// at start-up.
type ReconcileReport struct {
	// Staging are leftovers of Creates interrupted by a crash.
	Staging []string `json:"staging,omitempty"`
	// Removed are sandboxes and snapshots the metadata did not keep.
	Removed []string `json:"removed,omitempty"`
	// Stray are entries in the pool's directories that no Pool operation
	// makes (bad names, plain directories or files); they were removed.
	Stray []string `json:"stray,omitempty"`
}

// Empty reports whether nothing needed fixing.
func (r ReconcileReport) Empty() bool {
	return len(r.Staging) == 0 && len(r.Removed) == 0 && len(r.Stray) == 0
}

// Reconcile brings the pool in line with the metadata: it removes every
// staging leftover, every stray entry, and every sandbox or snapshot for
// which keep returns false (a nil keep keeps them all). Run it at start-up,
// before serving, and not concurrently with Create or Delete on the same
// pool. On error the report still says what was fixed before it.
func (p *Pool) Reconcile(ctx context.Context, keep func(name string) bool) (ReconcileReport, error) {
	var r ReconcileReport
	if err := p.check(ctx); err != nil {
		return r, err
	}
	ents, err := p.entries(dirStaging)
	if err != nil {
		return r, err
	}
	for _, e := range ents {
		if err := p.remove(p.stageFd, dirStaging, e); err != nil {
			return r, err
		}
		r.Staging = append(r.Staging, e)
	}
	for _, dir := range []string{dirSandboxes, dirSnapshots} {
		ents, err := p.entries(dir)
		if err != nil {
			return r, err
		}
		for _, e := range ents {
			if err := ctx.Err(); err != nil {
				return r, err
			}
			dirfd, want := p.dirOf(e)
			if checkName(e) != nil || want != dir || p.stat(e) != nil {
				dirfd = p.sbxFd
				if dir == dirSnapshots {
					dirfd = p.snpFd
				}
				if err := p.remove(dirfd, dir, e); err != nil {
					return r, err
				}
				r.Stray = append(r.Stray, filepath.Join(dir, e))
				continue
			}
			if keep == nil || keep(e) {
				continue
			}
			if err := p.destroy(dirfd, e); err != nil {
				return r, fmt.Errorf("reconcile: %w", err)
			}
			r.Removed = append(r.Removed, e)
		}
	}
	return r, nil
}

func (p *Pool) entries(dir string) ([]string, error) {
	f, err := os.Open(filepath.Join(p.mnt, dir))
	if err != nil {
		return nil, fmt.Errorf("reconcile %s: %w", dir, err)
	}
	defer f.Close()
	ns, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("reconcile %s: %w", dir, err)
	}
	return ns, nil
}

// remove deletes entry name of directory dirfd (called dir): a subvolume
// by destroying it, anything else by removing it recursively.
func (p *Pool) remove(dirfd int, dir, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return fmt.Errorf("reconcile %s/%s: %w", dir, name, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Ino == btrfsFirstFreeObjectID {
		if err := p.destroy(dirfd, name); err != nil && !errors.Is(err, rung.ErrNotFound) {
			return fmt.Errorf("reconcile %s/%s: %w", dir, name, err)
		}
		return nil
	}
	if err := os.RemoveAll(filepath.Join(p.mnt, dir, name)); err != nil {
		return fmt.Errorf("reconcile %s/%s: %w", dir, name, err)
	}
	return nil
}
