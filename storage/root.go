package storage

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrSpecialFile is the error (inside an *fs.PathError) for opening a
// FIFO, socket or device through an [FS]: the isolate tier never blocks on
// or reaches through such files.
var ErrSpecialFile = errors.New("special file (fifo, socket or device) cannot be opened here")

// MaxPathLen is the longest name an [FS] accepts, as Linux's PATH_MAX.
const MaxPathLen = 4096

// Root is an [FS] rooted at a host directory that holds the view's
// "workspace" and "tmp" directories. Every lookup goes through openat2(2)
// with RESOLVE_IN_ROOT, so the kernel, not string handling, keeps symlinks
// and ".." inside the root: a path resolves exactly as it would for a
// process chrooted at the root.
//
// On a filesystem mounted without nodev, files are opened in two steps:
// an O_PATH descriptor is resolved and fstat'ed first, and only a regular
// file or directory is then re-opened for I/O (through /proc/self/fd). So
// a FIFO, socket or device node is never opened there. On a nodev mount
// (the pool is mounted nodev; checked once, by OpenRoot) a file is opened
// directly with O_NONBLOCK and then fstat'ed: a device node cannot be
// opened there at all, a socket cannot be opened anyway, and a FIFO opens
// without waiting and is closed again at once. Either way a special file
// is refused with [ErrSpecialFile] and nothing blocks; the one visible
// difference is that a peer blocked opening that FIFO's other end is
// woken. Creating a new file (O_CREAT|O_EXCL) and opening with
// O_DIRECTORY take one openat2, because the kernel itself refuses to open
// anything else for them.
//
// Stat and Lstat of a name whose directory part is canonical (no
// symlinks, ".", ".." or "//") use a small cache of directory handles
// kept exact with inotify: one fstatat(2) of the final name, plus one
// non-blocking read of pending change events (see dirCache), which an
// [ExecView] makes once per exec instead. "dir/." and "dir/.." of a
// canonical dir are answered from the cached handles too.
//
// The entries "workspace" and "tmp" directly under the root are mount
// points in the container: removing or renaming them fails with EBUSY.
// Root does not stop a caller creating other entries directly under "/"
// (Mkdir("/x")): they would be visible here but not in the container, so
// callers keep writes under /workspace and /tmp.
//
// Root is safe for concurrent use. Close releases its directory handle.
type Root struct {
	dir    string // host path, for error messages to operators only
	heldFD        // fd: O_PATH descriptor of the root directory
	dev    uint64 // st_dev of the root directory
	ino    uint64 // st_ino of the root directory
	// nodev: the root's mount has nodev, so device nodes under it cannot
	// be opened and files may be opened directly (see openDirect).
	nodev bool
	// owner is the uid<<32|gid new files get (root_owner.go); 0 leaves
	// them to the daemon.
	owner atomic.Uint64

	cache dirCache // directory handles for Stat and Lstat; see root_cache.go
}

// heldFD is a descriptor closed by whichever of its owner's Close and the
// last call in flight comes last, so that a call racing Close never uses
// a descriptor number that was closed and reused by another open. Root
// and file embed it.
type heldFD struct {
	fd    int
	inUse atomic.Int64 // calls using fd, plus closedBit once Close was called
}

const (
	closedBit = 1 << 61
	doneBit   = 1 << 62
)

// enter marks a use of fd; ok is false after Close.
func (h *heldFD) enter() bool {
	if h.inUse.Add(1)&closedBit != 0 {
		h.leave()
		return false
	}
	return true
}

// leave ends a use of fd, closing it if Close is waiting for that.
func (h *heldFD) leave() {
	if h.inUse.Add(-1) == closedBit && h.inUse.CompareAndSwap(closedBit, closedBit|doneBit) {
		unix.Close(h.fd)
	}
}

// markClosed marks the descriptor closed for new calls; it reports false
// when it already was.
func (h *heldFD) markClosed() bool { return h.inUse.Or(closedBit)&closedBit == 0 }

// closeIdle closes the descriptor after markClosed if no call is in
// flight; otherwise the last call's leave closes it.
func (h *heldFD) closeIdle() error {
	if !h.inUse.CompareAndSwap(closedBit, closedBit|doneBit) {
		return nil
	}
	return unix.Close(h.fd)
}

// closed reports whether Close was called.
func (h *heldFD) closed() bool { return h.inUse.Load()&closedBit != 0 }

var _ FS = (*Root)(nil)

// OpenRoot returns a Root over dir, which must be a directory. It does not
// create "workspace" or "tmp". A missing dir is fs.ErrNotExist. A host
// without procfs at /proc (needed to re-open resolved files) fails here
// rather than on first use.
func OpenRoot(dir string) (*Root, error) {
	if _, err := procFDDir(); err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open root", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open root", Path: dir, Err: err}
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open root", Path: dir, Err: err}
	}
	nodev := sfs.Flags&unix.ST_NODEV != 0
	return &Root{dir: dir, heldFD: heldFD{fd: fd}, dev: st.Dev, ino: st.Ino, nodev: nodev}, nil
}

// Close releases the root's directory handle (once calls in flight end).
// Files already open stay valid; using the Root after Close fails with
// EBADF, and so does a second Close.
func (r *Root) Close() error {
	if !r.markClosed() {
		return &fs.PathError{Op: "close", Path: r.dir, Err: syscall.EBADF}
	}
	r.cache.close()
	return r.closeIdle()
}

const resolveFlags = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// rel turns a sandbox path into a path relative to the root, checking only
// what the kernel would not: NUL bytes, length, and that it is absolute.
func rel(op, name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", &fs.PathError{Op: op, Path: name, Err: syscall.EINVAL}
	}
	if len(name) >= MaxPathLen {
		return "", &fs.PathError{Op: op, Path: name, Err: syscall.ENAMETOOLONG}
	}
	if !strings.HasPrefix(name, "/") {
		return "", &fs.PathError{Op: op, Path: name, Err: syscall.EINVAL}
	}
	r := strings.TrimLeft(name, "/")
	if r == "" {
		return ".", nil
	}
	return r, nil
}

// open resolves name with openat2 inside the root.
func (r *Root) open(op, name string, flags uint64, mode uint64) (int, error) {
	p, err := rel(op, name)
	if err != nil {
		return -1, err
	}
	fd, err := r.openat2(p, flags, mode)
	if err != nil {
		return -1, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return fd, nil
}

// openat2 resolves p, relative to the root, and returns a bare errno.
func (r *Root) openat2(p string, flags uint64, mode uint64) (int, error) {
	if !r.enter() {
		return -1, unix.EBADF
	}
	defer r.leave()
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolveFlags}
	for {
		fd, err := unix.Openat2(r.fd, p, &how)
		if err == unix.EINTR || err == unix.EAGAIN {
			// EAGAIN: a concurrent rename raced the RESOLVE_IN_ROOT walk;
			// the kernel asks us to retry rather than risk an escape.
			continue
		}
		return fd, err
	}
}

// parent opens name's parent directory (resolved inside the root) and
// returns it with the final component, for *at(2) calls that act on the
// final component itself (unlink, mkdir, symlink, rename).
func (r *Root) parent(op, name string) (int, string, error) {
	if _, err := rel(op, name); err != nil {
		return -1, "", err
	}
	trimmed := strings.TrimRight(name, "/")
	if trimmed == "" {
		return -1, "", &fs.PathError{Op: op, Path: name, Err: syscall.EBUSY}
	}
	dir, base := path.Split(trimmed)
	if base == "." || base == ".." {
		return -1, "", &fs.PathError{Op: op, Path: name, Err: syscall.EINVAL}
	}
	fd, err := r.open(op, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		pe := err.(*fs.PathError)
		pe.Path = name
		return -1, "", pe
	}
	return fd, base, nil
}

// isMountPoint reports whether base in directory dfd is one of the view's
// top-level directories, which are mount points inside the container.
func (r *Root) isMountPoint(dfd int, base string) bool {
	if base != "workspace" && base != "tmp" {
		return false
	}
	var st unix.Stat_t
	if unix.Fstat(dfd, &st) != nil {
		return true // cannot tell: refuse rather than guess
	}
	return st.Dev == r.dev && st.Ino == r.ino
}

// Stat implements [FS].
func (r *Root) Stat(name string) (fs.FileInfo, error) {
	return r.stat("stat", name, unix.O_PATH, nil)
}

// Lstat implements [FS].
func (r *Root) Lstat(name string) (fs.FileInfo, error) {
	return r.stat("lstat", name, unix.O_PATH|unix.O_NOFOLLOW, nil)
}

// stat is Stat or Lstat; v is the exec view asking, or nil.
func (r *Root) stat(op, name string, flags uint64, v *ExecView) (fs.FileInfo, error) {
	if fi, err, ok := r.statCached(op, name, flags&unix.O_NOFOLLOW == 0, v); ok {
		return fi, err
	}
	return r.statUncached(op, name, flags)
}

func (r *Root) statUncached(op, name string, flags uint64) (fs.FileInfo, error) {
	fd, err := r.open(op, name, flags, 0)
	if err != nil {
		return nil, err
	}
	fi := &fileInfo{name: baseName(name)}
	err = unix.Fstat(fd, &fi.st)
	unix.Close(fd)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return fi, nil
}

// statCached stats name through the cached handle of its directory; ok
// is false when the name must take the uncached path (its directory is
// not canonical or not cached, or follow is set and it is a symlink).
func (r *Root) statCached(op, name string, follow bool, v *ExecView) (fs.FileInfo, error, bool) {
	if len(name) >= MaxPathLen || strings.IndexByte(name, 0) >= 0 {
		return nil, nil, false
	}
	dir, base, ok := canonicalSplit(name)
	if !ok && len(name) > 2 && strings.HasSuffix(name, "/.") && canonicalDir(name[:len(name)-2]) {
		// "dir/." (ls -a's "." entry, ls of "."): the directory itself,
		// looked up as "." in its cached handle, as the kernel would.
		dir, base, ok = name[:len(name)-2], ".", true
	}
	if !ok && strings.HasSuffix(name, "/..") {
		// "dir/.." and "dir/./.." (ls -a's ".." entry) with a canonical
		// dir: the cached parent of dir.
		d := strings.TrimSuffix(name[:len(name)-3], "/.")
		if len(d) > 1 && canonicalDir(d) {
			return r.statParentCached(d, v)
		}
	}
	if !ok {
		return nil, nil, false
	}
	e := r.acquire(dir, v)
	if e == nil {
		return nil, nil, false
	}
	fi := &fileInfo{name: base}
	err := unix.Fstatat(e.fd, base, &fi.st, unix.AT_SYMLINK_NOFOLLOW)
	r.release(e)
	switch {
	case err == nil && follow && fi.st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return nil, nil, false
	case err == nil:
		return fi, nil, true
	case err == unix.ENOENT || err == unix.ENAMETOOLONG:
		return nil, &fs.PathError{Op: op, Path: name, Err: err}, true
	default:
		return nil, nil, false
	}
}

// statParentCached stats the parent of the canonical directory dir, as a
// lookup of "dir/.." inside the root finds it. dir is looked up in the
// cache (which fills its ancestors first), so it exists and is a
// directory under the names its path gives; its parent is then the cached
// directory one component up, or the root itself. ok is false when dir
// cannot be cached; the caller then resolves the name with openat2.
func (r *Root) statParentCached(dir string, v *ExecView) (fs.FileInfo, error, bool) {
	e := r.acquire(dir, v)
	if e == nil {
		return nil, nil, false
	}
	r.release(e)
	fi := &fileInfo{name: ".."}
	parent := dir[:strings.LastIndexByte(dir, '/')]
	var err error
	if parent == "" {
		if !r.enter() {
			return nil, nil, false
		}
		err = unix.Fstat(r.fd, &fi.st)
		r.leave()
	} else {
		c := &r.cache
		c.mu.Lock()
		p := c.byPath[parent]
		if p != nil {
			p.refs++
		}
		c.mu.Unlock()
		if p == nil {
			return nil, nil, false
		}
		err = unix.Fstat(p.fd, &fi.st)
		r.release(p)
	}
	if err != nil {
		return nil, nil, false
	}
	return fi, nil, true
}

// ReadDir implements [FS].
func (r *Root) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := r.OpenFile(name, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	if err != nil {
		return ents, &fs.PathError{Op: "readdir", Path: name, Err: unwrapPathErr(err)}
	}
	return ents, nil
}

// Mkdir implements [FS].
func (r *Root) Mkdir(name string, perm fs.FileMode) error {
	return r.atParent("mkdir", name, func(dfd int, base string) error {
		if err := unix.Mkdirat(dfd, base, syscallMode(perm)); err != nil {
			return err
		}
		return r.ownAt(dfd, base)
	})
}

// Remove implements [FS].
func (r *Root) Remove(name string) error {
	return r.atParent("remove", name, func(dfd int, base string) error {
		if r.isMountPoint(dfd, base) {
			return syscall.EBUSY
		}
		err := unix.Unlinkat(dfd, base, 0)
		if err == unix.EISDIR {
			err = unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR)
		}
		return err
	})
}

// Symlink implements [FS].
func (r *Root) Symlink(target, link string) error {
	if strings.IndexByte(target, 0) >= 0 {
		return &fs.PathError{Op: "symlink", Path: link, Err: syscall.EINVAL}
	}
	return r.atParent("symlink", link, func(dfd int, base string) error {
		if err := unix.Symlinkat(target, dfd, base); err != nil {
			return err
		}
		return r.ownAt(dfd, base)
	})
}

// Readlink implements [FS].
func (r *Root) Readlink(name string) (string, error) {
	var out string
	err := r.atParent("readlink", name, func(dfd int, base string) error {
		for size := 256; ; size *= 4 {
			buf := make([]byte, size)
			n, err := unix.Readlinkat(dfd, base, buf)
			if err != nil {
				return err
			}
			if n < size || size >= MaxPathLen {
				out = string(buf[:n])
				return nil
			}
		}
	})
	return out, err
}

// Rename implements [FS].
func (r *Root) Rename(oldname, newname string) error {
	return r.atParent("rename", oldname, func(ofd int, obase string) error {
		nfd, nbase, err := r.parent("rename", newname)
		if err != nil {
			return err.(*fs.PathError).Err
		}
		defer unix.Close(nfd)
		if r.isMountPoint(ofd, obase) || r.isMountPoint(nfd, nbase) {
			return syscall.EBUSY
		}
		return unix.Renameat(ofd, obase, nfd, nbase)
	})
}

// Link implements [FS]. Like link(2) it does not follow a final symlink in
// oldname.
func (r *Root) Link(oldname, newname string) error {
	return r.atParent("link", oldname, func(ofd int, obase string) error {
		nfd, nbase, err := r.parent("link", newname)
		if err != nil {
			return err.(*fs.PathError).Err
		}
		defer unix.Close(nfd)
		return unix.Linkat(ofd, obase, nfd, nbase, 0)
	})
}

// Chmod implements [FS]. Like chmod(2) it follows a final symlink.
func (r *Root) Chmod(name string, mode fs.FileMode) error {
	fd, err := r.open("chmod", name, unix.O_PATH, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	pfd, err := procFDDir()
	if err != nil {
		return &fs.PathError{Op: "chmod", Path: name, Err: err}
	}
	// fchmod does not work on O_PATH descriptors; acting through the
	// descriptor's /proc entry changes exactly the file that was resolved.
	if err := unix.Fchmodat(pfd, itoa(fd), syscallMode(mode), 0); err != nil {
		return &fs.PathError{Op: "chmod", Path: name, Err: err}
	}
	return nil
}

// Chtimes implements [FS]. It follows a final symlink. A zero time leaves
// that timestamp unchanged.
func (r *Root) Chtimes(name string, atime, mtime time.Time) error {
	fd, err := r.open("chtimes", name, unix.O_PATH, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	pfd, err := procFDDir()
	if err != nil {
		return &fs.PathError{Op: "chtimes", Path: name, Err: err}
	}
	ts := []unix.Timespec{timespec(atime), timespec(mtime)}
	if err := unix.UtimesNanoAt(pfd, itoa(fd), ts, 0); err != nil {
		return &fs.PathError{Op: "chtimes", Path: name, Err: err}
	}
	return nil
}

// Truncate implements [FS].
func (r *Root) Truncate(name string, size int64) error {
	f, err := r.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return &fs.PathError{Op: "truncate", Path: name, Err: unwrapPathErr(err)}
	}
	return nil
}

func (r *Root) atParent(op, name string, fn func(dfd int, base string) error) error {
	dfd, base, err := r.parent(op, name)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := fn(dfd, base); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return err
		}
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

// baseName is the last element of a sandbox path, as FileInfo.Name
// reports it: "/" for the root.
func baseName(name string) string {
	name = strings.TrimRight(name, "/")
	if name == "" {
		return "/"
	}
	return name[strings.LastIndexByte(name, '/')+1:]
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func timespec(t time.Time) unix.Timespec {
	if t.IsZero() {
		return unix.Timespec{Nsec: unix.UTIME_OMIT}
	}
	return unix.NsecToTimespec(t.UnixNano())
}

func syscallMode(m fs.FileMode) uint32 {
	o := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		o |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		o |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		o |= unix.S_ISVTX
	}
	return o
}
