package storage

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Extended attributes through a [Root]. Only the "user." namespace is
// reachable: the daemon runs as root, and "security." (file capabilities,
// SELinux labels) or "trusted." set on a sandbox's file would act inside
// its container. The file is resolved as every other name is (openat2,
// RESOLVE_IN_ROOT) without following a final symlink, and only a regular
// file or a directory is then opened (read-only, non-blocking, through
// its /proc/self/fd entry, as OpenFile's exact path): the attribute calls
// act on that descriptor, so a symlink, absolute or relative, never leads
// them to a file outside the view, and a FIFO or device is never opened.
const (
	// XattrNamespace is the prefix every attribute name must have.
	XattrNamespace = "user."
	// MaxXattrName is the longest attribute name, namespace included
	// (Linux's XATTR_NAME_MAX).
	MaxXattrName = 255
	// MaxXattrSize bounds an attribute's name and value together, in
	// bytes: what btrfs holds in one item of a pool made with 4 KiB tree
	// nodes (BTRFS_MAX_XATTR_SIZE: the node, less its header, an item's
	// and a dir item's), where a larger one fails with ENOSPC, which
	// would read as a full disk. Other filesystems may hold less (ext4
	// keeps all of a file's attributes in one block).
	MaxXattrSize = 4096 - 101 - 25 - 30
	// MaxXattrs bounds how many attributes [Root.Xattrs] returns and
	// [Root.ReplaceXattrs] sets for one file.
	MaxXattrs = 512
)

var (
	// ErrXattrName is the error (inside an *fs.PathError) for an
	// attribute name outside [XattrNamespace], empty after it, longer than
	// [MaxXattrName] or holding a NUL byte.
	ErrXattrName = errors.New("extended attribute name not allowed (user.* only, at most 255 bytes, no NUL)")
	// ErrXattrSize is the error for a name and value above
	// [MaxXattrSize].
	ErrXattrSize = errors.New("extended attribute name and value longer than 3940 bytes")
	// ErrXattrCount is the error for more than [MaxXattrs] attributes.
	ErrXattrCount = errors.New("more than 512 extended attributes")
)

func checkXattrName(attr string) error {
	if len(attr) <= len(XattrNamespace) || !strings.HasPrefix(attr, XattrNamespace) ||
		len(attr) > MaxXattrName || strings.IndexByte(attr, 0) >= 0 {
		return ErrXattrName
	}
	return nil
}

// xattrFD opens name for its attribute calls, not following a final
// symlink: ELOOP for a symlink (the user namespace is not allowed on
// symlinks anyway), [ErrSpecialFile] for a FIFO, socket or device.
func (r *Root) xattrFD(op, name string) (int, error) {
	pfd, err := r.open(op, name, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, err
	}
	fd, _, err := reopen(pfd, unix.O_RDONLY|unix.O_NONBLOCK)
	unix.Close(pfd)
	if err != nil {
		return -1, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return fd, nil
}

// withXattrFD runs fn on name's descriptor (see xattrFD), wrapping a
// bare error in an *fs.PathError.
func (r *Root) withXattrFD(op, name string, fn func(fd int) error) error {
	fd, err := r.xattrFD(op, name)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := fn(fd); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return err
		}
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

// ListXattr returns the names of name's attributes in [XattrNamespace],
// in the order the filesystem keeps them, not following a final symlink
// (a symlink is ELOOP). Names in other namespaces are left out.
func (r *Root) ListXattr(name string) ([]string, error) {
	var out []string
	err := r.withXattrFD("listxattr", name, func(fd int) (err error) {
		out, err = listXattr(fd)
		return err
	})
	return out, err
}

// GetXattr returns the value of name's attribute attr. A missing
// attribute is ENODATA; a name outside [XattrNamespace] [ErrXattrName].
func (r *Root) GetXattr(name, attr string) ([]byte, error) {
	if err := checkXattrName(attr); err != nil {
		return nil, &fs.PathError{Op: "getxattr", Path: name, Err: err}
	}
	var out []byte
	err := r.withXattrFD("getxattr", name, func(fd int) (err error) {
		out, err = getXattr(fd, attr)
		return err
	})
	return out, err
}

// SetXattr sets name's attribute attr to value, creating or replacing it,
// not following a final symlink. A name outside [XattrNamespace] is
// [ErrXattrName], a name and value above [MaxXattrSize] [ErrXattrSize];
// a full disk or quota is ENOSPC or EDQUOT.
func (r *Root) SetXattr(name, attr string, value []byte) error {
	if err := checkXattrName(attr); err != nil {
		return &fs.PathError{Op: "setxattr", Path: name, Err: err}
	}
	if len(attr)+len(value) > MaxXattrSize {
		return &fs.PathError{Op: "setxattr", Path: name, Err: ErrXattrSize}
	}
	return r.withXattrFD("setxattr", name, func(fd int) error {
		return unix.Fsetxattr(fd, attr, value, 0)
	})
}

// RemoveXattr removes name's attribute attr; a missing one is ENODATA.
func (r *Root) RemoveXattr(name, attr string) error {
	if err := checkXattrName(attr); err != nil {
		return &fs.PathError{Op: "removexattr", Path: name, Err: err}
	}
	return r.withXattrFD("removexattr", name, func(fd int) error {
		return unix.Fremovexattr(fd, attr)
	})
}

// Xattrs returns the attributes of name whose names begin with prefix
// (which must be in [XattrNamespace]), keyed by the rest of the name, read
// through one descriptor. A file with none gives an empty map; a symlink
// gives none (ELOOP is not an error here: a symlink has no user
// attributes). More than [MaxXattrs] of them is [ErrXattrCount].
func (r *Root) Xattrs(name, prefix string) (map[string][]byte, error) {
	if !strings.HasPrefix(prefix, XattrNamespace) {
		return nil, &fs.PathError{Op: "getxattr", Path: name, Err: ErrXattrName}
	}
	out := map[string][]byte{}
	err := r.withXattrFD("getxattr", name, func(fd int) error {
		names, err := listXattr(fd)
		if err != nil {
			return err
		}
		for _, n := range names {
			key, ok := strings.CutPrefix(n, prefix)
			if !ok || key == "" {
				continue
			}
			if len(out) == MaxXattrs {
				return ErrXattrCount
			}
			v, err := getXattr(fd, n)
			if err == unix.ENODATA {
				continue // removed since the list
			}
			if err != nil {
				return err
			}
			out[key] = v
		}
		return nil
	})
	if errors.Is(err, syscall.ELOOP) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReplaceXattrs makes values the attributes of name whose names begin
// with prefix (in [XattrNamespace]), keyed by the rest of the name: those
// not in values are removed, the others set, all through one descriptor,
// not following a final symlink. Attributes outside prefix are left
// alone. Every name and value is checked before anything changes
// ([ErrXattrName], [ErrXattrSize], more than [MaxXattrs] [ErrXattrCount]);
// a failure of the calls themselves may leave some changed.
func (r *Root) ReplaceXattrs(name, prefix string, values map[string][]byte) error {
	if err := checkXattrs(prefix, values); err != nil {
		return &fs.PathError{Op: "setxattr", Path: name, Err: err}
	}
	return r.withXattrFD("setxattr", name, func(fd int) error {
		return replaceXattrs(fd, prefix, values)
	})
}

// ReplaceFileXattrs is [Root.ReplaceXattrs] on a file already open (one
// [Root.OpenFile] returned, or any [syscall.Conn]): no name is resolved
// again, so a file just written gets its attributes with no more system
// calls than the attribute calls themselves.
func ReplaceFileXattrs(f File, prefix string, values map[string][]byte) error {
	if err := checkXattrs(prefix, values); err != nil {
		return &fs.PathError{Op: "setxattr", Path: f.Name(), Err: err}
	}
	return controlFile(f, f.Name(), "setxattr", func(fd int) error { return replaceXattrs(fd, prefix, values) })
}

// ChmodFile sets an open file's mode (fchmod), as [Root.Chmod] does by
// name.
func ChmodFile(f File, mode fs.FileMode) error {
	return controlFile(f, f.Name(), "chmod", func(fd int) error { return unix.Fchmod(fd, syscallMode(mode)) })
}

// controlFile runs fn on f's descriptor, wrapping its error in an
// *fs.PathError naming op and name. A File that has no descriptor (not a
// syscall.Conn) is errors.ErrUnsupported.
func controlFile(f any, name, op string, fn func(fd int) error) error {
	sc, ok := f.(syscall.Conn)
	if !ok {
		return &fs.PathError{Op: op, Path: name, Err: errors.ErrUnsupported}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	if ferr != nil {
		var pe *fs.PathError
		if errors.As(ferr, &pe) {
			return ferr
		}
		return &fs.PathError{Op: op, Path: name, Err: ferr}
	}
	return nil
}

// checkXattrs checks a replacement's prefix, names and values.
func checkXattrs(prefix string, values map[string][]byte) error {
	if !strings.HasPrefix(prefix, XattrNamespace) {
		return ErrXattrName
	}
	if len(values) > MaxXattrs {
		return ErrXattrCount
	}
	for k, v := range values {
		if k == "" || checkXattrName(prefix+k) != nil {
			return ErrXattrName
		}
		if len(prefix)+len(k)+len(v) > MaxXattrSize {
			return ErrXattrSize
		}
	}
	return nil
}

// replaceXattrs removes fd's attributes under prefix that are not in
// values and sets the others.
func replaceXattrs(fd int, prefix string, values map[string][]byte) error {
	names, err := listXattr(fd)
	if err != nil {
		return err
	}
	for _, n := range names {
		key, ok := strings.CutPrefix(n, prefix)
		if _, keep := values[key]; !ok || keep {
			continue
		}
		if err := unix.Fremovexattr(fd, n); err != nil && err != unix.ENODATA {
			return err
		}
	}
	for k, v := range values {
		if err := unix.Fsetxattr(fd, prefix+k, v, 0); err != nil {
			return err
		}
	}
	return nil
}

// listXattr lists fd's attribute names in [XattrNamespace]. The kernel
// bounds the list at 64 KiB (XATTR_LIST_MAX); a list that grows between
// the size query and the read (ERANGE) is asked for again.
func listXattr(fd int) ([]string, error) {
	for {
		n, err := unix.Flistxattr(fd, nil)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, nil
		}
		buf := make([]byte, n)
		n, err = unix.Flistxattr(fd, buf)
		if err == unix.ERANGE {
			continue
		}
		if err != nil {
			return nil, err
		}
		var out []string
		for _, s := range strings.Split(string(buf[:n]), "\x00") {
			if strings.HasPrefix(s, XattrNamespace) {
				out = append(out, s)
			}
		}
		return out, nil
	}
}

// getXattr reads fd's attribute attr; the kernel bounds a value at 64
// KiB (XATTR_SIZE_MAX). A value that grows between the size query and the read
// (ERANGE) is asked for again.
func getXattr(fd int, attr string) ([]byte, error) {
	for {
		n, err := unix.Fgetxattr(fd, attr, nil)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, n)
		if n == 0 {
			return buf, nil
		}
		n, err = unix.Fgetxattr(fd, attr, buf)
		if err == unix.ERANGE {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}
