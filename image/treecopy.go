package image

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// maxTreeDepth bounds how deep [Store.CopyDir] descends: an imported
// image is untrusted, and each level holds a descriptor per layer.
const maxTreeDepth = 128

// CopyDir copies the directory dir (absolute, as a container of im sees
// it through its layers) into the existing directory dst, as `cp -a
// DIR/. DST` run as root in such a container would: every entry with its
// mode, owner and times, symbolic links as links, special files
// recreated; then dir's own mode, owner and times onto dst. Layers merge
// as overlayfs merges them (the topmost entry of a name wins, whiteouts
// delete, an opaque directory hides the layers below it). found is false,
// and nothing is copied, when im has no directory at dir: a whiteout, a
// file or a symbolic link there counts as none, as does one among its
// parents. Every lookup stays inside its layer and follows no symbolic
// link; dst is opened once, and everything is created under it by
// descriptor with O_EXCL/O_NOFOLLOW, so it must be a directory that no
// one else writes meanwhile (a new sandbox's workspace). Hard links are
// copied as separate files; extended attributes are not copied.
func (s *Store) CopyDir(im Image, dir, dst string) (found bool, err error) {
	src, err := s.mergedDir(im, dir)
	if err != nil || src == nil {
		return false, err
	}
	defer src.close()
	d, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return true, fmt.Errorf("copy %s of image %s: %w", dir, im.Name, err)
	}
	defer unix.Close(d)
	if err := copyMerged(src, d, 0); err != nil {
		return true, fmt.Errorf("copy %s of image %s: %w", dir, im.Name, err)
	}
	if err := setAttrs(d, "", src.st); err != nil {
		return true, fmt.Errorf("copy %s of image %s: %w", dir, im.Name, err)
	}
	return true, nil
}

// LinkDir makes dir (absolute, as in [Store.CopyDir]) a symbolic link to
// target in a container of im whose overlay upper directory is upper:
// it creates dir's parents in upper with the attributes the image gives
// them (so overlayfs merges them with the image's), then the link, owned
// by root. It does nothing when im has no directory at dir. upper must
// be a directory no container has mounted yet.
func (s *Store) LinkDir(im Image, upper, dir, target string) error {
	src, err := s.mergedDir(im, dir)
	if err != nil || src == nil {
		return err
	}
	src.close()
	names := strings.Split(strings.Trim(path.Clean(dir), "/"), "/")
	fd, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("link %s: %w", dir, err)
	}
	defer func() { unix.Close(fd) }()
	for i, name := range names[:len(names)-1] {
		parent, err := s.mergedDir(im, "/"+strings.Join(names[:i+1], "/"))
		if err != nil || parent == nil {
			return errors.Join(fmt.Errorf("link %s: its parent changed", dir), err)
		}
		st := parent.st
		parent.close()
		if err := unix.Mkdirat(fd, name, 0o700); err != nil && err != unix.EEXIST {
			return fmt.Errorf("link %s: %w", dir, err)
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("link %s: %w", dir, err)
		}
		unix.Close(fd)
		fd = next
		if err := setAttrs(fd, "", st); err != nil {
			return fmt.Errorf("link %s: %w", dir, err)
		}
	}
	if err := unix.Symlinkat(target, fd, names[len(names)-1]); err != nil {
		return fmt.Errorf("link %s: %w", dir, err)
	}
	return nil
}

// UpperLink returns the target of the symbolic link at name (a clean
// relative path: "home/user") when the overlay upper directory upper of
// a container of im holds one there, as [Store.LinkDir] makes it: the
// container sees that link whatever im's layers hold, so they are not
// read. It returns "" when upper holds no symbolic link at name: nothing,
// a whiteout, another kind of file, or a parent that is not a directory
// (the container then has no such path). A parent in upper that is a
// symbolic link is an error wrapping [ErrMerged] (an opaque parent is
// not: it hides the layers' entries, not upper's); a name that is not a
// clean relative path is
// rung.ErrInvalid. Every lookup stays inside upper and follows no
// symbolic link. It is safe for concurrent use.
func (s *Store) UpperLink(im Image, upper, name string) (target string, err error) {
	if name == "" || name == "." || path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
		return "", rung.Errorf(rung.ErrInvalid, "link %q in an upper directory: want a clean relative path", name)
	}
	root, err := unix.Open(upper, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("link /%s of image %s: %w", name, im.Name, err)
	}
	defer unix.Close(root)
	// One lookup: no symbolic link among the parents (ELOOP), the link
	// itself opened as it is. An opaque parent does not matter: it hides
	// the layers' entries, not the upper directory's own.
	link, err := unix.Openat2(root, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: resolveInRoot | unix.RESOLVE_NO_SYMLINKS})
	switch err {
	case nil:
	case unix.ENOENT, unix.ENOTDIR:
		return "", nil // no such path, or a whiteout or file on the way
	case unix.ELOOP:
		return "", fmt.Errorf("link /%s of image %s: a symbolic link on the way in the upper directory: %w", name, im.Name, ErrMerged)
	default:
		return "", fmt.Errorf("link /%s of image %s: %w", name, im.Name, err)
	}
	defer unix.Close(link)
	var st unix.Stat_t
	if err := unix.Fstat(link, &st); err != nil {
		return "", fmt.Errorf("link /%s of image %s: %w", name, im.Name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return "", nil
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(link, "", buf)
	if err != nil {
		return "", fmt.Errorf("link /%s of image %s: %w", name, im.Name, err)
	}
	return string(buf[:n]), nil
}

// merged is one directory of an image's merged root: the descriptors of
// the layers that contribute entries to it, topmost first, and the
// attributes it shows (the topmost one's).
type merged struct {
	fds []int
	st  unix.Stat_t
}

func (m *merged) close() {
	for _, fd := range m.fds {
		unix.Close(fd)
	}
}

// mergedDir looks dir up in im's merged root: nil when it is not a
// directory there.
func (s *Store) mergedDir(im Image, dir string) (*merged, error) {
	if !path.IsAbs(dir) || path.Clean(dir) != dir {
		return nil, rung.Errorf(rung.ErrInvalid, "directory %q of an image: want a clean absolute path", dir)
	}
	cur := &merged{}
	for i, l := range s.LowerDirs(im) {
		fd, err := unix.Open(l, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			cur.close()
			return nil, err
		}
		if i == 0 {
			if err := unix.Fstat(fd, &cur.st); err != nil {
				unix.Close(fd)
				cur.close()
				return nil, err
			}
		}
		cur.fds = append(cur.fds, fd)
	}
	if dir == "/" {
		return cur, nil
	}
	for _, name := range strings.Split(dir[1:], "/") {
		next, err := cur.child(name)
		cur.close()
		if err != nil || next == nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// child is the directory name of m as overlayfs merges it, nil when it is
// no directory there.
func (m *merged) child(name string) (*merged, error) {
	next := &merged{}
	for _, fd := range m.fds {
		var st unix.Stat_t
		err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			next.close()
			return nil, err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			break // a whiteout, or a non-directory, hides what is below
		}
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			next.close()
			return nil, err
		}
		if len(next.fds) == 0 {
			next.st = st
		}
		next.fds = append(next.fds, cfd)
		if opaque(cfd) {
			break
		}
	}
	if len(next.fds) == 0 {
		return nil, nil
	}
	return next, nil
}

// opaque reports whether the layer directory fd hides the layers below.
func opaque(fd int) bool {
	var b [1]byte
	n, err := unix.Fgetxattr(fd, "trusted.overlay.opaque", b[:])
	return err == nil && n == 1 && b[0] == 'y'
}

// whiteout reports whether st is overlayfs's mark of a deleted name.
func whiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// copyMerged copies the entries of src into the directory dst.
func copyMerged(src *merged, dst, depth int) error {
	if depth >= maxTreeDepth {
		return rung.Errorf(rung.ErrLimit, "directory tree deeper than %d", maxTreeDepth)
	}
	seen := map[string]bool{}
	for i, fd := range src.fds {
		names, err := readNames(fd, -1)
		if err != nil {
			return err
		}
		for _, name := range names {
			if seen[name] {
				continue
			}
			seen[name] = true
			if err := copyEntry(src.fds[i:], name, dst, depth); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

// copyEntry copies name, as the first of layers (the topmost layer
// directory that has it, then those below it) holds it, into dst.
func copyEntry(layers []int, name string, dst, depth int) error {
	fd := layers[0]
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		// Merged with the same directory of the layers below this one.
		sub, err := (&merged{fds: layers}).child(name)
		if err != nil || sub == nil {
			return errors.Join(errors.New("vanished"), err)
		}
		defer sub.close()
		if err := unix.Mkdirat(dst, name, 0o700); err != nil {
			return err
		}
		d, err := unix.Openat(dst, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(d)
		if err := copyMerged(sub, d, depth+1); err != nil {
			return err
		}
		return setAttrs(d, "", sub.st)
	case unix.S_IFREG:
		in, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		r := os.NewFile(uintptr(in), name)
		defer r.Close()
		out, err := unix.Openat(dst, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		w := os.NewFile(uintptr(out), name)
		defer w.Close()
		if _, err := io.Copy(w, r); err != nil {
			return err
		}
		return setAttrs(out, "", st)
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(fd, name, buf)
		if err != nil {
			return err
		}
		if err := unix.Symlinkat(string(buf[:n]), dst, name); err != nil {
			return err
		}
		return setAttrs(dst, name, st)
	default:
		if whiteout(&st) {
			return nil // deleted in this layer
		}
		// FIFOs, sockets and devices, as cp -a makes them.
		if err := unix.Mknodat(dst, name, st.Mode&(unix.S_IFMT|0o7777), int(st.Rdev)); err != nil {
			return err
		}
		return setAttrs(dst, name, st)
	}
}

// readNames lists the layer directory fd (opened for reading) from its
// start: at most n names when n > 0, all of them otherwise.
func readNames(fd, n int) ([]string, error) {
	d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(d), ".")
	defer f.Close()
	names, err := f.Readdirnames(n)
	if err == io.EOF { // n > 0 and an empty directory
		err = nil
	}
	return names, err
}

// setAttrs gives directory fd itself (name "") or its entry name st's
// owner, then mode (chown clears set-id bits), then times. A named entry
// is one just made in a directory no one else writes, so naming it is
// safe; a symbolic link keeps its mode.
func setAttrs(fd int, name string, st unix.Stat_t) error {
	if err := unix.Fchownat(fd, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH); err != nil {
		return err
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	if name == "" {
		if err := unix.Fchmod(fd, st.Mode&0o7777); err != nil {
			return err
		}
		return unix.UtimesNanoAt(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), ts, 0)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		if err := unix.Fchmodat(fd, name, st.Mode&0o7777, 0); err != nil {
			return err
		}
	}
	return unix.UtimesNanoAt(fd, name, ts, unix.AT_SYMLINK_NOFOLLOW)
}
