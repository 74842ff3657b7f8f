package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// Sending uses the kernel's BTRFS_IOC_SEND rather than `btrfs send`: it is
// one ioctl that writes the stream into a descriptor we hand it (a pipe we
// read), with no process to start and no output to parse, and the parent
// and clone sources are given by subvolume id, never by a path a tenant's
// rename could redirect. Receiving is ours too (receive.go), for the
// opposite reason: `btrfs receive` resolves every path with plain
// open(2), follows symlinks and finds clone sources by uuid anywhere in
// the filesystem, so a crafted stream could reach other tenants' files
// (its manual says not to receive untrusted streams).

// btrfsSendArgs is struct btrfs_ioctl_send_args.
type btrfsSendArgs struct {
	sendFd            int64
	cloneSourcesCount uint64
	cloneSources      uintptr // __u64 __user *
	parentRoot        uint64
	flags             uint64
	version           uint32
	reserved          [28]byte
}

var iocSend = ioc(iocWrite, 38, unsafe.Sizeof(btrfsSendArgs{}))

// Send writes the btrfs send stream (version 1) of snapshot name to w: the
// whole snapshot, or, when parent (another snapshot) is set, only what
// changed since parent, which the receiver must have. It returns the
// stream's length. Both must be snapshots (read-only). Errors:
// [rung.ErrNotFound], [rung.ErrInvalid], w's error, ctx's.
func (p *Pool) Send(ctx context.Context, w io.Writer, name, parent string) (int64, error) {
	names := []string{name}
	if parent != "" {
		names = append(names, parent)
	}
	if err := p.check(ctx, names...); err != nil {
		return 0, err
	}
	for _, n := range names {
		if err := wantKind(n, snapshotPrefix, "snapshot"); err != nil {
			return 0, err
		}
	}
	fd, err := p.openSubvol(name)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	var sources []uint64
	if parent != "" {
		pfd, err := p.openSubvol(parent)
		if err != nil {
			return 0, err
		}
		id, err := subvolID(pfd)
		unix.Close(pfd)
		if err != nil {
			return 0, fmt.Errorf("send %s: parent %s: %w", name, parent, err)
		}
		// As btrfs send does: the parent is also a clone source, so
		// extents shared with it go as clones, not data.
		sources = []uint64{id}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("send %s: %w", name, err)
	}
	done := make(chan error, 1)
	go func() { // ends when the kernel has written the stream, or the pipe's reader is gone (EPIPE)
		a := btrfsSendArgs{sendFd: int64(pw.Fd())}
		if len(sources) > 0 {
			a.cloneSourcesCount, a.cloneSources, a.parentRoot = 1, uintptr(unsafe.Pointer(&sources[0])), sources[0]
		}
		err := ioctlPtr(fd, iocSend, unsafe.Pointer(&a))
		runtime.KeepAlive(sources)
		pw.Close()
		done <- err
	}()
	// Closing the reader ends a send nobody reads any more: the kernel's
	// next write fails with EPIPE (and the SIGPIPE it raises is ignored by
	// the Go runtime, since it was not for standard output).
	stop := context.AfterFunc(ctx, func() { pr.Close() })
	n, cerr := io.Copy(w, pr)
	stop()
	pr.Close()
	serr := <-done
	switch {
	case ctx.Err() != nil:
		return n, ctx.Err()
	case cerr != nil && !errors.Is(cerr, os.ErrClosed):
		return n, fmt.Errorf("send %s: %w", name, cerr)
	case serr == unix.EPERM:
		return n, rung.Errorf(rung.ErrInvalid, "send %s: not a read-only snapshot", name)
	case serr != nil:
		return n, fmt.Errorf("send %s: %w", name, serr)
	}
	return n, nil
}
