package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
	"rung.dev/rung"
)

// Layer tars are untrusted: every entry is created through openat2 with
// RESOLVE_IN_ROOT under the layer directory, so "../x", absolute names
// and symlinks planted by earlier entries cannot write outside it.
const resolveInRoot = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS

// unpack extracts the tar stream r into the empty directory dir, turning
// OCI whiteouts into overlayfs ones, and returns the digest of the
// uncompressed stream and the bytes of file content written.
func unpack(ctx context.Context, r io.Reader, dir string) (digest string, size int64, err error) {
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", 0, fmt.Errorf("open layer dir: %w", err)
	}
	defer unix.Close(root)
	h := sha256.New()
	tr := tar.NewReader(io.TeeReader(r, h))
	for n := 0; ; n++ {
		if n%256 == 0 && ctx.Err() != nil {
			return "", 0, ctx.Err()
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", 0, rung.Errorf(rung.ErrInvalid, "read layer tar: %v", err)
		}
		written, err := unpackEntry(root, hdr, tr)
		if err != nil {
			return "", 0, fmt.Errorf("layer entry %q: %w", hdr.Name, err)
		}
		size += written
	}
	// Trailing padding counts towards the digest, and reading to the end
	// is what makes gzip check its CRC.
	if _, err := io.Copy(h, r); err != nil {
		return "", 0, rung.Errorf(rung.ErrInvalid, "read layer tar: %v", err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), size, nil
}

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// zstdMaxWindow caps the window a zstd stream may ask the decoder to
// allocate. The library's default is 512 MiB per stream; 128 MiB still
// covers `zstd --long=27`, the largest window image tools write.
const zstdMaxWindow = 128 << 20

// decompress returns r's content, uncompressed when it starts with a
// gzip or zstd magic number. mediaType (possibly "") decides only when
// the content carries no magic number, so a layer whose media type ends
// in +zstd but holds gzip is still read. The caller closes the result
// (that stops the zstd decoder's goroutines); r itself is not closed.
func decompress(r *bufio.Reader, mediaType string) (io.ReadCloser, error) {
	magic, _ := r.Peek(4)
	kind := ""
	switch {
	case bytes.HasPrefix(magic, gzipMagic):
		kind = "gzip"
	case bytes.Equal(magic, zstdMagic) || isZstdSkippable(magic):
		kind = "zstd"
	case strings.HasSuffix(mediaType, "+gzip") || strings.HasSuffix(mediaType, ".gzip"):
		kind = "gzip"
	case strings.HasSuffix(mediaType, "+zstd"):
		kind = "zstd"
	}
	switch kind {
	case "gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, rung.Errorf(rung.ErrInvalid, "gzip: %v", err)
		}
		return zr, nil
	case "zstd":
		zr, err := zstd.NewReader(r, zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			return nil, rung.Errorf(rung.ErrInvalid, "zstd: %v", err)
		}
		return zr.IOReadCloser(), nil
	}
	return io.NopCloser(r), nil
}

// isZstdSkippable reports a zstd skippable frame (magic 0x184D2A50 to
// 0x184D2A5F, little endian), which may open a zstd stream.
func isZstdSkippable(magic []byte) bool {
	return len(magic) == 4 && magic[0]&0xf0 == 0x50 && bytes.Equal(magic[1:], []byte{0x2a, 0x4d, 0x18})
}

// unpackedSize returns the bytes of regular file content in the unpacked
// layer dir, counting each hard-linked file once: what [unpack] returned
// when it made dir, unless the layer tar wrote one name twice.
func unpackedSize(ctx context.Context, dir string) (int64, error) {
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	var size int64
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n++; n%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if !d.Type().IsRegular() {
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if st.Nlink > 1 {
			key := inode{uint64(st.Dev), st.Ino}
			if seen[key] {
				return nil
			}
			seen[key] = true
		}
		size += st.Size
		return nil
	})
	return size, err
}

func cleanName(name string) (string, error) {
	p := path.Clean("/" + name)
	if p == "/" {
		return "", nil
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", rung.Errorf(rung.ErrInvalid, "NUL in name")
	}
	return p[1:], nil
}

func unpackEntry(root int, hdr *tar.Header, r io.Reader) (int64, error) {
	name, err := cleanName(hdr.Name)
	if err != nil || name == "" {
		return 0, err
	}
	dir, base := path.Split(name)
	parent, err := mkdirAllAt(root, dir)
	if err != nil {
		return 0, err
	}
	defer unix.Close(parent)
	mode := uint32(hdr.Mode & 0o7777)

	// OCI whiteouts: ".wh..wh..opq" marks the directory opaque; ".wh.x"
	// deletes x from lower layers (a 0/0 character device for overlayfs).
	if base == ".wh..wh..opq" {
		// fsetxattr does not take O_PATH descriptors; the /proc link does.
		return 0, unix.Setxattr(fmt.Sprintf("/proc/self/fd/%d", parent), "trusted.overlay.opaque", []byte("y"), 0)
	}
	if target, ok := strings.CutPrefix(base, ".wh."); ok {
		unix.Unlinkat(parent, target, 0)
		return 0, unix.Mknodat(parent, target, unix.S_IFCHR, 0)
	}
	if hdr.Typeflag != tar.TypeDir {
		unix.Unlinkat(parent, base, 0) // later layers and entries replace earlier ones
	}
	var written int64
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := unix.Mkdirat(parent, base, mode); err != nil && err != unix.EEXIST {
			return 0, err
		}
	case tar.TypeReg, tar.TypeRegA:
		fd, err := unix.Openat(parent, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		if err != nil {
			return 0, err
		}
		written, err = copyToFD(fd, r)
		unix.Close(fd)
		if err != nil {
			return 0, err
		}
	case tar.TypeSymlink:
		if err := unix.Symlinkat(hdr.Linkname, parent, base); err != nil {
			return 0, err
		}
	case tar.TypeLink:
		target, err := cleanName(hdr.Linkname)
		if err != nil || target == "" {
			return 0, rung.Errorf(rung.ErrInvalid, "bad hard link target %q", hdr.Linkname)
		}
		tdir, tbase := path.Split(target)
		tfd, err := openDirAt(root, tdir)
		if err != nil {
			return 0, err
		}
		err = unix.Linkat(tfd, tbase, parent, base, 0)
		unix.Close(tfd)
		if err != nil {
			return 0, err
		}
	case tar.TypeFifo:
		if err := unix.Mknodat(parent, base, unix.S_IFIFO|mode, 0); err != nil {
			return 0, err
		}
	case tar.TypeChar, tar.TypeBlock:
		// Device nodes are not unpacked: a container's /dev is its own
		// tmpfs, and a node elsewhere could only be a way around it.
		return 0, nil
	default:
		return 0, nil // pax headers and the like
	}
	if hdr.Typeflag == tar.TypeLink {
		return written, nil
	}
	if err := unix.Fchownat(parent, base, hdr.Uid, hdr.Gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, err
	}
	if hdr.Typeflag != tar.TypeSymlink {
		// chown clears set-id bits, so the mode goes after it.
		if err := unix.Fchmodat(parent, base, mode, 0); err != nil {
			return 0, err
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(hdr.ModTime.UnixNano()), unix.NsecToTimespec(hdr.ModTime.UnixNano())}
	unix.UtimesNanoAt(parent, base, ts, unix.AT_SYMLINK_NOFOLLOW)
	return written, nil
}

func copyToFD(fd int, r io.Reader) (int64, error) {
	buf := make([]byte, 128<<10)
	var total int64
	for {
		n, err := r.Read(buf)
		for off := 0; off < n; {
			m, werr := unix.Write(fd, buf[off:n])
			if werr != nil {
				return total, werr
			}
			off += m
		}
		total += int64(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			// The layer stream is bad (truncated, corrupt compression),
			// not the host.
			return total, rung.Errorf(rung.ErrInvalid, "read layer tar: %v", err)
		}
	}
}

// openDirAt opens dir (relative, may be "") inside root.
func openDirAt(root int, dir string) (int, error) {
	if dir == "" {
		dir = "."
	}
	return unix.Openat2(root, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolveInRoot})
}

// mkdirAllAt makes dir and its parents inside root and returns it open.
func mkdirAllAt(root int, dir string) (int, error) {
	fd, err := openDirAt(root, dir)
	if err == nil || !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	cur, err := unix.Dup(root)
	if err != nil {
		return -1, err
	}
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		if part == "" {
			continue
		}
		if err := unix.Mkdirat(cur, part, 0o755); err != nil && err != unix.EEXIST {
			unix.Close(cur)
			return -1, err
		}
		next, err := unix.Openat2(cur, part, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS})
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}
