package storage

import (
	"context"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SubvolInfo is what btrfs records about one subvolume that rung uses:
// identities for send and receive, and creation order for recovery.
type SubvolInfo struct {
	// UUID is the subvolume's own identity; ParentUUID that of the
	// subvolume it is a snapshot of (empty for one made from scratch).
	UUID, ParentUUID string
	// ReceivedUUID is set on a subvolume made by [Pool.Import]: the
	// identity the subvolume had on the pool it was exported from.
	ReceivedUUID string
	// CTransID is the transaction that last changed it; OTransID the
	// one that created it (higher is newer); STransID the sender's
	// CTransID, for a received subvolume.
	CTransID, OTransID, STransID uint64
	ReadOnly                     bool
}

// SendUUID is the identity other pools know the subvolume by: the one it
// was received as, else its own. A send stream names its subvolume and
// its parent this way, and an incremental import must find a local
// snapshot with its parent's SendUUID.
func (i SubvolInfo) SendUUID() (string, uint64) {
	if i.ReceivedUUID != "" {
		return i.ReceivedUUID, i.STransID
	}
	return i.UUID, i.CTransID
}

// Info returns what btrfs records about subvolume name. Errors:
// [rung.ErrNotFound], [rung.ErrInvalid].
func (p *Pool) Info(ctx context.Context, name string) (SubvolInfo, error) {
	if err := p.check(ctx, name); err != nil {
		return SubvolInfo{}, err
	}
	fd, err := p.openSubvol(name)
	if err != nil {
		return SubvolInfo{}, err
	}
	defer unix.Close(fd)
	info, err := subvolInfo(fd)
	if err != nil {
		return SubvolInfo{}, fmt.Errorf("subvolume info of %s: %w", name, err)
	}
	return info, nil
}

// btrfsTimespec is struct btrfs_ioctl_timespec.
type btrfsTimespec struct {
	sec  uint64
	nsec uint32
	_    uint32
}

// btrfsGetSubvolInfoArgs is struct btrfs_ioctl_get_subvol_info_args.
type btrfsGetSubvolInfoArgs struct {
	treeid       uint64
	name         [256]byte
	parentID     uint64
	dirid        uint64
	generation   uint64
	flags        uint64
	uuid         [16]byte
	parentUUID   [16]byte
	receivedUUID [16]byte
	ctransid     uint64
	otransid     uint64
	stransid     uint64
	rtransid     uint64
	ctime        btrfsTimespec
	otime        btrfsTimespec
	stime        btrfsTimespec
	rtime        btrfsTimespec
	reserved     [8]uint64
}

// btrfsReceivedSubvolArgs is struct btrfs_ioctl_received_subvol_args.
type btrfsReceivedSubvolArgs struct {
	uuid     [16]byte
	stransid uint64
	rtransid uint64
	stime    btrfsTimespec
	rtime    btrfsTimespec
	flags    uint64
	reserved [16]uint64
}

// btrfsRootSubvolRdonly is BTRFS_ROOT_SUBVOL_RDONLY: GET_SUBVOL_INFO
// reports the root item's flags, whose read-only bit is not the one
// SUBVOL_GETFLAGS uses.
const btrfsRootSubvolRdonly = 1 << 0

var (
	iocGetSubvolInfo    = ioc(iocRead, 60, unsafe.Sizeof(btrfsGetSubvolInfoArgs{}))
	iocSetReceivedSubvl = ioc(iocRead|iocWrite, 37, unsafe.Sizeof(btrfsReceivedSubvolArgs{}))
)

// subvolInfo reads the record of the subvolume fd is the root of (or in).
func subvolInfo(fd int) (SubvolInfo, error) {
	var a btrfsGetSubvolInfoArgs
	if err := ioctlPtr(fd, iocGetSubvolInfo, unsafe.Pointer(&a)); err != nil {
		return SubvolInfo{}, err
	}
	return SubvolInfo{
		UUID: uuidOrEmpty(a.uuid), ParentUUID: uuidOrEmpty(a.parentUUID), ReceivedUUID: uuidOrEmpty(a.receivedUUID),
		CTransID: a.ctransid, OTransID: a.otransid, STransID: a.stransid,
		ReadOnly: a.flags&btrfsRootSubvolRdonly != 0,
	}, nil
}

// setReceived records on the (still writable) subvolume fd that it is
// the received copy of the subvolume uuid at transaction stransid, as
// btrfs receive does, so that a later incremental stream against it
// names it by that identity.
func setReceived(fd int, uuid [16]byte, stransid uint64) error {
	a := btrfsReceivedSubvolArgs{uuid: uuid, stransid: stransid}
	return ioctlPtr(fd, iocSetReceivedSubvl, unsafe.Pointer(&a))
}

// setReadOnly makes the subvolume fd is the root of read-only.
func setReadOnly(fd int) error {
	fl, err := subvolFlags(fd)
	if err != nil {
		return err
	}
	if fl&btrfsSubvolRdonly != 0 {
		return nil
	}
	return setSubvolFlags(fd, fl|btrfsSubvolRdonly)
}

func uuidOrEmpty(b [16]byte) string {
	if b == [16]byte{} {
		return ""
	}
	return uuidString(b)
}
