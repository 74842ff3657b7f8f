package image

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/internal/passwd"
)

// maxAccountFile bounds what is read of an image's /etc/passwd or
// /etc/group: far above any real one, and an imported image is untrusted.
const maxAccountFile = 4 << 20

// accounts is an image's parsed /etc/passwd and /etc/group.
type accounts struct {
	users  []passwd.Entry
	groups []passwd.Group
}

// maxCachedAccounts bounds the images whose accounts are kept
// (Store.accountCache).
const maxCachedAccounts = 64

// Account resolves user, in an OCI image's User forms ("name", "uid",
// "name:group", "uid:gid"), against im's /etc/passwd and /etc/group as
// its layers hold them, and returns who commands run as. "" means "root".
// A name the files do not list is rung.ErrInvalid naming it; root is
// always uid 0, even in an image without the files. It is safe for
// concurrent use.
func (s *Store) Account(im Image, user string) (passwd.Account, error) {
	if user == "" {
		user = "root"
	}
	acc, err := s.accounts(im)
	if err != nil {
		return passwd.Account{}, err
	}
	a, err := passwd.Lookup(acc.users, acc.groups, user)
	if err == nil {
		return a, nil
	}
	if user == "root" {
		return passwd.Account{Name: "root", Home: "/root"}, nil
	}
	if errors.Is(err, passwd.ErrUnknown) {
		return passwd.Account{}, rung.Errorf(rung.ErrInvalid, "unknown user %q: image %s has no such user or group in /etc/passwd and /etc/group", user, im.Name)
	}
	return passwd.Account{}, rung.Errorf(rung.ErrInvalid, "invalid user %q: %v", user, err)
}

func (s *Store) accounts(im Image) (*accounts, error) {
	if acc, ok := s.accountCache.get(im.Digest); ok {
		return acc, nil
	}
	pw, err := s.layerFile(im, "etc/passwd")
	if err != nil {
		return nil, fmt.Errorf("image %s: read /etc/passwd: %w", im.Name, err)
	}
	gr, err := s.layerFile(im, "etc/group")
	if err != nil {
		return nil, fmt.Errorf("image %s: read /etc/group: %w", im.Name, err)
	}
	acc := &accounts{users: passwd.ParsePasswd(pw), groups: passwd.ParseGroup(gr)}
	return s.accountCache.put(im.Digest, acc, 0), nil
}

// layerFile returns the regular file name (relative, e.g. "etc/passwd")
// as im's root filesystem shows it: from the topmost layer that has it,
// nil when none has or a whiteout hides it. Every lookup stays inside its
// layer (openat2 with RESOLVE_IN_ROOT), so a symlink an imported image
// planted there cannot reach a host file, and only a regular file is
// opened. A symlink to a file of a lower layer is not followed there:
// account files are not symlinks in practice.
func (s *Store) layerFile(im Image, name string) ([]byte, error) {
	for _, dir := range s.LowerDirs(im) {
		b, found, err := readInRoot(dir, name)
		if err != nil || found {
			return b, err
		}
	}
	return nil, nil
}

// readInRoot reads name inside dir. found is false when dir has no such
// name; a whiteout, or anything but a regular file, is found and empty:
// it hides lower layers' file.
func readInRoot(dir, name string) (b []byte, found bool, err error) {
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(root)
	// The entry itself first: if this layer has one by that name, of any
	// kind, it hides lower layers' file, as overlayfs merges them.
	fd, err := unix.Openat2(root, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: resolveInRoot})
	switch err {
	case nil:
	case unix.ENOENT, unix.ENOTDIR:
		return nil, false, nil
	case unix.ELOOP:
		return nil, true, nil // a loop among its parents: nothing to read
	default:
		return nil, false, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, false, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		// Followed inside this layer only; dangling or looping, it
		// holds nothing.
		lfd, err := unix.Openat2(root, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveInRoot})
		if err != nil {
			return nil, true, nil
		}
		defer unix.Close(lfd)
		if err := unix.Fstat(lfd, &st); err != nil {
			return nil, true, err
		}
		fd = lfd
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		// A whiteout (deleted in this layer), or something no account
		// file can be.
		return nil, true, nil
	}
	// Re-open exactly the file resolved above for reading.
	f, err := os.Open("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return nil, true, err
	}
	defer f.Close()
	b, err = io.ReadAll(io.LimitReader(f, maxAccountFile+1))
	if err == nil && len(b) > maxAccountFile {
		err = fmt.Errorf("/%s is larger than %d MiB", name, maxAccountFile>>20)
	}
	return b, true, err
}

// AccountFile returns /etc/passwd or /etc/group (name "etc/passwd" or
// "etc/group") as a running container of im sees it, upper being its
// overlay's upper directory: the upper directory's copy when the
// container changed the file, nil when it removed it, else the image's.
// What only the merged mount could answer (a symlink on the way in the
// upper directory, or an opaque /etc there) is an error wrapping
// [ErrMerged], and any other name is rung.ErrInvalid. Every lookup stays
// inside its directory, as in layerFile. It is safe for concurrent use.
func (s *Store) AccountFile(im Image, upper, name string) ([]byte, error) {
	if name != "etc/passwd" && name != "etc/group" {
		return nil, rung.Errorf(rung.ErrInvalid, "read /%s of an image: not an account file", name)
	}
	if upper != "" {
		b, found, err := readUpper(upper, name)
		if err != nil || found {
			return b, err
		}
	}
	acc, err := s.layerFile(im, name)
	if err != nil {
		return nil, fmt.Errorf("image %s: read /%s: %w", im.Name, name, err)
	}
	return acc, nil
}

// ErrMerged is what [Store.AccountFile], [Store.LoginFiles] and
// [Store.UpperLink] cannot tell from an overlay's upper directory
// without the container's merged mount (a symbolic link or a redirected
// directory on the way, a file whose data is below): the caller asks the
// container instead.
var ErrMerged = errors.New("needs the container's merged root")

// readUpper reads etc/NAME of an overlay's upper directory: found is
// false when the upper directory does not have it (the lower layers'
// file shows). /etc and the file must be what they seem: a directory that
// is not opaque, and a regular file or a whiteout.
func readUpper(upper, name string) (b []byte, found bool, err error) {
	root, err := unix.Open(upper, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(root)
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: resolveInRoot | unix.RESOLVE_NO_SYMLINKS}
	etc, err := unix.Openat2(root, "etc", how)
	switch err {
	case nil:
	case unix.ENOENT:
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("upper /etc: %w", ErrMerged)
	}
	defer unix.Close(etc)
	var st unix.Stat_t
	if err := unix.Fstat(etc, &st); err != nil {
		return nil, false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, false, fmt.Errorf("upper /etc is not a directory: %w", ErrMerged)
	}
	if v, err := fgetxattrPath(etc, "trusted.overlay.opaque"); err == nil && v == "y" {
		return nil, false, fmt.Errorf("upper /etc is opaque: %w", ErrMerged)
	}
	fd, err := unix.Openat2(etc, name[len("etc/"):], how)
	switch err {
	case nil:
	case unix.ENOENT:
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("upper /%s: %w", name, ErrMerged)
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, false, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFCHR:
		if st.Rdev == 0 {
			return nil, true, nil // a whiteout: the container removed it
		}
		return nil, false, fmt.Errorf("upper /%s is a device: %w", name, ErrMerged)
	default:
		return nil, false, fmt.Errorf("upper /%s is not a regular file: %w", name, ErrMerged)
	}
	f, err := os.Open("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	b, err = io.ReadAll(io.LimitReader(f, maxAccountFile+1))
	if err == nil && len(b) > maxAccountFile {
		err = fmt.Errorf("/%s is larger than %d MiB", name, maxAccountFile>>20)
	}
	return b, true, err
}

// fgetxattrPath reads attribute attr of the file an O_PATH descriptor
// refers to (fgetxattr does not take O_PATH descriptors; getxattr
// follows the descriptor's /proc link to it).
func fgetxattrPath(fd int, attr string) (string, error) {
	buf := make([]byte, 16)
	n, err := unix.Getxattr("/proc/self/fd/"+strconv.Itoa(fd), attr, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
