package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxFollow bounds how many dangling symlinks OpenFile follows by hand
// when creating a file through them, as the kernel's own limit of 40.
const maxFollow = 40

// procFDDir returns an O_PATH descriptor of this process's /proc/<pid>/fd
// directory, opened once. Re-opening "N" relative to it re-opens exactly
// the file that descriptor N refers to, without resolving any path again.
var procFDDir = sync.OnceValues(func() (int, error) {
	fd, err := unix.Open("/proc/self/fd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /proc/self/fd (rung needs procfs): %w", err)
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil || sfs.Type != unix.PROC_SUPER_MAGIC {
		unix.Close(fd)
		return -1, fmt.Errorf("/proc/self/fd is not on procfs")
	}
	return fd, nil
})

// OpenFile implements [FS]. O_PATH and O_TMPFILE are refused (EINVAL).
func (r *Root) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	fd, size, nonblock, err := r.openFile("open", name, flag, perm)
	if err != nil {
		return nil, err
	}
	if nonblock {
		// F_SETFL changes only the status flags (O_APPEND, O_DIRECT,
		// O_NOATIME, O_NONBLOCK), so flag is the value to restore.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flag); err != nil {
			unix.Close(fd)
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	f := newFile(r, fd, name, flag)
	f.regular = size >= 0 && flag&unix.O_DIRECT == 0
	return f, nil
}

// openFile opens name for I/O and returns the descriptor with the file's
// size: -1 for a directory or when it is not known to be a regular file. It never returns anything but a regular file or
// a directory; see [Root]. nonblock reports that the descriptor has
// O_NONBLOCK although flag has not (the direct open adds it): for a
// regular file or a directory that changes only what F_GETFL says.
func (r *Root) openFile(op, name string, flag int, perm fs.FileMode) (fd int, size int64, nonblock bool, err error) {
	p, err := rel(op, name)
	if err != nil {
		return -1, -1, false, err
	}
	perr := func(err error) (int, int64, bool, error) {
		return -1, -1, false, &fs.PathError{Op: op, Path: name, Err: err}
	}
	if flag&unix.O_PATH != 0 || flag&unix.O_TMPFILE == unix.O_TMPFILE {
		return perr(syscall.EINVAL)
	}
	flags := uint64(flag) | unix.O_NOCTTY
	mode := uint64(syscallMode(perm))
	if flag&unix.O_DIRECTORY != 0 && flag&unix.O_CREAT == 0 {
		// The kernel refuses O_DIRECTORY on anything but a directory
		// before opening it, so one openat2 is safe.
		fd, err := r.openat2(p, flags, 0)
		if err != nil {
			return perr(err)
		}
		return fd, -1, false, nil
	}
	for range maxFollow {
		if flag&unix.O_CREAT != 0 {
			// O_EXCL creates a new regular file or fails: it never opens
			// an existing one, and never follows a final symlink.
			fd, err := r.openat2(p, flags|unix.O_EXCL, mode)
			if err == nil {
				if err := r.ownFD(fd); err != nil {
					unix.Close(fd)
					return perr(err)
				}
				return fd, 0, false, nil
			}
			if err != unix.EEXIST || flag&unix.O_EXCL != 0 {
				return perr(err)
			}
		}
		if r.nodev {
			fd, size, err := r.openDirect(p, flags&^(unix.O_CREAT|unix.O_EXCL), flag)
			switch {
			case err == nil:
				return fd, size, flag&unix.O_NONBLOCK == 0, nil
			case err == errTakeExact:
				// Classify the failure the exact way (below).
			case err == unix.ENOENT && flag&unix.O_CREAT != 0:
				// As below: the file vanished, or a dangling symlink.
				if next, ok := r.danglingTarget(p); ok {
					p = next
				}
				continue
			default:
				return perr(err)
			}
		}
		pfd, err := r.openat2(p, unix.O_PATH|(flags&unix.O_NOFOLLOW), 0)
		if err == unix.ENOENT && flag&unix.O_CREAT != 0 {
			// Either the file vanished since EEXIST, or p ends in a
			// dangling symlink, which open(2) would create the target of.
			if next, ok := r.danglingTarget(p); ok {
				p = next
			}
			continue
		}
		if err != nil {
			return perr(err)
		}
		fd, size, err := reopen(pfd, flag)
		unix.Close(pfd)
		if err != nil {
			return perr(err)
		}
		return fd, size, false, nil
	}
	return perr(syscall.ELOOP)
}

// errTakeExact is openDirect's answer when only the exact two-step open
// (O_PATH, fstat, re-open) can tell what the caller must get.
var errTakeExact = errors.New("take the exact path")

// openDirect opens p for I/O in one openat2 with O_NONBLOCK added, then
// checks with fstat what it opened. Only a root on a nodev mount may use
// it (RESOLVE_NO_XDEV keeps every lookup on that mount): there a device
// node fails to open (EACCES) before any driver sees it, a socket fails
// with ENXIO, and O_NONBLOCK makes a FIFO open return at once instead of
// waiting for a peer. A FIFO that did open is closed again and refused.
//
// It returns errTakeExact for every failure it cannot classify as the
// exact path would (a special file refusing to open, EAGAIN from a racing
// rename or from a lease being broken, a permission error...); the
// caller then repeats the open the exact way, which never retries
// O_NONBLOCK's EAGAIN. ENOENT, ENOTDIR, ELOOP and EISDIR are the same
// both ways and are returned as they are.
func (r *Root) openDirect(p string, flags uint64, flag int) (int, int64, error) {
	if !r.enter() {
		return -1, -1, unix.EBADF
	}
	how := unix.OpenHow{Flags: flags | unix.O_NONBLOCK | unix.O_CLOEXEC, Resolve: resolveFlags}
	fd, err := unix.Openat2(r.fd, p, &how)
	r.leave()
	switch err {
	case nil:
	case unix.ENOENT, unix.ENOTDIR, unix.ELOOP, unix.EISDIR:
		// ELOOP: a symlink loop, or O_NOFOLLOW on a final symlink, which
		// the exact path refuses with ELOOP too. EISDIR: write access to
		// a directory.
		return -1, -1, err
	default:
		return -1, -1, errTakeExact
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, -1, errTakeExact
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return fd, st.Size, nil
	case unix.S_IFDIR:
		if flag&unix.O_CREAT != 0 {
			unix.Close(fd)
			return -1, -1, syscall.EISDIR
		}
		return fd, -1, nil
	}
	unix.Close(fd)
	return -1, -1, ErrSpecialFile
}

// reopen checks what the O_PATH descriptor pfd refers to and, only for a
// regular file or directory, opens it for I/O with flag.
func reopen(pfd int, flag int) (int, int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return -1, -1, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		if flag&unix.O_CREAT != 0 {
			return -1, -1, syscall.EISDIR
		}
	case unix.S_IFLNK:
		return -1, -1, syscall.ELOOP // O_NOFOLLOW on a symlink, as open(2)
	default:
		return -1, -1, ErrSpecialFile
	}
	dir, err := procFDDir()
	if err != nil {
		return -1, -1, err
	}
	flags := flag&^(unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW) | unix.O_NOCTTY | unix.O_CLOEXEC
	for {
		fd, err := unix.Openat(dir, itoa(pfd), flags, 0)
		if err == unix.EINTR {
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return fd, -1, err
		}
		return fd, st.Size, err
	}
}

// danglingTarget returns where the symlink at p points, as a path relative
// to the root, when p is a symlink; ok is false when it is not one (any
// more).
func (r *Root) danglingTarget(p string) (next string, ok bool) {
	fd, err := r.openat2(p, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return "", false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return "", false
	}
	target, err := readlinkAt(fd, "")
	if err != nil || target == "" {
		return "", false
	}
	if strings.HasPrefix(target, "/") {
		return strings.TrimLeft(target, "/"), true
	}
	// A relative target is relative to the directory holding the link,
	// which p's own prefix may reach through symlinks: resolve it.
	dir := "."
	if i := strings.LastIndexByte(strings.TrimRight(p, "/"), '/'); i >= 0 {
		dir = p[:i]
	}
	dfd, err := r.openat2(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return "", false
	}
	defer unix.Close(dfd)
	real, err := r.fdPath(dfd, p)
	if err != nil {
		return "", false
	}
	return strings.TrimLeft(real, "/") + "/" + target, true
}

// ReadFile returns the contents of the regular file name, like
// os.ReadFile, in fewer system calls than OpenFile and Read. It follows
// the same rules as OpenFile: a special file fails with [ErrSpecialFile].
func (r *Root) ReadFile(name string) ([]byte, error) {
	fd, size, _, err := r.openFile("open", name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	// One byte more than the size, so that a file that has not grown is
	// read in one call and its EOF seen in a second.
	// The first buffer is capped: a huge sparse file must not make one
	// giant allocation (the buffer grows as data actually arrives).
	size = min(max(size, 0), 1<<20)
	buf := make([]byte, 0, size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// WriteFile writes data to name, creating it with perm (before umask) or
// truncating it, like os.WriteFile, in fewer system calls than OpenFile
// and Write.
func (r *Root) WriteFile(name string, data []byte, perm fs.FileMode) error {
	fd, _, _, err := r.openFile("open", name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unix.Close(fd)
			return &fs.PathError{Op: "write", Path: name, Err: err}
		}
		data = data[n:]
	}
	if err := unix.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Path: name, Err: err}
	}
	return nil
}
