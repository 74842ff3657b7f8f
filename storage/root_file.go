package storage

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// file is an open file of a [Root]. It works on its descriptor with plain
// system calls, not through an *os.File: os.NewFile costs an fcntl(2) per
// open (and os.File's directory reading, Readdir and Chdir would act on
// the file's name as a host path, and that name is a sandbox path).
// Errors are the ones os.File returns (*fs.PathError with the same Op
// names, io.EOF, fs.ErrClosed after Close).
//
// The descriptor is closed by whichever of Close and the last call in
// flight comes last (heldFD, as for [Root]), so a call racing Close never
// uses a descriptor number that was closed and reused by another open.
type file struct {
	heldFD
	name    string // sandbox path it was opened with
	root    *Root
	append  bool // opened with O_APPEND: WriteAt is refused, as os.File does
	regular bool // a regular file (for ReadEOF)

	mu      sync.Mutex // guards the directory-reading state below
	dirbuf  *[]byte    // getdents64 buffer, from dirbufPool; nil until ReadDir is called
	dirpos  int        // next record in dirbuf
	dirend  int        // end of valid records in dirbuf
	direofs bool       // getdents64 returned 0
}

var _ File = (*file)(nil)

func newFile(r *Root, fd int, name string, flag int) *file {
	f := &file{heldFD: heldFD{fd: fd}, name: name, root: r, append: flag&os.O_APPEND != 0}
	// A file dropped without Close has its descriptor closed, as os.File
	// does. (A finalizer rather than runtime.AddCleanup: it allocates
	// nothing on the heap.) Close removes it.
	runtime.SetFinalizer(f, (*file).finalize)
	return f
}

// finalize closes the descriptor of a file dropped without Close; nothing
// can be using it then.
func (f *file) finalize() {
	if f.markClosed() {
		unix.Close(f.fd)
	}
}

// maxRW caps one read or write call, as os.File does (some kernels and
// file systems mishandle larger counts).
const maxRW = 1 << 30

func (f *file) pathErr(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

func (f *file) Name() string { return f.name }

func (f *file) Read(b []byte) (int, error) {
	if !f.enter() {
		return 0, f.pathErr("read", fs.ErrClosed)
	}
	defer f.leave()
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(f.fd, b[:min(len(b), maxRW)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, f.pathErr("read", err)
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// ReadEOF is Read, except that on a regular file a read that returns
// fewer bytes than len(b) also returns io.EOF: a regular file's read comes
// up short only where the file ended at that moment, so the zero-byte read
// that would report the end is saved. A reader that loops to EOF (cat)
// uses it.
func (f *file) ReadEOF(b []byte) (int, error) {
	n, err := f.Read(b)
	if err == nil && f.regular && n < min(len(b), maxRW) {
		err = io.EOF
	}
	return n, err
}

func (f *file) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, f.pathErr("readat", errors.New("negative offset"))
	}
	return f.full(pread, b, off)
}

func (f *file) Write(b []byte) (int, error) {
	return f.full(write, b, 0)
}

func (f *file) WriteAt(b []byte, off int64) (int, error) {
	if f.append {
		return 0, errors.New("os: invalid use of WriteAt on file opened with O_APPEND")
	}
	if off < 0 {
		return 0, f.pathErr("writeat", errors.New("negative offset"))
	}
	return f.full(pwrite, b, off)
}

// rwCall is the system call full makes. (A switch rather than a function
// value, so that b does not escape to the heap.)
type rwCall int8

const (
	pread rwCall = iota
	pwrite
	write
)

// full makes call until all of b is done, at most maxRW bytes a call,
// advancing off (which write ignores). A read that returns nothing is
// io.EOF; a write, io.ErrUnexpectedEOF.
func (f *file) full(call rwCall, b []byte, off int64) (int, error) {
	op := "write"
	if call == pread {
		op = "read"
	}
	if !f.enter() {
		return 0, f.pathErr(op, fs.ErrClosed)
	}
	defer f.leave()
	n := 0
	for n < len(b) {
		p := b[n : n+min(len(b)-n, maxRW)]
		var m int
		var err error
		switch call {
		case pread:
			m, err = unix.Pread(f.fd, p, off)
		case pwrite:
			m, err = unix.Pwrite(f.fd, p, off)
		default:
			m, err = unix.Write(f.fd, p)
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, f.pathErr(op, err)
		}
		if m == 0 {
			if call == pread {
				return n, io.EOF
			}
			return n, f.pathErr(op, io.ErrUnexpectedEOF)
		}
		n += m
		off += int64(m)
	}
	return n, nil
}

func (f *file) Seek(off int64, whence int) (int64, error) {
	var ret int64
	err := f.control(func(fd int) error {
		var err error
		ret, err = unix.Seek(fd, off, whence)
		return err
	})
	if err != nil {
		return 0, f.pathErr("seek", err)
	}
	return ret, nil
}

func (f *file) Truncate(size int64) error {
	if err := f.control(func(fd int) error { return retryEINTR(func() error { return unix.Ftruncate(fd, size) }) }); err != nil {
		return f.pathErr("truncate", err)
	}
	return nil
}

func (f *file) Sync() error {
	if err := f.control(func(fd int) error { return retryEINTR(func() error { return unix.Fsync(fd) }) }); err != nil {
		return f.pathErr("sync", err)
	}
	return nil
}

func retryEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// withOSFile runs fn on an *os.File over a duplicate of the descriptor
// (the same open file description, so the offset is shared), for the
// copy fast paths of os.File's ReadFrom and WriteTo (copy_file_range,
// splice, sendfile), which a plain descriptor would lose.
func (f *file) withOSFile(fn func(*os.File) (int64, error)) (int64, error) {
	var dup int
	err := f.control(func(fd int) error {
		var err error
		dup, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return 0, f.pathErr("dup", err)
	}
	of := os.NewFile(uintptr(dup), f.name)
	defer of.Close()
	return fn(of)
}

// ReadFrom is os.File.ReadFrom on the file.
func (f *file) ReadFrom(r io.Reader) (int64, error) {
	return f.withOSFile(func(of *os.File) (int64, error) { return of.ReadFrom(r) })
}

// WriteTo is os.File.WriteTo on the file.
func (f *file) WriteTo(w io.Writer) (int64, error) {
	return f.withOSFile(func(of *os.File) (int64, error) { return of.WriteTo(w) })
}

// SyscallConn returns a raw connection to the descriptor (for flock). The
// file is blocking, so Read and Write call their function once per try
// until it reports done.
func (f *file) SyscallConn() (syscall.RawConn, error) { return rawConn{f}, nil }

type rawConn struct{ f *file }

func (c rawConn) Control(fn func(fd uintptr)) error {
	return c.f.control(func(fd int) error { fn(uintptr(fd)); return nil })
}

func (c rawConn) Read(fn func(fd uintptr) bool) error {
	return c.f.control(func(fd int) error {
		for !fn(uintptr(fd)) {
		}
		return nil
	})
}

func (c rawConn) Write(fn func(fd uintptr) bool) error { return c.Read(fn) }

// Fd returns the file's descriptor, as os.File.Fd (for flock). It stays
// valid only until Close.
func (f *file) Fd() uintptr {
	if f.closed() {
		return ^uintptr(0)
	}
	return uintptr(f.fd)
}

// Stat returns the file's FileInfo; Sys is a *unix.Stat_t, as for
// [Root.Stat].
func (f *file) Stat() (fs.FileInfo, error) {
	fi := &fileInfo{name: baseName(f.name)}
	err := f.control(func(fd int) error { return unix.Fstat(fd, &fi.st) })
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: f.name, Err: err}
	}
	return fi, nil
}

// Close closes the file and returns its directory buffer to the pool.
// A second Close fails with fs.ErrClosed, as os.File's does.
func (f *file) Close() error {
	f.mu.Lock()
	f.putDirbuf()
	f.mu.Unlock()
	if !f.markClosed() {
		return f.pathErr("close", fs.ErrClosed)
	}
	runtime.SetFinalizer(f, nil)
	if err := f.closeIdle(); err != nil && err != unix.EINTR {
		return f.pathErr("close", err)
	}
	return nil
}

// dirbufPool holds getdents64 buffers: a tree walk opens one directory
// after another, and a fresh 8 KiB buffer for each was most of a walk's
// allocation.
var dirbufPool = sync.Pool{New: func() any { b := make([]byte, 8192); return &b }}

// putDirbuf returns the directory buffer to the pool once nothing in it
// is still to be read. f.mu is held.
func (f *file) putDirbuf() {
	if f.dirbuf == nil {
		return
	}
	b := f.dirbuf
	f.dirbuf, f.dirpos, f.dirend = nil, 0, 0
	dirbufPool.Put(b)
}

// control runs fn on the descriptor, holding it open meanwhile. After
// Close it returns fs.ErrClosed.
func (f *file) control(fn func(fd int) error) error {
	if !f.enter() {
		return fs.ErrClosed
	}
	defer f.leave()
	return fn(f.fd)
}

// ReadDir reads the directory's entries in directory order, like
// os.File.ReadDir. Info on an entry lstats it relative to this
// directory while the file is open, and through the Root afterwards.
func (f *file) ReadDir(n int) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.control(func(int) error { return nil }); err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: f.name, Err: err}
	}
	// The entries are collected by value and pointed to at the end: two
	// allocations for a small directory instead of one per entry.
	var vals []dirEntry
	for n <= 0 || len(vals) < n {
		if f.dirpos >= f.dirend {
			if f.direofs {
				break
			}
			if f.dirbuf == nil {
				f.dirbuf = dirbufPool.Get().(*[]byte)
			}
			var cnt int
			err := f.control(func(fd int) error {
				var err error
				for {
					cnt, err = unix.Getdents(fd, *f.dirbuf)
					if err != unix.EINTR {
						return err
					}
				}
			})
			if err != nil {
				return dirEntries(vals), &fs.PathError{Op: "readdir", Path: f.name, Err: err}
			}
			f.dirpos, f.dirend = 0, cnt
			if cnt == 0 {
				f.direofs = true
				f.putDirbuf()
				break
			}
		}
		name, typ, next := parseDirent((*f.dirbuf)[f.dirpos:f.dirend])
		if next == 0 {
			f.dirpos = f.dirend // malformed: drop the rest of the buffer
			continue
		}
		f.dirpos += next
		if name == "." || name == ".." || name == "" {
			continue
		}
		if vals == nil {
			vals = make([]dirEntry, 0, 16)
		}
		vals = append(vals, dirEntry{dir: f, name: name, typ: typ})
	}
	if n > 0 && len(vals) == 0 {
		return nil, io.EOF
	}
	return dirEntries(vals), nil
}

// dirEntries points to each of vals; nil for none.
func dirEntries(vals []dirEntry) []fs.DirEntry {
	if len(vals) == 0 {
		return nil
	}
	out := make([]fs.DirEntry, len(vals))
	for i := range vals {
		out[i] = &vals[i]
	}
	return out
}

// Readdir is os.File.Readdir over ReadDir.
func (f *file) Readdir(n int) ([]fs.FileInfo, error) {
	ents, err := f.ReadDir(n)
	out := make([]fs.FileInfo, 0, len(ents))
	for _, e := range ents {
		fi, ierr := e.Info()
		if ierr != nil {
			continue // removed since it was listed, as os.File.Readdir
		}
		out = append(out, fi)
	}
	return out, err
}

// Readdirnames is os.File.Readdirnames over ReadDir.
func (f *file) Readdirnames(n int) ([]string, error) {
	ents, err := f.ReadDir(n)
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Name()
	}
	return out, err
}

// parseDirent decodes the linux_dirent64 record at the start of b and
// returns its name, type and length (0 when b is too short).
func parseDirent(b []byte) (name string, typ fs.FileMode, reclen int) {
	const nameOff = int(unsafe.Offsetof(unix.Dirent{}.Name))
	if len(b) < nameOff {
		return "", 0, 0
	}
	reclen = int(*(*uint16)(unsafe.Pointer(&b[unsafe.Offsetof(unix.Dirent{}.Reclen)])))
	if reclen < nameOff || reclen > len(b) {
		return "", 0, 0
	}
	raw := b[nameOff:reclen]
	for i, c := range raw {
		if c == 0 {
			raw = raw[:i]
			break
		}
	}
	switch b[unsafe.Offsetof(unix.Dirent{}.Type)] {
	case unix.DT_DIR:
		typ = fs.ModeDir
	case unix.DT_LNK:
		typ = fs.ModeSymlink
	case unix.DT_FIFO:
		typ = fs.ModeNamedPipe
	case unix.DT_SOCK:
		typ = fs.ModeSocket
	case unix.DT_CHR:
		typ = fs.ModeDevice | fs.ModeCharDevice
	case unix.DT_BLK:
		typ = fs.ModeDevice
	case unix.DT_REG:
		typ = 0
	default:
		typ = fs.ModeIrregular // DT_UNKNOWN: Type() asks Info
	}
	return string(raw), typ, reclen
}

// dirEntry is an entry read by [file.ReadDir].
type dirEntry struct {
	dir  *file
	name string
	typ  fs.FileMode // fs.ModeIrregular when the directory did not say
}

func (e *dirEntry) Name() string { return e.name }
func (e *dirEntry) IsDir() bool  { return e.Type().IsDir() }

func (e *dirEntry) Type() fs.FileMode {
	if e.typ != fs.ModeIrregular {
		return e.typ
	}
	if fi, err := e.Info(); err == nil {
		return fi.Mode().Type()
	}
	return fs.ModeIrregular
}

func (e *dirEntry) String() string { return fs.FormatDirEntry(e) }

// Info lstats the entry. The name is one component and the final symlink
// is not followed, so the lookup cannot leave the directory.
func (e *dirEntry) Info() (fs.FileInfo, error) {
	fi := &fileInfo{name: e.name}
	err := e.dir.control(func(fd int) error {
		return unix.Fstatat(fd, e.name, &fi.st, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err == nil {
		return fi, nil
	}
	if _, isErrno := err.(syscall.Errno); !isErrno || err == unix.EBADF {
		// The directory was closed: look the entry up again by path.
		return e.dir.root.Lstat(joinPath(e.dir.name, e.name))
	}
	return nil, &fs.PathError{Op: "lstat", Path: joinPath(e.dir.name, e.name), Err: err}
}

func joinPath(dir, name string) string {
	if len(dir) > 0 && dir[len(dir)-1] == '/' {
		return dir + name
	}
	return dir + "/" + name
}
