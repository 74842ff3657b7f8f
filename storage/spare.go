package storage

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// A spare is a writable snapshot of a snapshot, made ahead of time in
// staging/ ("snp_….spare"), sealed and without a limit. Fork of that
// snapshot, and Replace with it, rename the spare into place instead of
// taking a snapshot: a snapshot commits a btrfs transaction, with the
// disk flushes that make it durable (2-10 ms here), a rename does not.
// The snapshot is read-only, so a spare made earlier holds exactly what a
// fork made now would. A spare is a staging entry like any other: a crash
// leaves at most one per snapshot, which Reconcile removes.

func spareName(snap string) string { return snap + ".spare" }

// MakeSpare makes a spare of snapshot snap (see above), unless it has
// one. Errors: [rung.ErrNotFound], [rung.ErrInvalid].
func (p *Pool) MakeSpare(ctx context.Context, snap string) error {
	if err := p.check(ctx, snap); err != nil {
		return err
	}
	if err := wantKind(snap, snapshotPrefix, "snapshot"); err != nil {
		return err
	}
	src, err := p.openSubvol(snap)
	if err != nil {
		return err
	}
	err = snapCreate(p.stageFd, src, spareName(snap), false)
	unix.Close(src)
	if err == unix.EEXIST {
		return nil
	}
	if err != nil {
		return fmt.Errorf("spare of %s: %w", snap, err)
	}
	fd, err := unix.Openat(p.stageFd, spareName(snap), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		err = sealFS(fd)
		unix.Close(fd)
	}
	// A Delete of snap that ran meanwhile found no spare to remove.
	if err == nil && p.stat(snap) != nil {
		err = rung.Errorf(rung.ErrNotFound, "%s not found", snap)
	}
	if err != nil {
		p.DropSpare(ctx, snap)
		return err
	}
	return nil
}

// DropSpare removes snapshot snap's spare, if it has one.
func (p *Pool) DropSpare(ctx context.Context, snap string) {
	if checkName(snap) != nil {
		return
	}
	if err := p.remove(p.stageFd, dirStaging, spareName(snap)); err != nil {
		p.log.WarnContext(ctx, "spare left for reconcile", "snapshot", snap, "err", err)
	}
}

// takeSpare renames snapshot snap's spare to name in directory dirfd; it
// reports false when there is none (a concurrent take won it, or none was
// made).
func (p *Pool) takeSpare(snap string, dirfd int, name string) (bool, error) {
	if !isSnapshotName(snap) {
		return false, nil
	}
	err := unix.Renameat2(p.stageFd, spareName(snap), dirfd, name, unix.RENAME_NOREPLACE)
	switch err {
	case nil:
		return true, nil
	case unix.ENOENT:
		return false, nil
	case unix.EEXIST:
		return false, rung.Errorf(rung.ErrExists, "%s already exists", name)
	}
	return false, err
}
