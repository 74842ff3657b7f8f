package storage

import (
	"io"
	"io/fs"
	"time"
)

// FS is a sandbox's file view: the files a process inside the sandbox's
// container sees at /workspace and /tmp, reached without a container.
//
// Names are absolute sandbox paths ("/workspace/src/a.go"). They are not
// cleaned lexically: "a/link/.." means what the kernel says it means, so a
// tool behaves exactly as it would inside the container. Symlinks, absolute
// or relative, resolve inside the view and can never reach outside it: a
// path that would leave it resolves as if the view's root were "/". Paths
// outside /workspace and /tmp do not exist in the view (fs.ErrNotExist).
//
// Errors are *fs.PathError whose Err is a syscall.Errno (ENOENT, ELOOP,
// ENAMETOOLONG, EINVAL for a NUL byte, ENOSPC or EDQUOT past the quota), so
// errors.Is(err, fs.ErrNotExist) works and a tool can print the same message
// GNU coreutils would. Opening a FIFO, socket or device never blocks and
// never touches a host device: such files can be listed and stat'ed, and
// opening them fails with [ErrSpecialFile]. A device node is never opened,
// whether or not the filesystem is mounted nodev. A FIFO is never opened
// on a filesystem without nodev; on a nodev one (the pool) [Root] may open
// it without blocking for an instant before refusing it, which wakes a
// process blocked opening its other end.
//
// FileInfo.Sys, from Stat, Lstat, File.Stat and DirEntry.Info alike, is a
// *unix.Stat_t (golang.org/x/sys/unix). To stat every entry of a
// directory (ls -l, find), open it with OpenFile and use File.ReadDir:
// DirEntry.Info is then one fstatat(2) relative to the open directory,
// cheaper than Lstat of each full path.
//
// Implementations are safe for concurrent use.
type FS interface {
	// OpenFile opens name with os.OpenFile's flags and permission bits.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	// ReadDir returns the entries of directory name sorted by name.
	// Their Info is an Lstat of the entry's path.
	ReadDir(name string) ([]fs.DirEntry, error)
	Mkdir(name string, perm fs.FileMode) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	Rename(oldname, newname string) error
	// Symlink creates link pointing at target; target is stored verbatim.
	Symlink(target, link string) error
	Link(oldname, newname string) error
	Readlink(name string) (string, error)
	Chmod(name string, mode fs.FileMode) error
	Chtimes(name string, atime, mtime time.Time) error
	Truncate(name string, size int64) error
	// RealPath returns the absolute sandbox path name resolves to, with
	// every symlink followed (like realpath(1)). The final component need
	// not exist when its parent does.
	RealPath(name string) (string, error)
}

// File is an open file in an [FS]. Its Name is the sandbox path it was
// opened with.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Seeker
	io.Closer
	Name() string
	Stat() (fs.FileInfo, error)
	// ReadDir reads a directory's entries in directory order, like
	// os.File.ReadDir; Info lstats an entry relative to this directory.
	ReadDir(n int) ([]fs.DirEntry, error)
	Truncate(size int64) error
	Sync() error
}
