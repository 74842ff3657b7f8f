package controller

import (
	"context"
	"io"

	"rung.dev/rung"
	"rung.dev/rung/storage"
)

// The file API's tar import and export are storage's ([storage.ImportTar],
// [storage.ExportTar]): one implementation, bounded and tested against
// hostile archives, on the sandbox's file view.

// ExportTar writes directory p of tenant's sandbox ref to w as a tar
// stream: regular files (hard links once), directories and symlinks, with
// permission bits, numeric owners and modification times, named relative
// to p.
func (c *Controller) ExportTar(ctx context.Context, tenant rung.TenantID, ref, p string, w io.Writer) error {
	p, err := SandboxPath(p)
	if err != nil {
		return err
	}
	return c.withRoot(ctx, tenant, ref, func(a *actor) error {
		return fsErr2("tar", p, storage.ExportTar(ctx, a.root, p, w))
	})
}

// ImportTar extracts the tar stream r (gzip-compressed or not) into
// directory p of tenant's sandbox ref, creating p, and returns how many
// entries it held. Entries whose names leave p (absolute, "..", through a
// symlink, a hard link to outside) are ErrInvalid, as are devices and
// FIFOs; maxBytes bounds the file bytes extracted (0: storage's default),
// past it a *rung.LimitError. Entries extracted before an error stay.
func (c *Controller) ImportTar(ctx context.Context, tenant rung.TenantID, ref, p string, r io.Reader, maxBytes int64) (int, error) {
	p, err := SandboxPath(p)
	if err != nil {
		return 0, err
	}
	n := 0
	err = c.withRoot(ctx, tenant, ref, func(a *actor) error {
		var err error
		n, err = storage.ImportTar(ctx, a.root, p, r, storage.TarOptions{MaxBytes: maxBytes})
		if err != nil {
			return fsErr("untar", p, err)
		}
		c.journal(ctx, a.id, rung.EntryFileUntarred, FileUntarred{Entries: n, Path: p})
		return nil
	})
	return n, err
}
