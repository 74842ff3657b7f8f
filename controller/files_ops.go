package controller

import (
	"context"
	"errors"
	"io/fs"
	"path"

	"rung.dev/rung"
	"rung.dev/rung/storage"
)

// ListFiles lists directory p of tenant's sandbox ref, sorted by path;
// with recursive, its whole tree (depth first). More than
// Limits.ListEntries entries is ErrLimit.
func (c *Controller) ListFiles(ctx context.Context, tenant rung.TenantID, ref, p string, recursive bool) ([]FileInfo, error) {
	p, err := SandboxPath(p)
	if err != nil {
		return nil, err
	}
	out := []FileInfo{}
	err = c.withRoot(ctx, tenant, ref, func(a *actor) error {
		fi, err := a.root.Stat(p)
		if err != nil {
			return fsErr("list", p, err)
		}
		if !fi.IsDir() {
			out = append(out, infoOf(p, fi))
			return nil
		}
		return walk(ctx, a.root, p, recursive, func(q string, fi fs.FileInfo) error {
			if len(out) >= c.lim.ListEntries {
				return &rung.LimitError{Limit: "list_entries", Max: int64(c.lim.ListEntries)}
			}
			out = append(out, infoOf(q, fi))
			return nil
		})
	})
	return out, err
}

// walk calls fn for each entry under dir (not dir itself), descending
// into subdirectories (never through symlinks) when recursive.
func walk(ctx context.Context, root storage.FS, dir string, recursive bool, fn func(string, fs.FileInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ents, err := root.ReadDir(dir)
	if err != nil {
		return fsErr("list", dir, err)
	}
	for _, e := range ents {
		q := path.Join(dir, e.Name())
		fi, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed meanwhile
			}
			return fsErr("list", q, err)
		}
		if err := fn(q, fi); err != nil {
			return err
		}
		if recursive && fi.IsDir() {
			if err := walk(ctx, root, q, recursive, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// Mkdir creates directory p (and its parents with parents).
func (c *Controller) Mkdir(ctx context.Context, tenant rung.TenantID, ref, p string, parents bool) error {
	p, err := SandboxPath(p)
	if err != nil {
		return err
	}
	return c.withRoot(ctx, tenant, ref, func(a *actor) error {
		if parents {
			err = mkdirAll(a.root, p)
		} else if err = a.root.Mkdir(p, 0o755); err != nil {
			err = fsErr("mkdir", p, err)
		}
		if err == nil {
			c.journal(ctx, a.id, rung.EntryFileMkdir, FileMkdir{Path: p})
		}
		return err
	})
}

// Move renames from to to within tenant's sandbox ref, replacing a file
// at to.
func (c *Controller) Move(ctx context.Context, tenant rung.TenantID, ref, from, to string) error {
	from, err := SandboxPath(from)
	if err != nil {
		return err
	}
	to, err = SandboxPath(to)
	if err != nil {
		return err
	}
	if from == "/workspace" || from == "/tmp" || to == "/workspace" || to == "/tmp" {
		return rung.Errorf(rung.ErrInvalid, "cannot move /workspace or /tmp themselves")
	}
	return c.withRoot(ctx, tenant, ref, func(a *actor) error {
		if err := a.root.Rename(from, to); err != nil {
			return fsErr("move", from, err)
		}
		c.journal(ctx, a.id, rung.EntryFileMoved, FileMoved{From: from, To: to})
		return nil
	})
}

// RemoveFile removes p; a directory only when empty unless recursive.
func (c *Controller) RemoveFile(ctx context.Context, tenant rung.TenantID, ref, p string, recursive bool) error {
	p, err := SandboxPath(p)
	if err != nil {
		return err
	}
	if p == "/workspace" || p == "/tmp" {
		return rung.Errorf(rung.ErrInvalid, "cannot remove %s itself", p)
	}
	return c.withRoot(ctx, tenant, ref, func(a *actor) error {
		if recursive {
			err = removeAll(ctx, a.root, p)
		} else if err = a.root.Remove(p); err != nil {
			err = fsErr("remove", p, err)
		}
		if err == nil {
			c.journal(ctx, a.id, rung.EntryFileRemoved, FileRemoved{Path: p, Recursive: recursive})
		}
		return err
	})
}

func removeAll(ctx context.Context, root storage.FS, p string) error {
	fi, err := root.Lstat(p)
	if err != nil {
		return fsErr("remove", p, err)
	}
	if fi.IsDir() {
		ents, err := root.ReadDir(p)
		if err != nil {
			return fsErr("remove", p, err)
		}
		for _, e := range ents {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := removeAll(ctx, root, path.Join(p, e.Name())); err != nil && rung.Code(err) != rung.CodeNotFound {
				return err
			}
		}
	}
	if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fsErr("remove", p, err)
	}
	return nil
}
