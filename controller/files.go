package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/storage"
)

// SandboxPath validates a file path from a caller and returns it as an
// absolute sandbox path. A relative path is relative to /workspace. It
// must stay within /workspace or /tmp: "..", NUL bytes, empty components
// of more than 4 KiB and paths elsewhere are ErrInvalid. (The file view
// would contain them anyway; refusing them gives a clear message.)
func SandboxPath(p string) (string, error) {
	switch {
	case p == "":
		return "", rung.Errorf(rung.ErrInvalid, "path is empty")
	case len(p) >= storage.MaxPathLen:
		return "", rung.Errorf(rung.ErrInvalid, "path longer than %d bytes", storage.MaxPathLen-1)
	case strings.IndexByte(p, 0) >= 0:
		return "", rung.Errorf(rung.ErrInvalid, "path contains a NUL byte")
	}
	if !strings.HasPrefix(p, "/") {
		p = "/workspace/" + p
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", rung.Errorf(rung.ErrInvalid, "path %q contains \"..\"", clip(p))
		}
		if len(part) > 255 {
			return "", rung.Errorf(rung.ErrInvalid, "path component longer than 255 bytes")
		}
	}
	p = path.Clean(p)
	if p != "/workspace" && p != "/tmp" && !strings.HasPrefix(p, "/workspace/") && !strings.HasPrefix(p, "/tmp/") {
		return "", rung.Errorf(rung.ErrInvalid, "path %q is outside /workspace and /tmp", clip(p))
	}
	return p, nil
}

// fsErr classifies a file view error for the caller. The message names
// the sandbox path, never a host path.
func fsErr(op, p string, err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		switch {
		case errors.Is(err, storage.ErrXattrName), errors.Is(err, storage.ErrXattrSize), errors.Is(err, storage.ErrXattrCount):
			return rung.Errorf(rung.ErrInvalid, "%s %s: %v", op, p, unwrapPath(err))
		}
		if errors.Is(err, storage.ErrSpecialFile) {
			return rung.Errorf(rung.ErrInvalid, "%s %s: special file (fifo, socket or device)", op, p)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return rung.Errorf(rung.ErrNotFound, "%s %s: no such file or directory", op, p)
		}
		if rung.Code(err) != rung.CodeInternal {
			return err
		}
		return fmt.Errorf("%s %s: %w", op, p, err)
	}
	msg := fmt.Sprintf("%s %s: %s", op, p, errno.Error())
	switch errno {
	case syscall.ENOENT:
		return rung.Errorf(rung.ErrNotFound, "%s", msg)
	case syscall.EEXIST:
		return rung.Errorf(rung.ErrExists, "%s", msg)
	case syscall.ENOTEMPTY, syscall.EBUSY:
		return rung.Errorf(rung.ErrConflict, "%s", msg)
	case syscall.ENOSPC, syscall.EDQUOT:
		return fmt.Errorf("%s: %w", msg, &rung.LimitError{Limit: rung.LimitDiskBytes})
	case syscall.E2BIG, syscall.ERANGE:
		// An extended attribute the filesystem cannot hold.
		return rung.Errorf(rung.ErrInvalid, "%s", msg)
	case syscall.EFBIG:
		return fmt.Errorf("%s: %w", msg, &rung.LimitError{Limit: rung.LimitFileBytes, TooLarge: true})
	case syscall.ENOTDIR, syscall.EISDIR, syscall.EINVAL, syscall.ELOOP, syscall.ENAMETOOLONG, syscall.EXDEV, syscall.EPERM, syscall.EACCES:
		return rung.Errorf(rung.ErrInvalid, "%s", msg)
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// FileInfo describes one file of a sandbox.
type FileInfo struct {
	Path    string    `json:"path"`
	Name    string    `json:"name"`
	Type    string    `json:"type"` // "file", "dir", "symlink", "other"
	Size    int64     `json:"size"`
	Mode    string    `json:"mode"` // permission bits in octal, "0644"
	ModTime time.Time `json:"mod_time"`
	Target  string    `json:"target,omitempty"` // a symlink's target
	// Attrs are the extended attributes a WriteRequest with Attrs left
	// on the file, keyed without the prefix; nil otherwise. Not part of
	// rung's own API.
	Attrs map[string]string `json:"-"`
}

func infoOf(p string, fi fs.FileInfo) FileInfo {
	t := "other"
	switch {
	case fi.Mode().IsRegular():
		t = "file"
	case fi.IsDir():
		t = "dir"
	case fi.Mode()&fs.ModeSymlink != 0:
		t = "symlink"
	}
	return FileInfo{Path: p, Name: path.Base(p), Type: t, Size: fi.Size(), Mode: fmt.Sprintf("%04o", fi.Mode().Perm()), ModTime: fi.ModTime().UTC()}
}

// withRoot runs fn with tenant's sandbox ref's file view.
func (c *Controller) withRoot(ctx context.Context, tenant rung.TenantID, ref string, fn func(a *actor) error) error {
	a, err := c.acquire(ctx, tenant, ref)
	if err != nil {
		return err
	}
	defer c.release(a)
	return fn(a)
}

// ReadFile opens a file of tenant's sandbox ref for reading. The caller
// must close the reader, which holds the sandbox active until then.
func (c *Controller) ReadFile(ctx context.Context, tenant rung.TenantID, ref, p string) (io.ReadCloser, FileInfo, error) {
	p, err := SandboxPath(p)
	if err != nil {
		return nil, FileInfo{}, err
	}
	a, err := c.acquire(ctx, tenant, ref)
	if err != nil {
		return nil, FileInfo{}, err
	}
	f, err := a.root.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		c.release(a)
		return nil, FileInfo{}, fsErr("read", p, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = syscall.EISDIR
	}
	if err != nil {
		f.Close()
		c.release(a)
		return nil, FileInfo{}, fsErr("read", p, err)
	}
	return &heldFile{File: f, release: func() { c.release(a) }}, infoOf(p, fi), nil
}

type heldFile struct {
	storage.File
	release func()
	done    bool
}

func (h *heldFile) Close() error {
	err := h.File.Close()
	if !h.done {
		h.done = true
		h.release()
	}
	return err
}

// WriteRequest is one file write.
type WriteRequest struct {
	Path string
	Mode fs.FileMode // permission bits; 0 means 0644
	// MaxBytes bounds the body; more is ErrTooLarge. 0 means no bound.
	MaxBytes int64
	// Attrs, when set, replaces the file's extended attributes under
	// its prefix once the body is written (an empty Values clears them),
	// and the returned FileInfo's Attrs reads them back. nil leaves
	// whatever attributes the file had.
	Attrs *Attrs
}

// Attrs is a set of a file's extended attributes under one prefix: the
// keys of Values are the attribute names with Prefix cut off. Prefix
// must begin with "user." (storage.XattrNamespace): no other namespace is
// reachable. Names, values and their count are bounded as
// storage.ReplaceXattrs says; beyond is ErrInvalid.
type Attrs struct {
	Prefix string
	Values map[string]string
}

// WriteFile writes r to a file of tenant's sandbox ref, creating its
// parent directories, replacing what was there, and journals it.
func (c *Controller) WriteFile(ctx context.Context, tenant rung.TenantID, ref string, req WriteRequest, r io.Reader) (FileInfo, error) {
	p, err := SandboxPath(req.Path)
	if err != nil {
		return FileInfo{}, err
	}
	if req.Mode == 0 {
		req.Mode = 0o644
	}
	if req.Mode&^fs.ModePerm != 0 {
		return FileInfo{}, rung.Errorf(rung.ErrInvalid, "mode %o has bits beyond the permission bits", req.Mode)
	}
	if req.Attrs != nil {
		// Bad attributes are refused before the file is touched.
		if err := checkAttrs(*req.Attrs); err != nil {
			return FileInfo{}, err
		}
	}
	var info FileInfo
	err = c.withRoot(ctx, tenant, ref, func(a *actor) error {
		if err := mkdirAll(a.root, path.Dir(p)); err != nil {
			return err
		}
		n, err := writeFile(ctx, a.root, p, req, r)
		if err != nil {
			return err
		}
		info = FileInfo{Path: p, Name: path.Base(p), Type: "file", Size: n, Mode: fmt.Sprintf("%04o", req.Mode), ModTime: time.Now().UTC()}
		if req.Attrs != nil {
			// Set on the open file (writeFile): what it has now.
			info.Attrs = maps.Clone(req.Attrs.Values)
			if info.Attrs == nil {
				info.Attrs = map[string]string{}
			}
		}
		c.journal(ctx, a.id, rung.EntryFileWritten, FileWritten{Bytes: n, Mode: info.Mode, Path: p})
		return nil
	})
	return info, err
}

func writeFile(ctx context.Context, root storage.FS, p string, req WriteRequest, r io.Reader) (int64, error) {
	f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, req.Mode)
	if err != nil {
		return 0, fsErr("write", p, err)
	}
	defer f.Close()
	// The mode, and the attributes once the body is in, are set through
	// the descriptor just opened: on the file written, with no name
	// resolved again.
	if err := storage.ChmodFile(f, req.Mode); err != nil {
		return 0, fsErr("chmod", p, err)
	}
	src := r
	if req.MaxBytes > 0 {
		src = io.LimitReader(r, req.MaxBytes+1)
	}
	// A plain copy: the file's ReadFrom would duplicate its descriptor
	// for os.File's, which has no faster way from a request body.
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	n, err := io.CopyBuffer(struct{ io.Writer }{f}, ctxReader{ctx, src}, *buf)
	if err != nil {
		var limErr *rung.LimitError
		if errors.As(err, &limErr) || rung.Code(err) != rung.CodeInternal {
			return n, err
		}
		return n, fsErr("write", p, err)
	}
	if req.MaxBytes > 0 && n > req.MaxBytes {
		return n, &rung.LimitError{Limit: rung.LimitFileBytes, Max: req.MaxBytes, TooLarge: true}
	}
	if req.Attrs != nil {
		if err := replaceFileAttrs(f, p, *req.Attrs); err != nil {
			return n, err
		}
	}
	return n, fsErr2("write", p, f.Close())
}

func fsErr2(op, p string, err error) error {
	if err == nil {
		return nil
	}
	return fsErr(op, p, err)
}

// copyBufs holds writeFile's copy buffers.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ctxReader stops a copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// mkdirAll creates dir and its missing parents.
func mkdirAll(root storage.FS, dir string) error {
	fi, err := root.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fsErr("mkdir", dir, syscall.ENOTDIR)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fsErr("mkdir", dir, err)
	}
	if parent := path.Dir(dir); parent != dir {
		if err := mkdirAll(root, parent); err != nil {
			return err
		}
	}
	if err := root.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fsErr("mkdir", dir, err)
	}
	return nil
}

// Stat describes one file of tenant's sandbox ref, without following a
// final symlink.
func (c *Controller) Stat(ctx context.Context, tenant rung.TenantID, ref, p string) (FileInfo, error) {
	p, err := SandboxPath(p)
	if err != nil {
		return FileInfo{}, err
	}
	var info FileInfo
	err = c.withRoot(ctx, tenant, ref, func(a *actor) error {
		fi, err := a.root.Lstat(p)
		if err != nil {
			return fsErr("stat", p, err)
		}
		info = infoOf(p, fi)
		if info.Type == "symlink" {
			info.Target, _ = a.root.Readlink(p)
		}
		return nil
	})
	return info, err
}
