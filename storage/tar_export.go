package storage

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// ExportTar writes directory dir (an absolute sandbox path) of v to w as
// an uncompressed tar archive: entries named relative to dir ("a/b.txt",
// directories with a trailing slash), in sorted order, with permission
// bits, numeric owners and modification times (whole seconds). Symlinks
// are stored as symlinks, targets verbatim; a regular file with several
// links in the tree is stored once, the other names as hard links.
// FIFOs, sockets and devices are skipped. A file that shrinks while it is
// being written fails the export. A dir that is not a directory fails
// with rung.ErrInvalid. ctx is checked between entries.
func ExportTar(ctx context.Context, v FS, dir string, w io.Writer) error {
	dir = strings.TrimRight(dir, "/")
	if dir == "" {
		dir = "/"
	}
	fi, err := v.Stat(dir)
	if err != nil {
		return fmt.Errorf("tar export: %w", err)
	}
	if !fi.IsDir() {
		return rung.Errorf(rung.ErrInvalid, "tar export: %s is not a directory", dir)
	}
	ex := &exporter{v: v, tw: tar.NewWriter(w), links: map[[2]uint64]string{}}
	if err := ex.dir(ctx, dir, ""); err != nil {
		return err
	}
	if err := ex.tw.Close(); err != nil {
		return fmt.Errorf("tar export: %w", err)
	}
	return nil
}

type exporter struct {
	v     FS
	tw    *tar.Writer
	links map[[2]uint64]string // (dev, ino) of multiply-linked files -> first name
}

// dir writes the entries of sandbox directory p, archived under prefix.
func (ex *exporter) dir(ctx context.Context, p, prefix string) error {
	ents, err := ex.v.ReadDir(p)
	if err != nil {
		return fmt.Errorf("tar export: %w", err)
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		child := joinPath(p, e.Name())
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since listed
		}
		if err != nil {
			return fmt.Errorf("tar export: %w", err)
		}
		if err := ex.entry(ctx, child, prefix+e.Name(), fi); err != nil {
			return err
		}
	}
	return nil
}

func (ex *exporter) entry(ctx context.Context, p, name string, fi fs.FileInfo) error {
	hdr := &tar.Header{
		Name:    name,
		Mode:    tarMode(fi.Mode()),
		ModTime: fi.ModTime().Truncate(time.Second),
	}
	var st *unix.Stat_t
	if s, ok := fi.Sys().(*unix.Stat_t); ok {
		st = s
		hdr.Uid, hdr.Gid = int(s.Uid), int(s.Gid)
	}
	switch {
	case fi.IsDir():
		hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
		if err := ex.tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("tar export %s: %w", name, err)
		}
		return ex.dir(ctx, p, name+"/")
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := ex.v.Readlink(p)
		if err != nil {
			return fmt.Errorf("tar export: %w", err)
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		return ex.write(hdr, nil)
	case fi.Mode().IsRegular():
		if st != nil && st.Nlink > 1 {
			key := [2]uint64{st.Dev, st.Ino}
			if first, ok := ex.links[key]; ok {
				hdr.Typeflag, hdr.Linkname = tar.TypeLink, first
				return ex.write(hdr, nil)
			}
			ex.links[key] = name
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
		f, err := ex.v.OpenFile(p, os.O_RDONLY, 0)
		if err != nil {
			return fmt.Errorf("tar export: %w", err)
		}
		defer f.Close()
		return ex.write(hdr, f)
	default:
		return nil // FIFO, socket, device: not archived
	}
}

// write writes hdr and, for a regular file, exactly hdr.Size bytes of r.
func (ex *exporter) write(hdr *tar.Header, r io.Reader) error {
	if err := ex.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("tar export %s: %w", hdr.Name, err)
	}
	if r == nil {
		return nil
	}
	if _, err := io.CopyN(ex.tw, r, hdr.Size); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("tar export %s: file shrank while being archived", hdr.Name)
		}
		return fmt.Errorf("tar export %s: %w", hdr.Name, err)
	}
	return nil
}

func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}
