package storage

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"rung.dev/rung"
)

// Default limits of [ImportTar].
const (
	DefaultTarMaxBytes   = 4 << 30 // bytes of file contents
	DefaultTarMaxEntries = 1 << 20
)

// TarOptions bound and adjust [ImportTar]. The zero value is ready to use.
type TarOptions struct {
	// MaxBytes bounds the total size of the regular files' contents;
	// 0 means DefaultTarMaxBytes. Past it the import fails with a
	// *rung.LimitError ("tar_bytes", TooLarge).
	MaxBytes int64
	// MaxEntries bounds the number of entries; 0 means
	// DefaultTarMaxEntries. Past it: *rung.LimitError ("tar_entries").
	MaxEntries int
	// SkipSpecial skips FIFO and device entries instead of failing.
	SkipSpecial bool
}

// ImportTar extracts the tar archive r (gzip-compressed or not: detected
// from its first bytes) into directory dir (an absolute sandbox path,
// created if missing) of v. It restores regular files, directories,
// symlinks (targets verbatim) and hard links, with their permission bits
// and modification times; setuid and setgid bits are dropped, owners are
// not restored. An existing file or symlink at an entry's name is
// replaced; an existing directory is kept.
//
// Every entry must stay inside dir: an absolute name, a ".." component,
// a hard link to outside dir, or a name whose parent is a symlink (a link
// planted by the archive or already present, written through) fails with
// rung.ErrInvalid naming the entry. So do FIFO and device entries unless
// opts.SkipSpecial, and unknown entry types. Limits fail with a
// *rung.LimitError. On error, entries extracted so far are left in place.
// ctx is checked between entries and during large files. It returns how
// many entries the archive held (a "./" entry included), as far as it got.
func ImportTar(ctx context.Context, v FS, dir string, r io.Reader, opts TarOptions) (int, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultTarMaxBytes
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultTarMaxEntries
	}
	br := bufio.NewReaderSize(r, 64<<10)
	src := io.Reader(br)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return 0, rung.Errorf(rung.ErrInvalid, "tar import: bad gzip stream: %v", err)
		}
		defer zr.Close()
		src = zr
	}
	im := &importer{v: v, dir: strings.TrimRight(dir, "/"), opts: opts}
	// The target may be reached through symlinks: that is the caller's
	// choice, not the archive's.
	if im.dir == "" {
		// dir is "/": names become "/name".
	} else if err := mkdirAll(v, im.dir, 0o755); err != nil {
		return 0, fmt.Errorf("tar import: %w", err)
	}
	im.dirs = map[string]bool{im.dir: true}
	tr := tar.NewReader(src)
	n := 0
	for ; ; n++ {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, rung.Errorf(rung.ErrInvalid, "tar import: malformed archive: %v", err)
		}
		if n >= opts.MaxEntries {
			return n, &rung.LimitError{Limit: "tar_entries", Max: int64(opts.MaxEntries), TooLarge: true}
		}
		if err := im.entry(ctx, hdr, tr); err != nil {
			return n, err
		}
	}
	return n, im.finish()
}

type importer struct {
	v     FS
	dir   string // target directory, absolute, no trailing slash
	opts  TarOptions
	bytes int64           // file content written so far
	dirs  map[string]bool // sandbox paths known to be real directories
	times []dirTime       // directory mtimes, set at the end
}

type dirTime struct {
	path  string
	mode  fs.FileMode
	mtime time.Time
}

// name validates an archive name and returns its sandbox path.
func (im *importer) name(what, n string) (string, error) {
	clean := strings.TrimPrefix(n, "./")
	for strings.HasPrefix(clean, "./") {
		clean = strings.TrimPrefix(clean, "./")
	}
	clean = strings.TrimRight(clean, "/")
	switch {
	case strings.HasPrefix(n, "/"):
		return "", rung.Errorf(rung.ErrInvalid, "tar entry %q: %s is an absolute path", n, what)
	case strings.IndexByte(n, 0) >= 0:
		return "", rung.Errorf(rung.ErrInvalid, "tar entry %q: %s has a NUL byte", n, what)
	case clean == "" || clean == ".":
		return im.dir, nil
	}
	if slices.Contains(strings.Split(clean, "/"), "..") {
		return "", rung.Errorf(rung.ErrInvalid, "tar entry %q: %s has a \"..\" component", n, what)
	}
	return im.dir + "/" + clean, nil
}

func (im *importer) entry(ctx context.Context, hdr *tar.Header, tr io.Reader) error {
	p, err := im.name("name", hdr.Name)
	if err != nil {
		return err
	}
	if p == im.dir {
		return nil // the archive's "./" entry
	}
	parent := p[:strings.LastIndexByte(p, '/')]
	if err := im.mkdirs(ctx, parent); err != nil {
		return wrapEntry(hdr.Name, err)
	}
	mode := fs.FileMode(hdr.Mode).Perm()
	if hdr.Mode&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := im.mkdir(p); err != nil {
			return wrapEntry(hdr.Name, err)
		}
		im.times = append(im.times, dirTime{p, mode, hdr.ModTime})
		return nil
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old archives still use TypeRegA
		return im.file(ctx, hdr, p, mode, tr)
	case tar.TypeSymlink:
		if err := im.replace(p); err != nil {
			return wrapEntry(hdr.Name, err)
		}
		return wrapEntry(hdr.Name, im.v.Symlink(hdr.Linkname, p))
	case tar.TypeLink:
		target, err := im.name("hard link target", hdr.Linkname)
		if err != nil {
			return err
		}
		if err := im.checkDirs(target[:strings.LastIndexByte(target, '/')]); err != nil {
			return wrapEntry(hdr.Name, err)
		}
		if err := im.replace(p); err != nil {
			return wrapEntry(hdr.Name, err)
		}
		return wrapEntry(hdr.Name, im.v.Link(target, p))
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		if im.opts.SkipSpecial {
			return nil
		}
		return rung.Errorf(rung.ErrInvalid, "tar entry %q: device and FIFO entries are not allowed", hdr.Name)
	default:
		return rung.Errorf(rung.ErrInvalid, "tar entry %q: unsupported entry type %q", hdr.Name, hdr.Typeflag)
	}
}

func (im *importer) file(ctx context.Context, hdr *tar.Header, p string, mode fs.FileMode, tr io.Reader) error {
	if hdr.Size < 0 || im.bytes+hdr.Size > im.opts.MaxBytes {
		return &rung.LimitError{Limit: "tar_bytes", Max: im.opts.MaxBytes, TooLarge: true}
	}
	if err := im.replace(p); err != nil {
		return wrapEntry(hdr.Name, err)
	}
	// O_EXCL: the name was just cleared, so this never opens, or writes
	// through, something else.
	f, err := im.v.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return wrapEntry(hdr.Name, err)
	}
	_, err = io.CopyN(f, &ctxReader{ctx: ctx, r: tr}, hdr.Size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return rung.Errorf(rung.ErrInvalid, "tar entry %q: archive truncated", hdr.Name)
		}
		return wrapEntry(hdr.Name, err)
	}
	im.bytes += hdr.Size
	if err := im.v.Chmod(p, mode); err != nil {
		return wrapEntry(hdr.Name, err)
	}
	return wrapEntry(hdr.Name, im.v.Chtimes(p, hdr.AccessTime, hdr.ModTime))
}

// mkdir makes p a directory, keeping an existing one. Its mode is set
// at the end, so that a read-only directory can still be filled.
func (im *importer) mkdir(p string) error {
	err := im.v.Mkdir(p, 0o755)
	if errors.Is(err, fs.ErrExist) {
		fi, lerr := im.v.Lstat(p)
		if lerr == nil && fi.IsDir() {
			err = nil
		} else if err = im.replace(p); err == nil {
			err = im.v.Mkdir(p, 0o755)
		}
	}
	if err == nil {
		im.dirs[p] = true
	}
	return err
}

// mkdirs makes sure every component of p below dir is a real directory,
// creating the missing ones; a symlink among them is refused.
func (im *importer) mkdirs(ctx context.Context, p string) error {
	if im.dirs[p] {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Parents first: a symlink is caught at its own level, before
	// anything is looked up through it.
	if err := im.mkdirs(ctx, p[:strings.LastIndexByte(p, '/')]); err != nil {
		return err
	}
	fi, err := im.v.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		err = im.v.Mkdir(p, 0o755)
		if errors.Is(err, fs.ErrExist) {
			fi, err = im.v.Lstat(p)
		}
	}
	if err != nil {
		return err
	}
	if fi != nil && !fi.IsDir() {
		return im.notDir(p, fi)
	}
	im.dirs[p] = true
	return nil
}

// checkDirs refuses p unless it and its parents below dir are real
// directories. It creates nothing.
func (im *importer) checkDirs(p string) error {
	for q := p; !im.dirs[q]; q = q[:strings.LastIndexByte(q, '/')] {
		fi, err := im.v.Lstat(q)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return im.notDir(q, fi)
		}
	}
	return nil
}

func (im *importer) notDir(p string, fi fs.FileInfo) error {
	rel := p[len(im.dir)+1:]
	if fi.Mode()&fs.ModeSymlink != 0 {
		return rung.Errorf(rung.ErrInvalid, "%s is a symlink; writing through it is not allowed", rel)
	}
	return rung.Errorf(rung.ErrInvalid, "%s is not a directory", rel)
}

// replace removes a non-directory at p so that a new entry can take it.
func (im *importer) replace(p string) error {
	err := im.v.Remove(p)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		if im.dirs[p] { // it was an empty directory
			im.forget(p)
		}
		return nil
	}
	return err
}

// forget drops p and everything below it from the known directories.
func (im *importer) forget(p string) {
	for d := range im.dirs {
		if d == p || strings.HasPrefix(d, p+"/") {
			delete(im.dirs, d)
		}
	}
}

// finish sets directory modes and mtimes, deepest first, once their
// contents are written.
func (im *importer) finish() error {
	for i := len(im.times) - 1; i >= 0; i-- {
		d := im.times[i]
		if err := im.v.Chmod(d.path, d.mode); err != nil {
			return fmt.Errorf("tar import: %w", err)
		}
		if err := im.v.Chtimes(d.path, time.Time{}, d.mtime); err != nil {
			return fmt.Errorf("tar import: %w", err)
		}
	}
	return nil
}

func wrapEntry(name string, err error) error {
	if err == nil {
		return nil
	}
	var le *rung.LimitError
	if errors.As(err, &le) || errors.Is(err, rung.ErrInvalid) {
		return err
	}
	return fmt.Errorf("tar entry %q: %w", name, err)
}

// ctxReader checks ctx every read, so a huge entry can be abandoned.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}
