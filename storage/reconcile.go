package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// ReconcileReport lists what [Pool.Reconcile] fixed, and what it could
// not. The daemon logs it at start-up.
type ReconcileReport struct {
	// Staging are leftovers of Creates interrupted by a crash.
	Staging []string `json:"staging,omitempty"`
	// Removed are sandboxes and snapshots the metadata did not keep.
	Removed []string `json:"removed,omitempty"`
	// Stray are entries in the pool's directories that no Pool operation
	// makes (bad names, plain directories or files); they were removed.
	Stray []string `json:"stray,omitempty"`
	// Quarantined are entries that should have gone but could not be
	// removed; they were left in place, and the next Reconcile tries
	// again.
	Quarantined []Quarantine `json:"quarantined,omitempty"`
	// Rollbacks are the rollbacks ([Pool.Replace]) a crash interrupted,
	// with what became of each; their staging subvolumes were removed
	// (or quarantined) like any other.
	Rollbacks []Rollback `json:"rollbacks,omitempty"`
}

// Quarantine is an entry [Pool.Reconcile] could not remove.
type Quarantine struct {
	// Name is the sandbox's or snapshot's name, or, for a staging
	// leftover or a stray entry, its path in the pool ("staging/…").
	Name   string `json:"name"`
	Reason string `json:"reason"` // the error, for the operator
}

// Empty reports whether nothing needed fixing.
func (r ReconcileReport) Empty() bool {
	return len(r.Staging) == 0 && len(r.Removed) == 0 && len(r.Stray) == 0 && len(r.Quarantined) == 0 &&
		len(r.Rollbacks) == 0
}

// Reconcile brings the pool in line with the metadata: it removes every
// staging leftover, every stray entry, and every sandbox or snapshot for
// which keep returns false (a nil keep keeps them all). An entry it
// cannot remove (the kernel refuses the delete) does not stop it: that
// entry is left in place, logged, and listed in the report's Quarantined,
// so that one bad sandbox never keeps the daemon from starting. Run it at
// start-up, before serving, and not concurrently with Create or Delete on
// the same pool. It returns an error only when the pool's directories
// cannot be read or ctx ends; the report still says what was done before.
func (p *Pool) Reconcile(ctx context.Context, keep func(name string) bool) (ReconcileReport, error) {
	var r ReconcileReport
	if err := p.check(ctx); err != nil {
		return r, err
	}
	quarantine := func(name string, err error) {
		p.log.WarnContext(ctx, "storage pool: entry could not be removed, left in place until the next start", "subvolume", name, "err", err)
		r.Quarantined = append(r.Quarantined, Quarantine{Name: name, Reason: err.Error()})
	}
	ents, err := p.entries(dirStaging)
	if err != nil {
		return r, err
	}
	for _, e := range ents {
		if rb, ok := p.parseRollback(e); ok {
			r.Rollbacks = append(r.Rollbacks, rb)
		}
		if err := p.remove(p.stageFd, dirStaging, e); err != nil {
			quarantine(filepath.Join(dirStaging, e), err)
			continue
		}
		if !strings.HasSuffix(e, ".spare") { // a spare is a cache, not a leftover (spare.go)
			r.Staging = append(r.Staging, e)
		}
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
					quarantine(filepath.Join(dir, e), err)
					continue
				}
				r.Stray = append(r.Stray, filepath.Join(dir, e))
				continue
			}
			if keep == nil || keep(e) {
				continue
			}
			if err := p.destroy(dirfd, e); err != nil {
				if !errors.Is(err, rung.ErrNotFound) {
					quarantine(e, err)
				}
				continue
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
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		// A directory of ForkMany's holds a fork: destroy subvolumes
		// first (a fork's sealed fs/ refuses a removal file by file).
		if ents, err := os.ReadDir(filepath.Join(p.mnt, dir, name)); err == nil {
			fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == nil {
				for _, e := range ents {
					if err := p.remove(fd, filepath.Join(dir, name), e.Name()); err != nil {
						unix.Close(fd)
						return err
					}
				}
				unix.Close(fd)
			}
		}
	}
	if err := os.RemoveAll(filepath.Join(p.mnt, dir, name)); err != nil {
		return fmt.Errorf("reconcile %s/%s: %w", dir, name, err)
	}
	return nil
}
