package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5"
	"golang.org/x/sys/unix"
)

// Billy returns a go-billy file system over directory dir (an absolute
// sandbox path) of v, so that go-git can work on a sandbox's files: give
// go-git Billy(v, "/workspace/repo") as the worktree and
// Billy(v, "/workspace/repo/.git") (or its Chroot(".git")) as the storage.
//
// Names are relative to dir, "/" or not, and cleaned lexically as billy's
// own chroot does, so ".." never climbs above dir; symlinks resolve inside
// the sandbox's view like every path of v (they may leave dir, never the
// view). As with billy's osfs, OpenFile with O_CREATE, Rename, Symlink and
// TempFile create missing parent directories. File.Name is the name the
// file was opened with, relative to dir. Lock and Unlock are flock(2)
// when v's files expose a descriptor (a SyscallConn method) (those of [Root] do) and no-ops
// otherwise. Chmod and Chtimes are supported; chown is not.
//
// This adapter is the only place go-billy appears in storage's API; the
// shell's git tool imports go-billy and go-git to use it. It is safe for
// concurrent use if v is.
func Billy(v FS, dir string) billy.Filesystem {
	return &billyFS{v: v, base: path.Clean("/" + dir)}
}

type billyFS struct {
	v    FS
	base string // absolute, clean sandbox path
}

var (
	_ billy.Filesystem = (*billyFS)(nil)
	_ billy.Chmod      = (*billyFS)(nil)
	_ billy.Capable    = (*billyFS)(nil)
)

// full maps a billy name to a sandbox path below base.
func (b *billyFS) full(name string) string {
	return path.Join(b.base, path.Clean("/"+name))
}

// Capabilities implements billy.Capable.
func (b *billyFS) Capabilities() billy.Capability { return billy.DefaultCapabilities }

// Create implements billy.Basic.
func (b *billyFS) Create(name string) (billy.File, error) {
	return b.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Open implements billy.Basic.
func (b *billyFS) Open(name string) (billy.File, error) {
	return b.OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile implements billy.Basic.
func (b *billyFS) OpenFile(name string, flag int, perm fs.FileMode) (billy.File, error) {
	p := b.full(name)
	if flag&os.O_CREATE != 0 {
		if err := b.mkdirAll(path.Dir(p), 0o755); err != nil {
			return nil, err
		}
	}
	f, err := b.v.OpenFile(p, flag, perm)
	if err != nil {
		return nil, err
	}
	return &billyFile{File: f, name: name}, nil
}

// Stat implements billy.Basic.
func (b *billyFS) Stat(name string) (fs.FileInfo, error) { return b.v.Stat(b.full(name)) }

// Lstat implements billy.Symlink.
func (b *billyFS) Lstat(name string) (fs.FileInfo, error) { return b.v.Lstat(b.full(name)) }

// Rename implements billy.Basic. It refuses to rename dir itself.
func (b *billyFS) Rename(from, to string) error {
	f, t := b.full(from), b.full(to)
	if f == b.base {
		return &fs.PathError{Op: "rename", Path: from, Err: syscall.EBUSY}
	}
	if err := b.mkdirAll(path.Dir(t), 0o755); err != nil {
		return err
	}
	return b.v.Rename(f, t)
}

// Remove implements billy.Basic. It refuses to remove dir itself.
func (b *billyFS) Remove(name string) error {
	p := b.full(name)
	if p == b.base {
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.EBUSY}
	}
	return b.v.Remove(p)
}

// RemoveAll removes name and everything below it, like os.RemoveAll
// (billy's util.RemoveAll uses it when present).
func (b *billyFS) RemoveAll(name string) error {
	p := b.full(name)
	if p == b.base {
		return &fs.PathError{Op: "removeall", Path: name, Err: syscall.EBUSY}
	}
	return removeAll(b.v, p)
}

func removeAll(v FS, p string) error {
	err := v.Remove(p)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	fi, lerr := v.Lstat(p)
	if lerr != nil || !fi.IsDir() {
		return err
	}
	ents, err := v.ReadDir(p)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := removeAll(v, p+"/"+e.Name()); err != nil {
			return err
		}
	}
	if err := v.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Join implements billy.Basic.
func (b *billyFS) Join(elem ...string) string { return path.Join(elem...) }

// TempFile implements billy.TempFile: a new file named prefix plus a
// random suffix in dir (created if missing), opened read-write.
func (b *billyFS) TempFile(dir, prefix string) (billy.File, error) {
	if err := b.mkdirAll(b.full(dir), 0o755); err != nil {
		return nil, err
	}
	for range 100 {
		var r [6]byte
		rand.Read(r[:])
		name := path.Join(dir, prefix+hex.EncodeToString(r[:]))
		f, err := b.v.OpenFile(b.full(name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &billyFile{File: f, name: name}, nil
	}
	return nil, &fs.PathError{Op: "tempfile", Path: path.Join(dir, prefix), Err: syscall.EEXIST}
}

// ReadDir implements billy.Dir: entries sorted by name, as lstat sees
// them. Each entry is stat'ed while the directory is open, so that
// DirEntry.Info is one fstatat relative to it rather than a lookup of
// the entry's whole path.
func (b *billyFS) ReadDir(name string) ([]fs.FileInfo, error) {
	p := b.full(name)
	f, err := b.v.OpenFile(p, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: p, Err: unwrapPathErr(err)}
	}
	out := make([]fs.FileInfo, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since it was listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, fi)
	}
	slices.SortFunc(out, func(a, b fs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// MkdirAll implements billy.Dir.
func (b *billyFS) MkdirAll(name string, perm fs.FileMode) error {
	return b.mkdirAll(b.full(name), perm)
}

// mkdirAll creates the sandbox directory p and its missing parents.
func (b *billyFS) mkdirAll(p string, perm fs.FileMode) error { return mkdirAll(b.v, p, perm) }

// mkdirAll creates directory p of v and its missing parents, like
// os.MkdirAll (following symlinks).
func mkdirAll(v FS, p string, perm fs.FileMode) error {
	fi, err := v.Stat(p)
	if err == nil {
		if fi.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
	}
	if parent := path.Dir(p); parent != p {
		if err := mkdirAll(v, parent, perm); err != nil {
			return err
		}
	}
	err = v.Mkdir(p, perm)
	if err != nil && errors.Is(err, fs.ErrExist) {
		if fi, serr := v.Stat(p); serr == nil && fi.IsDir() {
			return nil // made concurrently
		}
	}
	return err
}

// Symlink implements billy.Symlink; target is stored verbatim.
func (b *billyFS) Symlink(target, link string) error {
	p := b.full(link)
	if err := b.mkdirAll(path.Dir(p), 0o755); err != nil {
		return err
	}
	return b.v.Symlink(target, p)
}

// Readlink implements billy.Symlink.
func (b *billyFS) Readlink(link string) (string, error) { return b.v.Readlink(b.full(link)) }

// Chroot implements billy.Chroot.
func (b *billyFS) Chroot(dir string) (billy.Filesystem, error) {
	return &billyFS{v: b.v, base: b.full(dir)}, nil
}

// Root implements billy.Chroot: the sandbox path of dir.
func (b *billyFS) Root() string { return b.base }

// Chmod implements billy.Chmod.
func (b *billyFS) Chmod(name string, mode fs.FileMode) error { return b.v.Chmod(b.full(name), mode) }

// Chtimes sets name's access and modification times (billy.Change's).
func (b *billyFS) Chtimes(name string, atime, mtime time.Time) error {
	return b.v.Chtimes(b.full(name), atime, mtime)
}

// billyFile is an open billy.File.
type billyFile struct {
	File
	name string // relative to the billy root, as opened
}

func (f *billyFile) Name() string { return f.name }

// Lock takes an exclusive flock(2) on the file.
func (f *billyFile) Lock() error { return f.flock(unix.LOCK_EX) }

// Unlock releases the flock(2).
func (f *billyFile) Unlock() error { return f.flock(unix.LOCK_UN) }

func (f *billyFile) flock(how int) error {
	err := controlFile(f.File, f.name, "flock", func(fd int) error {
		for {
			if err := unix.Flock(fd, how); err != unix.EINTR {
				return err
			}
		}
	})
	if errors.Is(err, errors.ErrUnsupported) {
		return nil // a File without a descriptor has nothing to lock
	}
	return err
}
