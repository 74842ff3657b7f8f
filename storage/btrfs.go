package storage

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds the raw btrfs ioctls the pool uses, from
// include/uapi/linux/btrfs.h. Only the structures and numbers we call are
// declared; each wrapper takes directory file descriptors so that callers
// resolve names once and never race a rename between lookup and ioctl.

const btrfsMagic = 0x94

// ioc builds an ioctl request number the way the kernel's _IOC macro does
// (x86-64 and arm64 share this encoding).
func ioc(dir, nr, size uintptr) uint {
	return uint(dir<<30 | size<<16 | btrfsMagic<<8 | nr)
}

const (
	iocNone  = 0
	iocWrite = 1
	iocRead  = 2
)

const (
	btrfsSubvolNameMax = 4039
	btrfsPathNameMax   = 4087

	btrfsSubvolRdonly   = 1 << 1 // BTRFS_SUBVOL_RDONLY
	btrfsSubvolSpecByID = 1 << 4 // BTRFS_SUBVOL_SPEC_BY_ID
	btrfsRootTreeID     = 1      // BTRFS_ROOT_TREE_OBJECTID
	btrfsRootRefKey     = 156    // BTRFS_ROOT_REF_KEY
	searchHeaderSize    = 32     // struct btrfs_ioctl_search_header
	searchBufSize       = 4096 - 104

	btrfsFirstFreeObjectID = 256 // objectid of a subvolume's root directory

	quotaCtlEnable       = 1 // BTRFS_QUOTA_CTL_ENABLE (full qgroups)
	quotaCtlDisable      = 2
	quotaCtlEnableSimple = 4 // BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA (Linux 6.7+)

	qgroupLimitMaxRfer = 1 << 0 // BTRFS_QGROUP_LIMIT_MAX_RFER
	qgroupLimitMaxExcl = 1 << 1 // BTRFS_QGROUP_LIMIT_MAX_EXCL
)

// btrfsVolArgs is struct btrfs_ioctl_vol_args.
type btrfsVolArgs struct {
	fd   int64
	name [btrfsPathNameMax + 1]byte
}

// btrfsVolArgsV2 is struct btrfs_ioctl_vol_args_v2.
type btrfsVolArgsV2 struct {
	fd      int64
	transid uint64
	flags   uint64
	unused  [4]uint64 // union with {size, qgroup_inherit}
	name    [btrfsSubvolNameMax + 1]byte
}

// btrfsInoLookupArgs is struct btrfs_ioctl_ino_lookup_args.
type btrfsInoLookupArgs struct {
	treeid   uint64
	objectid uint64
	name     [4080]byte
}

// btrfsSearchArgs is struct btrfs_ioctl_search_args: a key followed by
// a buffer of (header, item) results.
type btrfsSearchArgs struct {
	treeID      uint64
	minObjectID uint64
	maxObjectID uint64
	minOffset   uint64
	maxOffset   uint64
	minTransid  uint64
	maxTransid  uint64
	minType     uint32
	maxType     uint32
	nrItems     uint32
	_           uint32
	_           [4]uint64
	buf         [searchBufSize]byte
}

// btrfsQuotaCtlArgs is struct btrfs_ioctl_quota_ctl_args.
type btrfsQuotaCtlArgs struct {
	cmd    uint64
	status uint64
}

// btrfsQgroupLimitArgs is struct btrfs_ioctl_qgroup_limit_args.
type btrfsQgroupLimitArgs struct {
	qgroupid uint64
	flags    uint64
	maxRfer  uint64
	maxExcl  uint64
	rsvRfer  uint64
	rsvExcl  uint64
}

// btrfsFsInfoArgs is struct btrfs_ioctl_fs_info_args.
type btrfsFsInfoArgs struct {
	maxID          uint64
	numDevices     uint64
	fsid           [16]byte
	nodesize       uint32
	sectorsize     uint32
	cloneAlignment uint32
	csumType       uint16
	csumSize       uint16
	flags          uint64
	generation     uint64
	metadataUUID   [16]byte
	reserved       [944]byte
}

var (
	iocResize       = ioc(iocWrite, 3, unsafe.Sizeof(btrfsVolArgs{}))
	iocSync         = ioc(iocNone, 8, 0)
	iocInoLookup    = ioc(iocRead|iocWrite, 18, unsafe.Sizeof(btrfsInoLookupArgs{}))
	iocTreeSearch   = ioc(iocRead|iocWrite, 17, unsafe.Sizeof(btrfsSearchArgs{}))
	iocSnapCreateV2 = ioc(iocWrite, 23, unsafe.Sizeof(btrfsVolArgsV2{}))
	iocSubvolCreate = ioc(iocWrite, 24, unsafe.Sizeof(btrfsVolArgsV2{}))
	iocSubvolGetFl  = ioc(iocRead, 25, 8)
	iocSubvolSetFl  = ioc(iocWrite, 26, 8)
	iocFsInfo       = ioc(iocRead, 31, unsafe.Sizeof(btrfsFsInfoArgs{}))
	iocQuotaCtl     = ioc(iocRead|iocWrite, 40, unsafe.Sizeof(btrfsQuotaCtlArgs{}))
	// The kernel declares QGROUP_LIMIT as _IOR although it only reads the
	// argument; the number must match the declaration.
	iocQgroupLimit  = ioc(iocRead, 43, unsafe.Sizeof(btrfsQgroupLimitArgs{}))
	iocSnapDestroy2 = ioc(iocWrite, 63, unsafe.Sizeof(btrfsVolArgsV2{}))
)

func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	for {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
}

func setName(dst []byte, name string) error {
	if len(name) >= len(dst) {
		return unix.ENAMETOOLONG
	}
	copy(dst, name)
	return nil
}

// subvolCreate creates an empty subvolume name in directory dirfd.
func subvolCreate(dirfd int, name string) error {
	var a btrfsVolArgsV2
	if err := setName(a.name[:], name); err != nil {
		return err
	}
	return ioctlPtr(dirfd, iocSubvolCreate, unsafe.Pointer(&a))
}

// snapCreate snapshots the subvolume open at srcfd as name in directory
// dirfd. The kernel commits a transaction before returning, so the
// snapshot is on disk when it succeeds.
func snapCreate(dirfd, srcfd int, name string, readonly bool) error {
	a := btrfsVolArgsV2{fd: int64(srcfd)}
	if readonly {
		a.flags = btrfsSubvolRdonly
	}
	if err := setName(a.name[:], name); err != nil {
		return err
	}
	return ioctlPtr(dirfd, iocSnapCreateV2, unsafe.Pointer(&a))
}

// snapDestroy deletes the subvolume name in directory dirfd. Its extents
// are freed later by the cleaner thread; the name is gone at once.
func snapDestroy(dirfd int, name string) error {
	var a btrfsVolArgsV2
	if err := setName(a.name[:], name); err != nil {
		return err
	}
	return ioctlPtr(dirfd, iocSnapDestroy2, unsafe.Pointer(&a))
}

// snapDestroyID deletes the subvolume with the given id, wherever it is
// in the filesystem fd is on. Deleting by id, not by path, means a
// container that renames directories cannot redirect the deletion.
func snapDestroyID(fd int, id uint64) error {
	a := btrfsVolArgsV2{flags: btrfsSubvolSpecByID}
	binary.NativeEndian.PutUint64(a.name[:8], id) // the union's subvolid
	return ioctlPtr(fd, iocSnapDestroy2, unsafe.Pointer(&a))
}

// childSubvols returns the ids of the subvolumes directly inside
// subvolume id (ROOT_REF items of the root tree). Root only.
func childSubvols(fd int, id uint64) ([]uint64, error) {
	var ids []uint64
	a := btrfsSearchArgs{
		treeID: btrfsRootTreeID, minObjectID: id, maxObjectID: id,
		minType: btrfsRootRefKey, maxType: btrfsRootRefKey,
		maxOffset: ^uint64(0), maxTransid: ^uint64(0),
	}
	for {
		a.nrItems = 4096
		if err := ioctlPtr(fd, iocTreeSearch, unsafe.Pointer(&a)); err != nil {
			return nil, err
		}
		if a.nrItems == 0 {
			return ids, nil
		}
		off := 0
		var last uint64
		for range a.nrItems {
			if off+searchHeaderSize > len(a.buf) {
				break
			}
			h := a.buf[off:]
			objectid := binary.NativeEndian.Uint64(h[8:])
			offset := binary.NativeEndian.Uint64(h[16:])
			typ := binary.NativeEndian.Uint32(h[24:])
			n := binary.NativeEndian.Uint32(h[28:])
			if objectid == id && typ == btrfsRootRefKey {
				ids = append(ids, offset)
			}
			last = offset
			off += searchHeaderSize + int(n)
		}
		if last == ^uint64(0) {
			return ids, nil
		}
		a.minOffset = last + 1
	}
}

func subvolFlags(fd int) (uint64, error) {
	var f uint64
	err := ioctlPtr(fd, iocSubvolGetFl, unsafe.Pointer(&f))
	return f, err
}

func setSubvolFlags(fd int, f uint64) error {
	return ioctlPtr(fd, iocSubvolSetFl, unsafe.Pointer(&f))
}

// subvolID returns the id of the subvolume (tree) that fd is in.
func subvolID(fd int) (uint64, error) {
	a := btrfsInoLookupArgs{objectid: btrfsFirstFreeObjectID}
	if err := ioctlPtr(fd, iocInoLookup, unsafe.Pointer(&a)); err != nil {
		return 0, err
	}
	return a.treeid, nil
}

// btrfsSync commits the current transaction of the filesystem fd is on
// and waits for it.
func btrfsSync(fd int) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(iocSync), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func quotaCtl(fd int, cmd uint64) error {
	a := btrfsQuotaCtlArgs{cmd: cmd}
	return ioctlPtr(fd, iocQuotaCtl, unsafe.Pointer(&a))
}

// qgroupLimit sets the limits of qgroup qgroupid, on the filesystem fd is
// on; qgroupid 0 means the level-0 qgroup of the subvolume fd is in, and
// the level-0 qgroup of subvolume N is N. Zero bytes clears the limit.
func qgroupLimit(fd int, qgroupid, bytes uint64) error {
	a := btrfsQgroupLimitArgs{qgroupid: qgroupid, flags: qgroupLimitMaxRfer | qgroupLimitMaxExcl, maxRfer: bytes, maxExcl: bytes}
	if bytes == 0 {
		// Setting the flags with 0 would mean "limit 0"; the kernel treats
		// (u64)-1 as "no limit".
		a.maxRfer, a.maxExcl = ^uint64(0), ^uint64(0)
	}
	return ioctlPtr(fd, iocQgroupLimit, unsafe.Pointer(&a))
}

func fsInfo(fd int) (btrfsFsInfoArgs, error) {
	var a btrfsFsInfoArgs
	err := ioctlPtr(fd, iocFsInfo, unsafe.Pointer(&a))
	return a, err
}

// resize grows or shrinks device 1 of the filesystem fd is on; size is
// "max" or a byte count.
func resize(fd int, size string) error {
	var a btrfsVolArgs
	if err := setName(a.name[:], size); err != nil {
		return err
	}
	return ioctlPtr(fd, iocResize, unsafe.Pointer(&a))
}

func uuidString(b [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
