package controller

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"rung.dev/rung"
	"rung.dev/rung/storage"
)

// checkAttrs refuses an attribute set storage would refuse, with the
// reason, before anything is written.
func checkAttrs(a Attrs) error {
	if !strings.HasPrefix(a.Prefix, storage.XattrNamespace) {
		return rung.Errorf(rung.ErrInvalid, "attribute prefix %q is not in the %s namespace", clip(a.Prefix), storage.XattrNamespace)
	}
	if len(a.Values) > storage.MaxXattrs {
		return rung.Errorf(rung.ErrInvalid, "%d attributes, more than %d", len(a.Values), storage.MaxXattrs)
	}
	for k, v := range a.Values {
		switch {
		case k == "":
			return rung.Errorf(rung.ErrInvalid, "attribute name is empty")
		case len(a.Prefix)+len(k) > storage.MaxXattrName:
			return rung.Errorf(rung.ErrInvalid, "attribute name %q longer than %d bytes with its prefix", clip(k), storage.MaxXattrName)
		case strings.IndexByte(k, 0) >= 0:
			return rung.Errorf(rung.ErrInvalid, "attribute name contains a NUL byte")
		case len(a.Prefix)+len(k)+len(v) > storage.MaxXattrSize:
			return rung.Errorf(rung.ErrInvalid, "attribute %q: name and value of %d bytes, more than the %d one attribute can hold", clip(k), len(a.Prefix)+len(k)+len(v), storage.MaxXattrSize)
		}
	}
	return nil
}

// replaceFileAttrs makes a the attributes under a.Prefix of the open
// file f, written at p.
func replaceFileAttrs(f storage.File, p string, a Attrs) error {
	vals := make(map[string][]byte, len(a.Values))
	for k, v := range a.Values {
		vals[k] = []byte(v)
	}
	if err := storage.ReplaceFileXattrs(f, a.Prefix, vals); err != nil {
		return fsErr("set attributes of", p, err)
	}
	return nil
}

// AttrsRequest names files of a sandbox and the attribute prefix to read.
type AttrsRequest struct {
	// Prefix selects the attributes; it must begin with "user.".
	Prefix string
	// Paths are sandbox paths, as Stat takes them; at most
	// Limits.ListEntries.
	Paths []string
}

// FileAttrs returns, for each of req.Paths in tenant's sandbox ref, its
// extended attributes under req.Prefix keyed without it (an empty map
// for none), in the order of req.Paths. A final symlink is not followed
// and has none (a symlink cannot carry user attributes); a path that
// does not exist (any more) gets nil. A bad prefix or path is ErrInvalid,
// too many paths ErrLimit.
func (c *Controller) FileAttrs(ctx context.Context, tenant rung.TenantID, ref string, req AttrsRequest) ([]map[string]string, error) {
	if !strings.HasPrefix(req.Prefix, storage.XattrNamespace) {
		return nil, rung.Errorf(rung.ErrInvalid, "attribute prefix %q is not in the %s namespace", clip(req.Prefix), storage.XattrNamespace)
	}
	if len(req.Paths) > c.lim.ListEntries {
		return nil, &rung.LimitError{Limit: "list_entries", Max: int64(c.lim.ListEntries)}
	}
	paths := make([]string, len(req.Paths))
	for i, p := range req.Paths {
		var err error
		if paths[i], err = SandboxPath(p); err != nil {
			return nil, err
		}
	}
	out := make([]map[string]string, len(paths))
	err := c.withRoot(ctx, tenant, ref, func(a *actor) error {
		for i, p := range paths {
			if err := ctx.Err(); err != nil {
				return err
			}
			got, err := a.root.Xattrs(p, req.Prefix)
			switch {
			case errors.Is(err, fs.ErrNotExist), errors.Is(err, storage.ErrSpecialFile):
				// Gone since the caller listed it; a FIFO or device
				// is never opened, and has none.
				continue
			case err != nil:
				return fsErr("read attributes of", p, err)
			}
			out[i] = make(map[string]string, len(got))
			for k, v := range got {
				out[i][k] = string(v)
			}
		}
		return nil
	})
	return out, err
}

// unwrapPath is the error inside an *fs.PathError, whose host path the
// caller must not see.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
