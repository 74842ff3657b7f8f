package storagetest

import (
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// volArgsV2 is struct btrfs_ioctl_vol_args_v2 from
// include/uapi/linux/btrfs.h.
type volArgsV2 struct {
	fd      int64
	transid uint64
	flags   uint64
	unused  [4]uint64
	name    [4040]byte
}

// iocSubvolCreateV2 is BTRFS_IOC_SUBVOL_CREATE_V2: _IOW(0x94, 24, struct
// btrfs_ioctl_vol_args_v2).
const iocSubvolCreateV2 = 1<<30 | uint(unsafe.Sizeof(volArgsV2{}))<<16 | 0x94<<8 | 24

// NestedSubvolume creates an empty btrfs subvolume at path, whose parent
// directory must exist: what a process inside a sandbox can do with one
// unprivileged ioctl when nothing refuses it. It calls the ioctl itself, as
// such a process would, rather than the btrfs tool.
func NestedSubvolume(t testing.TB, path string) {
	t.Helper()
	dir, err := unix.Open(filepath.Dir(path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("nested subvolume %s: %v", path, err)
	}
	defer unix.Close(dir)
	var a volArgsV2
	copy(a.name[:len(a.name)-1], filepath.Base(path))
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(dir), uintptr(iocSubvolCreateV2), uintptr(unsafe.Pointer(&a))); errno != 0 {
		t.Fatalf("nested subvolume %s: BTRFS_IOC_SUBVOL_CREATE_V2: %v", path, errno)
	}
}

// fsImmutableFl is FS_IMMUTABLE_FL from include/uapi/linux/fs.h.
const fsImmutableFl = 0x10

// Undeletable makes the subvolume at path impossible to delete until the
// returned function (or the end of the test) undoes it: it sets the
// immutable attribute on the subvolume's root directory (chattr +i), and
// BTRFS_IOC_SNAP_DESTROY then fails with EPERM, as it does for a
// subvolume an operator protects or one the kernel cannot remove. (A mount
// inside the subvolume does not do it: on Linux 6.18 the delete detaches
// such mounts and succeeds.) Undoing it twice is harmless, and so is
// undoing it after the pool has gone.
func Undeletable(t testing.TB, path string) (undo func()) {
	t.Helper()
	if err := setImmutable(path, true); err != nil {
		t.Fatalf("make %s undeletable: %v", path, err)
	}
	undo = func() { setImmutable(path, false) }
	t.Cleanup(undo)
	return undo
}

func setImmutable(path string, on bool) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	fl, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	if on {
		fl |= fsImmutableFl
	} else {
		fl &^= fsImmutableFl
	}
	return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, fl)
}
