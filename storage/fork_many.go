package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// ForkMany makes each of dsts ("sbx_…") a writable snapshot of src, as Fork
// does, and returns one error per dst (nil for those made). Forks made
// side by side into one directory take turns (btrfs holds the parent
// directory's lock across each snapshot's transaction commit), so each
// fork is made in a directory of its own under staging/ and renamed into
// place: concurrent snapshots into different directories share one commit
// (measured: ten in 5-7 ms, against 20-38 ms into one directory). A crash
// leaves only staging entries, which Reconcile removes.
func (p *Pool) ForkMany(ctx context.Context, src string, dsts []string) []error {
	errs := make([]error, len(dsts))
	if err := p.check(ctx, src); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	var wg sync.WaitGroup
	for i, dst := range dsts {
		if err := wantKind(dst, sandboxPrefix, "sandbox"); err != nil || checkName(dst) != nil {
			errs[i] = errors.Join(err, checkName(dst))
			continue
		}
		wg.Go(func() { errs[i] = p.forkVia(ctx, src, dst) }) // ends with this fork
	}
	wg.Wait()
	return errs
}

// forkVia forks src into staging/<dst>.f/<dst>, then renames it to
// sandboxes/<dst> and gives it src's limit and a sealed fs/.
func (p *Pool) forkVia(ctx context.Context, src, dst string) error {
	if err := p.stat(src); err != nil {
		return err
	}
	if took, err := p.takeSpare(src, p.sbxFd, dst); err != nil || took {
		if err != nil {
			return err
		}
		return p.finishCopy(ctx, src, p.sbxFd, dst, false)
	}
	dir := dst + ".f"
	if err := unix.Mkdirat(p.stageFd, dir, 0o700); err != nil {
		return fmt.Errorf("fork %s to %s: %w", src, dst, err)
	}
	defer unix.Unlinkat(p.stageFd, dir, unix.AT_REMOVEDIR)
	dirfd, err := unix.Openat(p.stageFd, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("fork %s to %s: %w", src, dst, err)
	}
	defer unix.Close(dirfd)
	srcFd, err := p.openSubvol(src)
	if err != nil {
		return err
	}
	err = snapCreate(dirfd, srcFd, dst, false)
	unix.Close(srcFd)
	if err != nil {
		return fmt.Errorf("fork %s to %s: %w", src, dst, err)
	}
	if err := unix.Renameat2(dirfd, dst, p.sbxFd, dst, unix.RENAME_NOREPLACE); err != nil {
		if derr := p.destroy(dirfd, dst); derr != nil {
			p.log.WarnContext(ctx, "staging subvolume left for reconcile", "subvolume", dir+"/"+dst, "err", derr)
		}
		if err == unix.EEXIST {
			return rung.Errorf(rung.ErrExists, "%s already exists", dst)
		}
		return fmt.Errorf("fork %s to %s: %w", src, dst, err)
	}
	return p.finishCopy(ctx, src, p.sbxFd, dst, false)
}
