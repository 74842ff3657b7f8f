package storage

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// IOFS returns an io/fs view of directory dir (an absolute sandbox path,
// "/workspace" for instance) of v. Names are fs.ValidPath names relative
// to dir; an invalid name fails with fs.ErrInvalid. The result implements
// fs.FS, fs.StatFS, fs.ReadDirFS, fs.ReadFileFS and fs.ReadLinkFS, and
// passes testing/fstest.TestFS.
//
// Symlinks resolve as everywhere in v: inside the sandbox's view, so a
// link may lead out of dir to another place in the view (never out of
// the view). Errors are *fs.PathError naming the fs.FS name, not the
// sandbox path. The result is safe for concurrent use if v is.
func IOFS(v FS, dir string) fs.FS {
	dir = strings.TrimRight(dir, "/")
	if dir == "" {
		dir = "/"
	}
	return &ioFS{v: v, dir: dir}
}

type ioFS struct {
	v   FS
	dir string // absolute sandbox path without a trailing slash, or "/"
}

var (
	_ fs.StatFS     = (*ioFS)(nil)
	_ fs.ReadDirFS  = (*ioFS)(nil)
	_ fs.ReadFileFS = (*ioFS)(nil)
	_ fs.ReadLinkFS = (*ioFS)(nil)
)

// full maps an fs.FS name to a sandbox path.
func (f *ioFS) full(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return f.dir, nil
	}
	if f.dir == "/" {
		return "/" + name, nil
	}
	return f.dir + "/" + name, nil
}

// fsErr renames the path in err to the fs.FS name.
func fsErr(op, name string, err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return &fs.PathError{Op: op, Path: name, Err: pe.Err}
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Open implements fs.FS. It opens directories and regular files only; a
// special file fails with [ErrSpecialFile].
func (f *ioFS) Open(name string) (fs.File, error) {
	p, err := f.full("open", name)
	if err != nil {
		return nil, err
	}
	file, err := f.v.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return nil, fsErr("open", name, err)
	}
	return &ioFile{File: file, name: name}, nil
}

// Stat implements fs.StatFS.
func (f *ioFS) Stat(name string) (fs.FileInfo, error) {
	p, err := f.full("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := f.v.Stat(p)
	if err != nil {
		return nil, fsErr("stat", name, err)
	}
	return renamed(fi, path.Base(name)), nil
}

// Lstat implements fs.ReadLinkFS.
func (f *ioFS) Lstat(name string) (fs.FileInfo, error) {
	p, err := f.full("lstat", name)
	if err != nil {
		return nil, err
	}
	fi, err := f.v.Lstat(p)
	if err != nil {
		return nil, fsErr("lstat", name, err)
	}
	return renamed(fi, path.Base(name)), nil
}

// ReadLink implements fs.ReadLinkFS. The target is returned verbatim; an
// absolute target is a sandbox path, not a name in this fs.FS.
func (f *ioFS) ReadLink(name string) (string, error) {
	p, err := f.full("readlink", name)
	if err != nil {
		return "", err
	}
	t, err := f.v.Readlink(p)
	if err != nil {
		return "", fsErr("readlink", name, err)
	}
	return t, nil
}

// ReadDir implements fs.ReadDirFS: entries sorted by name.
func (f *ioFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := f.full("readdir", name)
	if err != nil {
		return nil, err
	}
	ents, err := f.v.ReadDir(p)
	if err != nil {
		return ents, fsErr("readdir", name, err)
	}
	return ents, nil
}

// ReadFile implements fs.ReadFileFS, through v's own ReadFile when it
// has one (as [Root] does).
func (f *ioFS) ReadFile(name string) ([]byte, error) {
	p, err := f.full("readfile", name)
	if err != nil {
		return nil, err
	}
	if rf, ok := f.v.(interface{ ReadFile(string) ([]byte, error) }); ok {
		b, err := rf.ReadFile(p)
		if err != nil {
			return nil, fsErr("readfile", name, err)
		}
		return b, nil
	}
	file, err := f.v.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return nil, fsErr("readfile", name, err)
	}
	defer file.Close()
	b, err := io.ReadAll(file)
	if err != nil {
		return nil, fsErr("readfile", name, err)
	}
	return b, nil
}

// ioFile is an open fs.File; Stat names it as fs.FS does (path.Base of
// the name it was opened with, "." for the root).
type ioFile struct {
	File
	name string
}

func (f *ioFile) Stat() (fs.FileInfo, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return nil, fsErr("stat", f.name, err)
	}
	return renamed(fi, path.Base(f.name)), nil
}

func (f *ioFile) ReadDir(n int) ([]fs.DirEntry, error) {
	ents, err := f.File.ReadDir(n)
	if err != nil && err != io.EOF {
		err = fsErr("readdir", f.name, err)
	}
	return ents, err
}

// renamed returns fi reporting name as its Name.
func renamed(fi fs.FileInfo, name string) fs.FileInfo {
	if fi.Name() == name {
		return fi
	}
	if info, ok := fi.(*fileInfo); ok {
		c := *info
		c.name = name
		return &c
	}
	return namedInfo{fi, name}
}

type namedInfo struct {
	fs.FileInfo
	name string
}

func (n namedInfo) Name() string { return n.name }
