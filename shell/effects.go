package shell

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"rung.dev/rung/storage"
)

// trackFS is an exec's file view as the interpreter and its tools use
// it: it records whether the exec changed a file (so that a caller can
// tell whether an exec refused at run time may still run elsewhere
// instead, see [Result].Changed), and refuses what the view cannot serve
// as the container would: a path outside /workspace and /tmp that the
// view does not hold, and any change outside them.
type trackFS struct {
	storage.FS
	sh      *shared
	changed atomic.Bool
	// root: 0 not probed yet, 1 the view holds the container's root
	// file system (read-only outside /workspace and /tmp), 2 it does not.
	root atomic.Int32
	// login, for a login shell's exec, serves the system files its
	// startup files read and its home (login.go); nil otherwise.
	login *loginFiles
	// rec, while a login shell's startup files run, records their
	// lookups in the view (loginstate.go).
	rec *loginRec
}

// statfser is the optional disk-usage query du and df make of a view.
type statfser interface {
	Statfs(name string) (total, free, avail uint64, err error)
}

// Statfs forwards to the view when it answers it.
func (t *trackFS) Statfs(name string) (total, free, avail uint64, err error) {
	if sf, ok := t.FS.(statfser); ok {
		return sf.Statfs(name)
	}
	return 0, 0, 0, errors.ErrUnsupported
}

// inside reports whether name is lexically under /workspace or /tmp.
func inside(name string) bool {
	p := path.Clean(name)
	return p == "/workspace" || p == "/tmp" || strings.HasPrefix(p, "/workspace/") || strings.HasPrefix(p, "/tmp/")
}

// seesRoot reports whether the view holds the container's root file
// system beside /workspace and /tmp (probed once per exec: /usr).
func (t *trackFS) seesRoot() bool {
	switch t.root.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	_, err := t.FS.Stat("/usr/bin")
	if err == nil {
		t.root.Store(1)
		return true
	}
	t.root.Store(2)
	return false
}

// refuse records that the exec reached path, which the view cannot serve
// faithfully, and returns the error the caller gets.
func (t *trackFS) refuse(op, name string, errno syscall.Errno) error {
	t.sh.setUnsupported(&pathRefused{op: op, path: name})
	return &fs.PathError{Op: op, Path: name, Err: errno}
}

// pathRefused is the run-time refusal of a path.
type pathRefused struct{ op, path string }

func (e *pathRefused) Error() string {
	return e.op + " " + e.path + ": outside /workspace and /tmp: " + ErrUnsupported.Error()
}

func (e *pathRefused) Unwrap() error { return ErrUnsupported }

// read guards a read of name: outside the shared directories only a view
// that holds the root serves it.
func (t *trackFS) read(op, name string) error {
	if inside(name) || t.seesRoot() {
		return nil
	}
	return t.refuse(op, name, syscall.ENOENT)
}

// write guards a change of name: never outside the shared directories.
// The error is EPERM, as before the check existed (issue 10, finding 7):
// a refusal, not a claim that the container's root is read-only.
func (t *trackFS) write(op, name string) error {
	if !inside(name) {
		return t.refuse(op, name, syscall.EPERM)
	}
	if sh := t.sh; sh.beforeChange != nil {
		sh.changeOnce.Do(func() { sh.changeErr = sh.beforeChange() })
		if sh.changeErr != nil {
			return &fs.PathError{Op: op, Path: name, Err: syscall.EIO}
		}
	}
	return nil
}

// missed looks again at a lookup of name that failed: when a symlink on
// the way leads outside the shared directories, the container would
// have followed it where the view cannot.
func (t *trackFS) missed(op, name string, err error) error {
	if err == nil || t.seesRoot() || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if d := path.Dir(name); (d == "/workspace" || d == "/tmp") && path.Clean(name) == name {
		// Nothing of the name in a shared directory itself (which is
		// never a link): no link to follow elsewhere.
		if _, lerr := t.FS.Lstat(name); errors.Is(lerr, fs.ErrNotExist) {
			return err
		}
	}
	if real, rerr := t.FS.RealPath(name); rerr == nil && !inside(real) {
		return t.refuse(op, name, syscall.ENOENT)
	}
	return err
}

// done records a change that succeeded.
func (t *trackFS) done(err error) error {
	if err == nil {
		t.changed.Store(true)
	}
	return err
}

const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND

func (t *trackFS) OpenFile(name string, flag int, perm fs.FileMode) (storage.File, error) {
	if flag&writeFlags != 0 {
		if err := t.write("open", name); err != nil {
			return nil, err
		}
		f, err := t.FS.OpenFile(name, flag, perm)
		return f, t.missed("open", name, t.done(err))
	}
	if f, ok := t.login.file(name); ok {
		if f == nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
		}
		return t.login.open(f, name), nil
	}
	if m, ok := t.login.home(name); ok {
		f, err := t.OpenFile(m, flag, perm)
		return f, renamed(err, name)
	}
	if err := t.read("open", name); err != nil {
		return nil, err
	}
	t.unrecorded()
	f, err := t.FS.OpenFile(name, flag, perm)
	return f, t.missed("open", name, err)
}

// sysStat answers a stat of a system file a login serves (nil: none).
func sysStat(f *SystemFile, op, name string) (fs.FileInfo, error) {
	if f == nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: syscall.ENOENT}
	}
	return f.info(), nil
}

// renamed gives a path error the name the caller used (a path under a
// login shell's home looked up in the view).
func renamed(err error, name string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path != name {
		return &fs.PathError{Op: pe.Op, Path: name, Err: pe.Err}
	}
	return err
}

// rootInfo answers a stat of / in a view without the container's root
// (Config.RootInfo): its attributes are the container's, not the view's
// (ls -la in /workspace prints .. with them); a Shell with no RootInfo
// (no container tier) answers with the view's. ok is false for any other
// path, or when the view holds the root.
func (t *trackFS) rootInfo(op, name string) (fi fs.FileInfo, ok bool, err error) {
	if path.Clean(name) != "/" || t.seesRoot() {
		return nil, false, nil
	}
	f := t.sh.sh.cfg.RootInfo
	if f == nil {
		// No container to answer like: the view's own root.
		fi, err := t.FS.Lstat("/")
		return fi, true, err
	}
	if fi, err := f(); err == nil {
		return fi, true, nil
	}
	return nil, true, t.refuse(op, name, syscall.ENOENT)
}

// rootFiles are the files of the container's root that a view without
// it serves through Config.RootFile.
var rootFiles = map[string]bool{"/etc/passwd": true, "/etc/group": true}

// rootFile reads name through Config.RootFile when the view does not
// hold the container's root and name is one of rootFiles; ok is false
// otherwise (the caller opens name as usual).
func (t *trackFS) rootFile(name string) (b []byte, ok bool, err error) {
	f := t.sh.sh.cfg.RootFile
	if f == nil || !rootFiles[path.Clean(name)] || t.seesRoot() {
		return nil, false, nil
	}
	if b, err := f(path.Clean(name)); err == nil {
		return b, true, nil
	}
	return nil, true, t.refuse("open", name, syscall.ENOENT)
}

func (t *trackFS) Stat(name string) (fs.FileInfo, error) {
	if f, ok := t.login.file(name); ok {
		return sysStat(f, "stat", name)
	}
	if m, ok := t.login.home(name); ok {
		fi, err := t.Stat(m)
		return fi, renamed(err, name)
	}
	if fi, ok, err := t.rootInfo("stat", name); ok {
		t.unrecorded()
		return fi, err
	}
	if err := t.read("stat", name); err != nil {
		return nil, err
	}
	fi, err := t.FS.Stat(name)
	err = t.missed("stat", name, err)
	t.observe(false, name, fi, err)
	return fi, err
}

func (t *trackFS) Lstat(name string) (fs.FileInfo, error) {
	if f, ok := t.login.file(name); ok {
		return sysStat(f, "lstat", name)
	}
	if m, ok := t.login.home(name); ok {
		fi, err := t.Lstat(m)
		return fi, renamed(err, name)
	}
	if fi, ok, err := t.rootInfo("lstat", name); ok {
		t.unrecorded()
		return fi, err
	}
	if err := t.read("lstat", name); err != nil {
		return nil, err
	}
	fi, err := t.FS.Lstat(name)
	err = t.missed("lstat", name, err)
	t.observe(true, name, fi, err)
	return fi, err
}

func (t *trackFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if f, ok := t.login.file(name); ok {
		if f == nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
		}
		return t.login.open(f, name).ReadDir(-1)
	}
	if m, ok := t.login.home(name); ok {
		ents, err := t.ReadDir(m)
		return ents, renamed(err, name)
	}
	if err := t.read("open", name); err != nil {
		return nil, err
	}
	t.unrecorded()
	ents, err := t.FS.ReadDir(name)
	return ents, t.missed("open", name, err)
}

func (t *trackFS) Readlink(name string) (string, error) {
	if f, ok := t.login.file(name); ok {
		err := syscall.EINVAL // not a symbolic link
		if f == nil {
			err = syscall.ENOENT
		}
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	if m, ok := t.login.home(name); ok {
		l, err := t.Readlink(m)
		return l, renamed(err, name)
	}
	if err := t.read("readlink", name); err != nil {
		return "", err
	}
	t.unrecorded()
	return t.FS.Readlink(name)
}

func (t *trackFS) RealPath(name string) (string, error) {
	if f, ok := t.login.file(name); ok && f != nil {
		return f.Path, nil
	}
	if m, ok := t.login.home(name); ok {
		p, err := t.RealPath(m)
		return p, renamed(err, name)
	}
	if err := t.read("realpath", name); err != nil {
		return "", err
	}
	t.unrecorded()
	p, err := t.FS.RealPath(name)
	return p, t.missed("realpath", name, err)
}

func (t *trackFS) Mkdir(name string, perm fs.FileMode) error {
	if err := t.write("mkdir", name); err != nil {
		return err
	}
	return t.done(t.FS.Mkdir(name, perm))
}

func (t *trackFS) Remove(name string) error {
	if err := t.write("remove", name); err != nil {
		return err
	}
	return t.done(t.FS.Remove(name))
}

func (t *trackFS) Rename(oldname, newname string) error {
	if err := t.write("rename", oldname); err != nil {
		return err
	}
	if err := t.write("rename", newname); err != nil {
		return err
	}
	return t.done(t.FS.Rename(oldname, newname))
}

func (t *trackFS) Symlink(target, link string) error {
	if err := t.write("symlink", link); err != nil {
		return err
	}
	return t.done(t.FS.Symlink(target, link))
}

func (t *trackFS) Link(oldname, newname string) error {
	if err := t.write("link", newname); err != nil {
		return err
	}
	return t.done(t.FS.Link(oldname, newname))
}

func (t *trackFS) Chmod(name string, mode fs.FileMode) error {
	if err := t.write("chmod", name); err != nil {
		return err
	}
	return t.done(t.FS.Chmod(name, mode))
}

func (t *trackFS) Chtimes(name string, atime, mtime time.Time) error {
	if err := t.write("utimes", name); err != nil {
		return err
	}
	return t.done(t.FS.Chtimes(name, atime, mtime))
}

func (t *trackFS) Truncate(name string, size int64) error {
	if err := t.write("truncate", name); err != nil {
		return err
	}
	return t.done(t.FS.Truncate(name, size))
}
