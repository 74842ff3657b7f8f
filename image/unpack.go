package image

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

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
	io.Copy(h, r) // trailing padding counts towards the digest
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), size, nil
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
			return total, err
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
