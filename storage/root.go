package storage

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
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
// and ".." inside the root.
//
// Root is safe for concurrent use. Close releases its directory handle.
type Root struct {
	dir string // host path, for error messages to operators only
	fd  int    // O_PATH descriptor of the root directory
}

var _ FS = (*Root)(nil)

// OpenRoot returns a Root over dir, which must be a directory. It does not
// create "workspace" or "tmp".
func OpenRoot(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open root", Path: dir, Err: err}
	}
	return &Root{dir: dir, fd: fd}, nil
}

// Close releases the root's directory handle. Files already open stay valid.
func (r *Root) Close() error { return unix.Close(r.fd) }

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
	for {
		fd, err := unix.Openat2(r.fd, p, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolveFlags})
		if err == unix.EINTR || err == unix.EAGAIN {
			// EAGAIN: a concurrent rename raced the RESOLVE_IN_ROOT walk.
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: op, Path: name, Err: err}
		}
		return fd, nil
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

// OpenFile implements [FS].
func (r *Root) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	fd, err := r.open("open", name, uint64(flag)|unix.O_NONBLOCK|unix.O_NOCTTY, uint64(syscallMode(perm)))
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFDIR:
	default:
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrSpecialFile}
	}
	if flag&unix.O_NONBLOCK == 0 {
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	return &file{File: os.NewFile(uintptr(fd), name), name: name}, nil
}

// file wraps *os.File so that Name is the sandbox path.
type file struct {
	*os.File
	name string
}

func (f *file) Name() string { return f.name }

// Stat implements [FS].
func (r *Root) Stat(name string) (fs.FileInfo, error) {
	return r.stat("stat", name, unix.O_PATH)
}

// Lstat implements [FS].
func (r *Root) Lstat(name string) (fs.FileInfo, error) {
	return r.stat("lstat", name, unix.O_PATH|unix.O_NOFOLLOW)
}

func (r *Root) stat(op, name string, flags uint64) (fs.FileInfo, error) {
	fd, err := r.open(op, name, flags, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, "", &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return newFileInfo(path.Base(name), &st), nil
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
		return unix.Mkdirat(dfd, base, syscallMode(perm))
	})
}

// Remove implements [FS].
func (r *Root) Remove(name string) error {
	return r.atParent("remove", name, func(dfd int, base string) error {
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
		return unix.Symlinkat(target, dfd, base)
	})
}

// Readlink implements [FS].
func (r *Root) Readlink(name string) (string, error) {
	var out string
	err := r.atParent("readlink", name, func(dfd int, base string) error {
		buf := make([]byte, MaxPathLen)
		n, err := unix.Readlinkat(dfd, base, buf)
		out = string(buf[:n])
		return err
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
		return unix.Renameat(ofd, obase, nfd, nbase)
	})
}

// Link implements [FS].
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
	// fchmod does not work on O_PATH descriptors; the /proc re-open is
	// the standard way to act on exactly the file that was resolved.
	if err := unix.Fchmodat(unix.AT_FDCWD, procFD(fd), syscallMode(mode), 0); err != nil {
		return &fs.PathError{Op: "chmod", Path: name, Err: err}
	}
	return nil
}

// Chtimes implements [FS]. It follows a final symlink.
func (r *Root) Chtimes(name string, atime, mtime time.Time) error {
	fd, err := r.open("chtimes", name, unix.O_PATH, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ts := []unix.Timespec{timespec(atime), timespec(mtime)}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, procFD(fd), ts, 0); err != nil {
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

// RealPath implements [FS].
func (r *Root) RealPath(name string) (string, error) {
	fd, err := r.open("realpath", name, unix.O_PATH, 0)
	if err == nil {
		defer unix.Close(fd)
		return r.fdPath(fd, name)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	// The final component may be missing; resolve its parent.
	dfd, base, perr := r.parent("realpath", name)
	if perr != nil {
		return "", err
	}
	defer unix.Close(dfd)
	dir, err := r.fdPath(dfd, name)
	if err != nil {
		return "", err
	}
	return path.Join(dir, base), nil
}

// fdPath returns the sandbox path of an open descriptor inside the root.
func (r *Root) fdPath(fd int, name string) (string, error) {
	host, err := os.Readlink(procFD(fd))
	if err != nil {
		return "", &fs.PathError{Op: "realpath", Path: name, Err: unwrapPathErr(err)}
	}
	root, err := os.Readlink(procFD(r.fd))
	if err != nil {
		return "", &fs.PathError{Op: "realpath", Path: name, Err: unwrapPathErr(err)}
	}
	if host == root {
		return "/", nil
	}
	rest, ok := strings.CutPrefix(host, strings.TrimSuffix(root, "/")+"/")
	if !ok {
		// Cannot happen with RESOLVE_IN_ROOT; refuse rather than leak.
		return "", &fs.PathError{Op: "realpath", Path: name, Err: syscall.EXDEV}
	}
	return "/" + rest, nil
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

func procFD(fd int) string { return "/proc/self/fd/" + itoa(fd) }

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
