package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// receiver applies a send stream to a subvolume it builds in staging/.
// Every path is resolved beneath that subvolume (or, for a clone, beneath
// the parent snapshot) with openat2: RESOLVE_BENEATH and no symlinks at
// all, since the kernel's paths never pass through one; the last
// component is then acted on with an *at call that does not follow it.
// Nobody else can reach a staging subvolume, so nothing changes between
// a check and the call that relies on it. Clone sources are only the
// stream's own subvolume and the parent the caller named; the stream's
// uuids only have to match them. The receiver is not safe for concurrent
// use.
type receiver struct {
	s      *streamReader
	root   int // O_RDONLY descriptor of the subvolume being built
	parent int // of the parent snapshot, or -1 for a whole stream

	self, parentID [16]byte // send identities of the stream's subvolume and of its parent
	selfTrans      uint64   // the stream's ctransid of its subvolume

	wfd   int    // open file of the last write or clone, or -1
	wpath string // its path
	caps  map[string][]byte
}

// errQuota is a receive stopped by the staged subvolume's quota limit.
var errQuota = errors.New("receive: quota limit reached")

const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// openBeneath resolves p beneath dirfd, following no symlink.
func openBeneath(dirfd int, p string, flags uint64) (int, error) {
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: resolveBeneath}
	for {
		fd, err := unix.Openat2(dirfd, p, &how)
		if err != unix.EINTR && err != unix.EAGAIN {
			return fd, err
		}
	}
}

// at opens p's parent directory beneath the subvolume and runs fn with it
// and p's last component.
func (r *receiver) at(p string, fn func(dfd int, base string) error) error {
	if p == "" {
		return fn(r.root, "") // the root itself: see emptyPath
	}
	dir, base := path.Split(p)
	if dir == "" {
		dir = "."
	}
	dfd, err := openBeneath(r.root, dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return fn(dfd, base)
}

// emptyPath is the flag that makes an *at call act on dfd itself when
// base is empty (the subvolume's root).
func emptyPath(base string) int {
	if base == "" {
		return unix.AT_EMPTY_PATH
	}
	return 0
}

// procPath names base in the directory open at dfd through procfs, for
// the calls that have no *at form (lsetxattr, lremovexattr): the walk
// jumps to the directory and then looks base up without following it.
func procPath(dfd int, base string) string {
	return "/proc/self/fd/" + strconv.Itoa(dfd) + "/" + base
}

// begin handles the stream's first command, which makes the subvolume at
// staging/staged: SUBVOL for a whole stream, SNAPSHOT (of the parent)
// for an incremental one.
func (p *Pool) begin(r *receiver, staged string) error {
	if err := r.s.next(); err != nil {
		return corrupt("empty: %v", err)
	}
	var err error
	if r.self, err = r.s.uuid(attrUUID); err != nil {
		return err
	}
	if r.selfTrans, err = r.s.u64(attrCtransid); err != nil {
		return err
	}
	switch {
	case r.s.cmd == cmdSubvol && r.parent < 0:
		err = subvolCreate(p.stageFd, staged)
	case r.s.cmd == cmdSnapshot && r.parent >= 0:
		// The parent is matched by uuid alone, as btrfs receive does: a
		// read-only snapshot's ctransid as the kernel sends it is not
		// the one its root item reports.
		u, err := r.s.uuid(attrCloneUUID)
		if err != nil {
			return corrupt("snapshot command without its parent")
		}
		if u != r.parentID {
			return rung.Errorf(rung.ErrConflict, "snapshot archive: its send stream is based on another snapshot than the one named")
		}
		err = snapCreate(p.stageFd, r.parent, staged, false)
	case r.s.cmd == cmdSnapshot:
		return corrupt("is incremental but the archive names no parent")
	default:
		return corrupt("does not start with a subvolume (command %d)", r.s.cmd)
	}
	if err != nil {
		return fmt.Errorf("receive: create subvolume: %w", err)
	}
	if r.root, err = unix.Openat(p.stageFd, staged, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	// A sealed fs/ in the parent would refuse the stream's changes to it.
	// The result is a read-only snapshot, which needs no seal; forks of
	// it are sealed when made.
	if fd, err := unix.Openat(r.root, "fs", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		fl, gerr := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
		if gerr == nil && fl&fsImmutable != 0 {
			gerr = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, fl&^fsImmutable)
		}
		unix.Close(fd)
		if gerr != nil {
			return fmt.Errorf("receive: unseal fs: %w", gerr)
		}
	}
	return nil
}

// run applies the commands after the first up to END, which must be the
// last thing in the stream, then marks the subvolume received. (It is made
// read-only once in place: btrfs refuses to move a read-only subvolume to
// another directory.)
func (r *receiver) run(ctx context.Context) error {
	defer r.closeWrite()
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := r.s.next(); err != nil {
			if err == io.EOF {
				return corrupt("ended before its end command")
			}
			return err
		}
		if r.s.cmd == cmdEnd {
			break
		}
		if err := r.apply(); err != nil {
			if errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.ENOSPC) {
				return errQuota
			}
			if rung.Code(err) != rung.CodeInternal {
				return err
			}
			// A call the kernel refused means the stream does not fit
			// the subvolume it is applied to.
			p, _ := r.s.str(attrPath)
			return corrupt("command %d on %q: %v", r.s.cmd, clip(p), err)
		}
	}
	if err := r.s.next(); err != io.EOF {
		return corrupt("has data after its end command")
	}
	r.closeWrite()
	if err := setReceived(r.root, r.self, r.selfTrans); err != nil {
		return fmt.Errorf("receive: mark received: %w", err)
	}
	return nil
}

// apply runs the current command.
func (r *receiver) apply() error {
	s := r.s
	p, err := s.path(attrPath)
	if err != nil {
		return err
	}
	switch s.cmd {
	case cmdMkfile:
		return r.at(p, func(dfd int, base string) error {
			fd, err := unix.Openat(dfd, base, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
			if err == nil {
				unix.Close(fd)
			}
			return err
		})
	case cmdMkdir:
		return r.at(p, func(dfd int, base string) error { return unix.Mkdirat(dfd, base, 0o700) })
	case cmdMknod, cmdMkfifo, cmdMksock:
		return r.mknod(p)
	case cmdSymlink:
		target, err := s.str(attrPathLink)
		if err != nil {
			return err
		}
		return r.at(p, func(dfd int, base string) error { return unix.Symlinkat(target, dfd, base) })
	case cmdRename, cmdLink:
		attr := attrPathTo
		if s.cmd == cmdLink {
			attr = attrPathLink
		}
		other, err := s.path(attr)
		if err != nil {
			return err
		}
		r.closeWrite() // the cached descriptor's path may change
		if s.cmd == cmdRename {
			return r.at(p, func(ofd int, obase string) error {
				return r.at(other, func(nfd int, nbase string) error { return unix.Renameat(ofd, obase, nfd, nbase) })
			})
		}
		// LINK makes path a new name for the existing path_link.
		return r.at(other, func(ofd int, obase string) error {
			return r.at(p, func(nfd int, nbase string) error { return unix.Linkat(ofd, obase, nfd, nbase, 0) })
		})
	case cmdUnlink, cmdRmdir:
		r.closeWrite()
		flag := 0
		if s.cmd == cmdRmdir {
			flag = unix.AT_REMOVEDIR
		}
		return r.at(p, func(dfd int, base string) error { return unix.Unlinkat(dfd, base, flag) })
	case cmdSetXattr, cmdRemoveXattr:
		return r.xattr(p)
	case cmdWrite:
		return r.write(p)
	case cmdClone:
		return r.clone(p)
	case cmdTruncate:
		size, err := s.u64(attrSize)
		if err != nil {
			return err
		}
		fd, err := r.openWrite(p)
		if err != nil {
			return err
		}
		return unix.Ftruncate(fd, int64(size))
	case cmdChmod:
		mode, err := s.u64(attrMode)
		if err != nil {
			return err
		}
		return r.at(p, func(dfd int, base string) error {
			return unix.Fchmodat(dfd, base, uint32(mode)&0o7777, unix.AT_SYMLINK_NOFOLLOW|emptyPath(base))
		})
	case cmdChown:
		return r.chown(p)
	case cmdUtimes:
		return r.utimes(p)
	}
	return corrupt("command %d is not supported", s.cmd)
}

// mknod makes a FIFO, a socket, or the one device node a sandbox can
// hold: the 0/0 character device overlayfs uses as a whiteout. Any other
// device node is refused: nothing in a sandbox can make one (containers
// lack CAP_MKNOD), so an archive holding one was crafted.
func (r *receiver) mknod(p string) error {
	mode := uint64(unix.S_IFIFO)
	var rdev uint64
	switch r.s.cmd {
	case cmdMksock:
		mode = unix.S_IFSOCK
	case cmdMknod:
		var err error
		if mode, err = r.s.u64(attrMode); err != nil {
			return err
		}
		if r.s.has(attrRdev) {
			if rdev, err = r.s.u64(attrRdev); err != nil {
				return err
			}
		}
	}
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO, unix.S_IFSOCK:
	case unix.S_IFCHR:
		if rdev != 0 {
			return rung.Errorf(rung.ErrInvalid, "snapshot archive: device node %q refused", clip(p))
		}
	default:
		return rung.Errorf(rung.ErrInvalid, "snapshot archive: special file %q of mode %o refused", clip(p), mode)
	}
	return r.at(p, func(dfd int, base string) error {
		return unix.Mknodat(dfd, base, uint32(mode&unix.S_IFMT)|0o600, 0)
	})
}

func (r *receiver) xattr(p string) error {
	name, err := r.s.str(attrXattrName)
	if err != nil {
		return err
	}
	if r.s.cmd == cmdRemoveXattr {
		return r.at(p, func(dfd int, base string) error { return unix.Lremovexattr(procPath(dfd, base), name) })
	}
	data, err := r.s.bytes(attrXattrData)
	if err != nil {
		return err
	}
	if name == "security.capability" {
		// A chown clears file capabilities; the kernel sends them before
		// the chown, so they are put back after it (as btrfs receive does).
		if r.caps == nil {
			r.caps = map[string][]byte{}
		}
		r.caps[p] = append([]byte(nil), data...)
	}
	return r.at(p, func(dfd int, base string) error { return unix.Lsetxattr(procPath(dfd, base), name, data, 0) })
}

func (r *receiver) chown(p string) error {
	uid, err := r.s.u64(attrUID)
	if err != nil {
		return err
	}
	gid, err := r.s.u64(attrGID)
	if err != nil {
		return err
	}
	return r.at(p, func(dfd int, base string) error {
		if err := unix.Fchownat(dfd, base, int(uid), int(gid), unix.AT_SYMLINK_NOFOLLOW|emptyPath(base)); err != nil {
			return err
		}
		if c, ok := r.caps[p]; ok {
			delete(r.caps, p)
			return unix.Lsetxattr(procPath(dfd, base), "security.capability", c, 0)
		}
		return nil
	})
}

func (r *receiver) utimes(p string) error {
	as, an, err := r.s.timespec(attrAtime)
	if err != nil {
		return err
	}
	ms, mn, err := r.s.timespec(attrMtime)
	if err != nil {
		return err
	}
	ts := []unix.Timespec{{Sec: as, Nsec: an}, {Sec: ms, Nsec: mn}}
	return r.at(p, func(dfd int, base string) error {
		return unix.UtimesNanoAt(dfd, base, ts, unix.AT_SYMLINK_NOFOLLOW|emptyPath(base))
	})
}

// openWrite returns a descriptor of regular file p for writing, reusing
// the last one: a file's data comes as a run of WRITE commands.
func (r *receiver) openWrite(p string) (int, error) {
	if r.wfd >= 0 && r.wpath == p {
		return r.wfd, nil
	}
	r.closeWrite()
	fd, err := openBeneath(r.root, p, unix.O_WRONLY)
	if err != nil {
		return -1, err
	}
	r.wfd, r.wpath = fd, p
	return fd, nil
}

func (r *receiver) closeWrite() {
	if r.wfd >= 0 {
		unix.Close(r.wfd)
		r.wfd, r.wpath = -1, ""
	}
}

func (r *receiver) write(p string) error {
	off, err := r.s.u64(attrFileOffset)
	if err != nil {
		return err
	}
	data, err := r.s.bytes(attrData)
	if err != nil {
		return err
	}
	fd, err := r.openWrite(p)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n, err := unix.Pwrite(fd, data, int64(off))
		if err != nil {
			return err
		}
		data, off = data[n:], off+uint64(n)
	}
	return nil
}

// clone reflinks a range from the subvolume being built or from the
// parent, and from nowhere else.
func (r *receiver) clone(p string) error {
	s := r.s
	var v [4]uint64
	for i, a := range []int{attrFileOffset, attrCloneLen, attrCloneOffset, attrCloneCtransid} {
		var err error
		if v[i], err = s.u64(a); err != nil {
			return err
		}
	}
	u, err := s.uuid(attrCloneUUID)
	if err != nil {
		return err
	}
	src, err := s.path(attrClonePath)
	if err != nil {
		return err
	}
	base := -1
	switch {
	case u == r.self:
		base = r.root
	case r.parent >= 0 && u == r.parentID:
		base = r.parent
	default:
		return rung.Errorf(rung.ErrInvalid, "snapshot archive: clone of %q from a subvolume other than the snapshot or its parent refused", clip(p))
	}
	dst, err := r.openWrite(p)
	if err != nil {
		return err
	}
	sfd, err := openBeneath(base, src, unix.O_RDONLY)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	return unix.IoctlFileCloneRange(dst, &unix.FileCloneRange{Src_fd: int64(sfd), Src_offset: v[2], Src_length: v[1], Dest_offset: v[0]})
}
