package storage

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// RealPath implements [FS]. Like GNU realpath(1), a final component that
// is missing, or a dangling symlink, is resolved as far as it goes.
func (r *Root) RealPath(name string) (string, error) {
	p := name
	for range maxFollow {
		fd, err := r.open("realpath", p, unix.O_PATH, 0)
		if err == nil {
			defer unix.Close(fd)
			return r.fdPath(fd, name)
		}
		err.(*fs.PathError).Path = name
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		dfd, base, perr := r.parent("realpath", p)
		if perr != nil {
			return "", err
		}
		var st unix.Stat_t
		serr := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
		if serr != nil {
			dir, err := r.fdPath(dfd, name)
			unix.Close(dfd)
			if err != nil {
				return "", err
			}
			return path.Join(dir, base), nil
		}
		unix.Close(dfd)
		rp, _ := rel("realpath", p)
		next, ok := r.danglingTarget(rp)
		if !ok {
			return "", err
		}
		p = "/" + next
	}
	return "", &fs.PathError{Op: "realpath", Path: name, Err: syscall.ELOOP}
}

// fdPath returns the sandbox path of an open descriptor inside the root.
func (r *Root) fdPath(fd int, name string) (string, error) {
	pfd, err := procFDDir()
	if err != nil {
		return "", &fs.PathError{Op: "realpath", Path: name, Err: err}
	}
	host, err := readlinkAt(pfd, itoa(fd))
	if err != nil {
		return "", &fs.PathError{Op: "realpath", Path: name, Err: err}
	}
	if !r.enter() {
		return "", &fs.PathError{Op: "realpath", Path: name, Err: syscall.EBADF}
	}
	root, err := readlinkAt(pfd, itoa(r.fd))
	r.leave()
	if err != nil {
		return "", &fs.PathError{Op: "realpath", Path: name, Err: err}
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

func readlinkAt(dfd int, name string) (string, error) {
	buf := make([]byte, MaxPathLen)
	n, err := unix.Readlinkat(dfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
