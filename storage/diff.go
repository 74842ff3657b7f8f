package storage

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// ChangeKind says how a path differs between two subvolumes.
type ChangeKind string

// Change kinds.
const (
	Added    ChangeKind = "added"
	Modified ChangeKind = "modified"
	Deleted  ChangeKind = "deleted"
)

// Change is one path that differs between two subvolumes' file views.
// Path is the sandbox path ("/workspace/src/a.go").
type Change struct {
	Path string     `json:"path"`
	Kind ChangeKind `json:"kind"`
}

// Diff returns what changed in the file view (/workspace and /tmp) from
// subvolume from to subvolume to, sorted by path. A file or symlink is
// modified when its inode number, type, mode, owner, size, mtime or ctime
// differ; a directory when its type, mode or owner differ (its entries
// are reported themselves). Inside an added or deleted directory every
// path is reported. Errors: [rung.ErrNotFound], [rung.ErrInvalid].
//
// Diff walks both trees (see docs/decisions/storage-pool.md for why not
// btrfs generation numbers): its cost is proportional to the number of
// files, and it never follows symlinks. Meant for snapshots; a live
// sandbox may change during the walk.
func (p *Pool) Diff(ctx context.Context, from, to string) ([]Change, error) {
	if err := p.check(ctx, from, to); err != nil {
		return nil, err
	}
	a, err := p.openView(from)
	if err != nil {
		return nil, err
	}
	defer unix.Close(a)
	b, err := p.openView(to)
	if err != nil {
		return nil, err
	}
	defer unix.Close(b)
	d := differ{ctx: ctx}
	if err := d.dirs(a, b, ""); err != nil {
		return nil, fmt.Errorf("diff %s %s: %w", from, to, err)
	}
	sortChanges(d.out)
	return d.out, nil
}

func (p *Pool) openView(name string) (int, error) {
	if err := p.stat(name); err != nil {
		return -1, err
	}
	fd, err := p.openSubvol(name)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	v, err := unix.Openat(fd, "fs", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open view of %s: %w", name, err)
	}
	return v, nil
}

type differ struct {
	ctx context.Context
	n   int // entries visited, for cancellation checks
	out []Change
}

// dirs compares directories a and b (either may be -1: absent) at sandbox
// path dir.
func (d *differ) dirs(a, b int, dir string) error {
	an, err := names(a)
	if err != nil {
		return err
	}
	bn, err := names(b)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(an) || j < len(bn) {
		if d.n++; d.n%4096 == 0 {
			if err := d.ctx.Err(); err != nil {
				return err
			}
		}
		switch {
		case j == len(bn) || i < len(an) && an[i] < bn[j]:
			err = d.entry(a, -1, dir, an[i])
			i++
		case i == len(an) || bn[j] < an[i]:
			err = d.entry(-1, b, dir, bn[j])
			j++
		default:
			err = d.entry(a, b, dir, an[i])
			i, j = i+1, j+1
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// entry compares name in directories a and b (-1: absent there).
func (d *differ) entry(a, b int, dir, name string) error {
	p := dir + "/" + name
	sa, okA, err := lstatAt(a, name)
	if err != nil {
		return err
	}
	sb, okB, err := lstatAt(b, name)
	if err != nil {
		return err
	}
	isDirA := okA && sa.Mode&unix.S_IFMT == unix.S_IFDIR
	isDirB := okB && sb.Mode&unix.S_IFMT == unix.S_IFDIR
	switch {
	case okA && okB && sameEntry(&sa, &sb):
	case okA && okB && isDirA == isDirB:
		d.out = append(d.out, Change{Path: p, Kind: Modified})
	default:
		if okA {
			d.out = append(d.out, Change{Path: p, Kind: Deleted})
		}
		if okB {
			d.out = append(d.out, Change{Path: p, Kind: Added})
		}
	}
	if !isDirA && !isDirB {
		return nil
	}
	ca, cb := -1, -1
	if isDirA {
		if ca, err = openDirAt(a, name); err != nil {
			return err
		}
		defer unix.Close(ca)
	}
	if isDirB {
		if cb, err = openDirAt(b, name); err != nil {
			return err
		}
		defer unix.Close(cb)
	}
	if isDirA && isDirB {
		return d.dirs(ca, cb, p)
	}
	// A directory replaced or removed on one side: report its whole
	// subtree, which the merge does by diffing against "absent".
	if isDirA {
		return d.dirs(ca, -1, p)
	}
	return d.dirs(-1, cb, p)
}

// sameEntry reports whether two lstat results describe an unchanged
// entry. Snapshots keep inode numbers, and any write, chmod, chown, link
// or rename bumps ctime, so equal ctime and inode mean unchanged.
func sameEntry(a, b *unix.Stat_t) bool {
	if a.Mode != b.Mode || a.Uid != b.Uid || a.Gid != b.Gid {
		return false
	}
	if a.Mode&unix.S_IFMT == unix.S_IFDIR {
		return true
	}
	return a.Ino == b.Ino && a.Size == b.Size && a.Mtim == b.Mtim && a.Ctim == b.Ctim
}

func lstatAt(dirfd int, name string) (unix.Stat_t, bool, error) {
	var st unix.Stat_t
	if dirfd < 0 {
		return st, false, nil
	}
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return st, false, nil
		}
		return st, false, fmt.Errorf("lstat %s: %w", name, err)
	}
	return st, true, nil
}

func openDirAt(dirfd int, name string) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", name, err)
	}
	return fd, nil
}

// names returns the sorted entry names of directory fd (nil for -1). It
// reads through a duplicate so fd stays open for *at calls.
func names(fd int) ([]string, error) {
	if fd < 0 {
		return nil, nil
	}
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("read directory: %w", err)
	}
	f := os.NewFile(uintptr(dup), ".")
	defer f.Close()
	ns, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read directory: %w", err)
	}
	slices.Sort(ns)
	return ns, nil
}

// sortChanges orders changes by path bytes. The walk's order differs
// ("/a/x" comes before "/a.txt" there).
func sortChanges(cs []Change) {
	slices.SortStableFunc(cs, func(x, y Change) int { return strings.Compare(x.Path, y.Path) })
}
