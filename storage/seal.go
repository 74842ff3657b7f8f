package storage

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// A sandbox's fs/ directory holds exactly workspace and tmp, the two
// directories both tiers share, and is sealed with the immutable flag:
// nothing can be created, renamed or removed in it, by root either. The
// isolate tier's view is rooted at fs/, so without the seal a write to /x
// in-process landed in fs/x, where neither the container (whose / is its
// overlay) nor the file API sees it (issue 10, finding 7); and fs/workspace
// and fs/tmp are the paths the runtime bind-mounts as root on the host, so
// they must never become anything but those directories. The seal covers
// fs/ itself only; what is inside workspace and tmp is unaffected. A btrfs
// snapshot or fork keeps the flag, and deleting a subvolume does not look
// at it.

// fsImmutable is FS_IMMUTABLE_FL (include/uapi/linux/fs.h).
const fsImmutable = 0x00000010

// seal sets the immutable flag on the directory open at fd, if it is not
// set yet.
func seal(fd int) error {
	fl, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return fmt.Errorf("seal: get flags: %w", err)
	}
	if fl&fsImmutable != 0 {
		return nil
	}
	if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, fl|fsImmutable); err != nil {
		return fmt.Errorf("seal: set flags: %w", err)
	}
	return nil
}

// sealAt seals directory name of dirfd (see seal).
func sealAt(dirfd int, name string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("seal %s: %w", name, err)
	}
	defer unix.Close(fd)
	return seal(fd)
}
