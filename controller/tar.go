package controller

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"rung.dev/rung"
	"rung.dev/rung/storage"
)

// ExportTar writes directory p of tenant's sandbox ref to w as a tar
// stream (regular files, directories and symlinks; names relative to p).
func (c *Controller) ExportTar(ctx context.Context, tenant rung.TenantID, ref, p string, w io.Writer) error {
	p, err := SandboxPath(p)
	if err != nil {
		return err
	}
	return c.withRoot(ctx, tenant, ref, func(a *actor) error {
		fi, err := a.root.Stat(p)
		if err != nil {
			return fsErr("tar", p, err)
		}
		if !fi.IsDir() {
			return rung.Errorf(rung.ErrInvalid, "tar %s: not a directory", p)
		}
		tw := tar.NewWriter(w)
		err = walk(ctx, a.root, p, true, func(q string, fi fs.FileInfo) error {
			return addTar(a.root, tw, strings.TrimPrefix(q, p+"/"), q, fi)
		})
		if err != nil {
			return err
		}
		return tw.Close()
	})
}

func addTar(root storage.FS, tw *tar.Writer, name, p string, fi fs.FileInfo) error {
	link := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		var err error
		if link, err = root.Readlink(p); err != nil {
			return fsErr("tar", p, err)
		}
	} else if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil // fifos, sockets, devices are not exported
	}
	h, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return fmt.Errorf("tar %s: %w", p, err)
	}
	h.Name, h.Uname, h.Gname, h.Uid, h.Gid = name, "", "", 0, 0
	if fi.IsDir() {
		h.Name += "/"
	}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("tar %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := root.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return fsErr("tar", p, err)
	}
	defer f.Close()
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("tar %s: %w", p, err)
	}
	return nil
}

// ImportTar extracts the tar stream r into directory p of tenant's
// sandbox ref, creating p. Entries whose names leave p ("..", absolute)
// are ErrInvalid; hard links and special files are refused. maxBytes
// bounds the file bytes extracted (0: no bound); past it, ErrTooLarge.
func (c *Controller) ImportTar(ctx context.Context, tenant rung.TenantID, ref, p string, r io.Reader, maxBytes int64) (int, error) {
	p, err := SandboxPath(p)
	if err != nil {
		return 0, err
	}
	n := 0
	err = c.withRoot(ctx, tenant, ref, func(a *actor) error {
		if err := mkdirAll(a.root, p); err != nil {
			return err
		}
		tr := tar.NewReader(r)
		var total int64
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return rung.Errorf(rung.ErrInvalid, "read tar stream: %v", err)
			}
			if total += h.Size; maxBytes > 0 && total > maxBytes {
				return &rung.LimitError{Limit: "upload_bytes", Max: maxBytes, TooLarge: true}
			}
			if err := extract(ctx, a.root, p, h, tr); err != nil {
				return err
			}
			n++
		}
		c.journal(ctx, a.id, "file.untarred", map[string]any{"path": p, "entries": n})
		return nil
	})
	return n, err
}

func extract(ctx context.Context, root storage.FS, dir string, h *tar.Header, r io.Reader) error {
	name := strings.TrimSuffix(h.Name, "/")
	if name == "" || name == "." {
		return nil
	}
	target, err := SandboxPath(path.Join(dir, name))
	if err != nil || strings.HasPrefix(name, "/") || !strings.HasPrefix(target+"/", dir+"/") {
		if err == nil {
			err = rung.Errorf(rung.ErrInvalid, "tar entry %q leaves the target directory", clip(h.Name))
		}
		return err
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return rung.Errorf(rung.ErrInvalid, "tar entry %q contains \"..\"", clip(h.Name))
		}
	}
	if err := mkdirAll(root, path.Dir(target)); err != nil {
		return err
	}
	mode := fs.FileMode(h.Mode).Perm()
	switch h.Typeflag {
	case tar.TypeDir:
		return mkdirAll(root, target)
	case tar.TypeReg:
		_, err := writeFile(ctx, root, target, WriteRequest{Path: target, Mode: mode}, r)
		return err
	case tar.TypeSymlink:
		if err := root.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fsErr("untar", target, err)
		}
		if err := root.Symlink(h.Linkname, target); err != nil {
			return fsErr("untar", target, err)
		}
		return nil
	}
	return rung.Errorf(rung.ErrInvalid, "tar entry %q: type %q not supported (regular files, directories and symlinks only)", clip(h.Name), h.Typeflag)
}
