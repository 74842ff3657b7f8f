package storage

import (
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// file is an open file of a [Root]. It holds an *os.File for its
// descriptor handling (no use after Close, no descriptor reuse races) but
// does not embed it: os.File's directory reading, Readdir and Chdir act on
// the file's name as a host path, and that name is a sandbox path.
type file struct {
	f    *os.File
	name string // sandbox path it was opened with
	root *Root

	mu      sync.Mutex // guards the directory-reading state below
	dirbuf  []byte     // getdents64 buffer; nil until ReadDir is called
	dirpos  int        // next record in dirbuf
	dirend  int        // end of valid records in dirbuf
	direofs bool       // getdents64 returned 0
}

var _ File = (*file)(nil)

func newFile(r *Root, fd int, name string) *file {
	return &file{f: os.NewFile(uintptr(fd), name), name: name, root: r}
}

func (f *file) Name() string                              { return f.name }
func (f *file) Read(b []byte) (int, error)                { return f.f.Read(b) }
func (f *file) ReadAt(b []byte, off int64) (int, error)   { return f.f.ReadAt(b, off) }
func (f *file) Write(b []byte) (int, error)               { return f.f.Write(b) }
func (f *file) WriteAt(b []byte, off int64) (int, error)  { return f.f.WriteAt(b, off) }
func (f *file) Seek(off int64, whence int) (int64, error) { return f.f.Seek(off, whence) }
func (f *file) Truncate(size int64) error                 { return f.f.Truncate(size) }
func (f *file) Sync() error                               { return f.f.Sync() }
func (f *file) ReadFrom(r io.Reader) (int64, error)       { return f.f.ReadFrom(r) }
func (f *file) WriteTo(w io.Writer) (int64, error)        { return f.f.WriteTo(w) }
func (f *file) SyscallConn() (syscall.RawConn, error)     { return f.f.SyscallConn() }

// Fd returns the file's descriptor, as os.File.Fd (for flock). It stays
// valid only until Close.
func (f *file) Fd() uintptr { return f.f.Fd() }

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
func (f *file) Close() error {
	f.mu.Lock()
	f.putDirbuf()
	f.mu.Unlock()
	return f.f.Close()
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
	dirbufPool.Put(&b)
}

// control runs fn on the descriptor, holding it open meanwhile.
func (f *file) control(fn func(fd int) error) error {
	rc, err := f.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
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
	var out []fs.DirEntry
	for n <= 0 || len(out) < n {
		if f.dirpos >= f.dirend {
			if f.direofs {
				break
			}
			if f.dirbuf == nil {
				f.dirbuf = *dirbufPool.Get().(*[]byte)
			}
			var cnt int
			err := f.control(func(fd int) error {
				var err error
				for {
					cnt, err = unix.Getdents(fd, f.dirbuf)
					if err != unix.EINTR {
						return err
					}
				}
			})
			if err != nil {
				return out, &fs.PathError{Op: "readdir", Path: f.name, Err: err}
			}
			f.dirpos, f.dirend = 0, cnt
			if cnt == 0 {
				f.direofs = true
				f.putDirbuf()
				break
			}
		}
		name, typ, next := parseDirent(f.dirbuf[f.dirpos:f.dirend])
		if next == 0 {
			f.dirpos = f.dirend // malformed: drop the rest of the buffer
			continue
		}
		f.dirpos += next
		if name == "." || name == ".." || name == "" {
			continue
		}
		out = append(out, &dirEntry{dir: f, name: name, typ: typ})
	}
	if n > 0 && len(out) == 0 {
		return nil, io.EOF
	}
	return out, nil
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
