package storage

import (
	"context"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// Delete removes subvolume name (a sandbox or a snapshot), together with
// every subvolume nested in it. The name is gone when Delete returns;
// btrfs frees the space in the background. A sandbox filled to its quota
// is deleted like any other. Errors: [rung.ErrNotFound] if it does not
// exist, [rung.ErrInvalid] for a bad name.
func (p *Pool) Delete(ctx context.Context, name string) error {
	if err := p.check(ctx, name); err != nil {
		return err
	}
	if err := p.stat(name); err != nil {
		return err
	}
	if isSnapshotName(name) {
		p.DropSpare(ctx, name) // spare.go
	}
	dirfd, _ := p.dirOf(name)
	return p.destroy(dirfd, name)
}

// destroy deletes subvolume name in dirfd, and the subvolumes nested in
// it. Every path that removes a subvolume (Delete, Reconcile, the undo of
// a failed Snapshot or Fork) comes here.
func (p *Pool) destroy(dirfd int, name string) error {
	err := snapDestroy(dirfd, name)
	if err == unix.EPERM || err == unix.EROFS {
		// As root, SNAP_DESTROY works on read-only subvolumes too;
		// without CAP_SYS_ADMIN (user_subvol_rm_allowed) the kernel
		// refuses them, so clear the flag and retry.
		if fd, oerr := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); oerr == nil {
			if fl, ferr := subvolFlags(fd); ferr == nil && fl&btrfsSubvolRdonly != 0 {
				setSubvolFlags(fd, fl&^btrfsSubvolRdonly)
			}
			unix.Close(fd)
			err = snapDestroy(dirfd, name)
		}
	}
	if err == unix.ENOTEMPTY || err == unix.EDQUOT {
		// ENOTEMPTY: subvolumes inside it (creating one needs no
		// privilege, so a container may have made them).
		err = p.destroyTree(dirfd, name)
	}
	if err == unix.ENOENT {
		return rung.Errorf(rung.ErrNotFound, "%s not found", name)
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}

// destroyTree deletes subvolume name in dirfd after the subvolumes nested
// in it, deepest first, by id (never by a path a container could redirect
// with renames or symlinks).
//
// Removing a subvolume reserves metadata space, charged to the quota group
// of the subvolume that holds it. In a sandbox filled to its limit that
// reservation fails, so a nested subvolume could not be removed (EDQUOT;
// issue 10: one tenant could make its sandbox undeletable and the daemon
// unable to start). So the sandbox's limit is lifted first, and put back
// if the delete fails anyway, so that a sandbox left in place keeps its
// limit.
func (p *Pool) destroyTree(dirfd int, name string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	id, err := subvolID(fd)
	unix.Close(fd)
	if err != nil {
		return err
	}
	restore := p.liftLimit(name, id)
	if err = p.destroyChildren(id, 0); err == nil {
		err = snapDestroy(dirfd, name)
	}
	if err != nil {
		restore()
	}
	return err
}

func (p *Pool) destroyChildren(id uint64, depth int) error {
	if depth > 10000 {
		return fmt.Errorf("subvolumes nested deeper than 10000: %w", unix.ELOOP)
	}
	kids, err := childSubvols(p.sbxFd, id)
	if err != nil {
		return fmt.Errorf("list nested subvolumes: %w", err)
	}
	for _, k := range kids {
		if err := p.destroyChildren(k, depth+1); err != nil {
			return err
		}
		if err := snapDestroyID(p.sbxFd, k); err != nil && err != unix.ENOENT {
			return fmt.Errorf("delete nested subvolume %d: %w", k, err)
		}
	}
	return nil
}

// liftLimit removes the limit of subvolume id's (called name) quota
// group and returns a function that puts back the limit it had. Both do
// nothing when the pool has no quotas. Failures are logged, not returned:
// the delete they serve may succeed without them.
func (p *Pool) liftLimit(name string, id uint64) (restore func()) {
	if p.quota == QuotaOff {
		return func() {}
	}
	// Unknown (sysfs unreadable) or no limit: nothing to put back.
	limit, rerr := readInt(filepath.Join(p.qgroupDirID(id), "max_referenced"))
	if err := qgroupLimit(p.sbxFd, id, 0); err != nil {
		p.log.Warn("lift quota limit before delete", "subvolume", name, "err", err)
		return func() {}
	}
	return func() {
		if rerr != nil || limit <= 0 {
			return
		}
		if err := qgroupLimit(p.sbxFd, id, uint64(limit)); err != nil {
			p.log.Warn("put back quota limit after a failed delete", "subvolume", name, "err", err)
		}
	}
}
