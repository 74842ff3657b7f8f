package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// DefaultImageSize is the apparent size of a new pool image. The file is
// sparse: it takes only what btrfs writes, and [Pool.Grow] enlarges it.
const DefaultImageSize = 64 << 30

// Quota modes for [PoolConfig.Quotas].
const (
	QuotaAuto   = ""       // simple quotas, else full qgroups, else off (logged)
	QuotaSimple = "simple" // btrfs simple quotas (Linux 6.7+), or fail
	QuotaFull   = "full"   // classic btrfs qgroups, or fail
	QuotaOff    = "off"    // no accounting; SetQuota returns ErrUnavailable
)

// PoolConfig says where a [Pool] lives. The zero value is not usable: set
// Dir or Mount.
type PoolConfig struct {
	// Dir is the data directory. Unless Mount is set, the pool is the
	// btrfs image ImagePath, loop-mounted at Dir/pool, and Dir/pool.lock
	// keeps a second process from opening it.
	Dir string
	// ImagePath is the pool image; default Dir/pool.img. It is created
	// (sparse, mkfs.btrfs) when missing.
	ImagePath string
	// ImageSize is the apparent size in bytes of a new image; default
	// [DefaultImageSize]. An existing image keeps its size.
	ImageSize int64
	// Mount, if set, is an existing btrfs mount (or a directory on one)
	// to use instead of an image. rung never mounts or unmounts it; it
	// should be mounted nodev,nosuid. rung keeps its lock file rung.lock
	// and its directories sandboxes/, snapshots/ and staging/ there.
	Mount string
	// Quotas selects the quota mechanism; default [QuotaAuto].
	Quotas string
	// Logger receives lifecycle messages; nil discards them.
	Logger *slog.Logger
}

// Pool is a btrfs filesystem holding one subvolume per sandbox and per
// snapshot. Its methods are safe for concurrent use, except Close, which
// must not run concurrently with them.
//
// Layout under the mount: sandboxes/<sbx_id> and snapshots/<snp_id> are
// subvolumes; staging/ holds subvolumes under construction (Create builds
// there and renames into place, so a crash leaves either nothing or a
// staging leftover that [Pool.Reconcile] removes).
type Pool struct {
	log    *slog.Logger
	mnt    string // the pool's root directory (a mount point unless user-provided)
	image  string // absolute image path; "" for a user-provided mount
	owned  bool   // we unmount mnt on Close
	dev    string // loop device of an owned mount
	lockFd int    // flock on the pool; -1 if none
	quota  string // effective quota mode: QuotaSimple, QuotaFull or QuotaOff
	fsid   string // filesystem UUID, for /sys/fs/btrfs

	sbxFd, snpFd, stageFd int // O_DIRECTORY descriptors of the three dirs

	closed atomic.Bool
}

const (
	dirSandboxes = "sandboxes"
	dirSnapshots = "snapshots"
	dirStaging   = "staging"
)

// Open opens the pool cfg describes, creating and mounting the image
// when needed. If the image is already mounted at Dir/pool (the daemon
// was killed), Open adopts that mount without attaching another loop
// device. It fails with [rung.ErrUnavailable] when the host lacks btrfs
// (the message says what to install) and with [rung.ErrConflict] when
// another process holds the pool. Close releases what Open acquired.
func Open(ctx context.Context, cfg PoolConfig) (*Pool, error) {
	p := &Pool{log: cfg.Logger, lockFd: -1, sbxFd: -1, snpFd: -1, stageFd: -1}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if cfg.Mount != "" {
		err = p.useMount(cfg.Mount)
	} else {
		err = p.openImage(ctx, cfg)
	}
	if err == nil {
		err = p.openDirs()
	}
	if err == nil {
		err = p.enableQuotas(cfg.Quotas)
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	p.log.InfoContext(ctx, "storage pool open", "dir", p.mnt, "image", p.image, "quota", p.quota)
	return p, nil
}

func (p *Pool) useMount(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("pool mount %s: %w", dir, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(abs, &st); err != nil {
		return fmt.Errorf("pool mount %s: %w", abs, err)
	}
	if st.Type != unix.BTRFS_SUPER_MAGIC {
		return rung.Errorf(rung.ErrUnavailable, "pool mount %s is not a btrfs filesystem: mount a btrfs filesystem there (apt-get install btrfs-progs; mkfs.btrfs DEVICE; mount -o nodev,nosuid DEVICE %s) or leave the mount unset to use a loop-mounted image", abs, abs)
	}
	p.mnt = abs
	return p.lock(filepath.Join(abs, "rung.lock"))
}

// lock takes an exclusive flock on path; the kernel drops it when the
// process dies, so a killed daemon never leaves the pool locked.
func (p *Pool) lock(path string) error {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("open pool lock: %w", err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if err == unix.EWOULDBLOCK {
			return rung.Errorf(rung.ErrConflict, "storage pool %s is in use by another rung process", filepath.Dir(path))
		}
		return fmt.Errorf("lock pool: %w", err)
	}
	p.lockFd = fd
	return nil
}

func (p *Pool) openImage(ctx context.Context, cfg PoolConfig) error {
	if cfg.Dir == "" {
		return rung.Errorf(rung.ErrInvalid, "storage pool: neither Dir nor Mount set")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return fmt.Errorf("pool dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pool dir: %w", err)
	}
	if err := p.lock(filepath.Join(dir, "pool.lock")); err != nil {
		return err
	}
	p.image = cfg.ImagePath
	if p.image == "" {
		p.image = filepath.Join(dir, "pool.img")
	}
	if p.image, err = filepath.Abs(p.image); err != nil {
		return fmt.Errorf("pool image: %w", err)
	}
	p.mnt = filepath.Join(dir, "pool")
	if err := os.MkdirAll(p.mnt, 0o700); err != nil {
		return fmt.Errorf("pool mount point: %w", err)
	}
	m, mounted, err := findMount(p.mnt)
	if err != nil {
		return fmt.Errorf("read mounts: %w", err)
	}
	if mounted {
		return p.adopt(ctx, m)
	}
	if _, err := os.Stat(p.image); errors.Is(err, os.ErrNotExist) {
		size := cfg.ImageSize
		if size <= 0 {
			size = DefaultImageSize
		}
		if err := makeImage(ctx, p.image, size); err != nil {
			return err
		}
		p.log.InfoContext(ctx, "storage pool image created", "image", p.image, "size", size)
	} else if err != nil {
		return fmt.Errorf("pool image: %w", err)
	}
	if err := p.detachStale(ctx); err != nil {
		return err
	}
	return p.mount()
}

// adopt takes over a mount a previous process left at p.mnt, after
// checking that it is our image.
func (p *Pool) adopt(ctx context.Context, m mountInfo) error {
	devs, err := loopDevicesFor(p.image)
	if err != nil {
		return fmt.Errorf("list loop devices: %w", err)
	}
	for _, d := range devs {
		if d == m.source && m.fstype == "btrfs" {
			p.owned, p.dev = true, d
			p.log.InfoContext(ctx, "storage pool adopted existing mount", "dir", p.mnt, "device", d)
			return nil
		}
	}
	return rung.Errorf(rung.ErrConflict, "%s is mounted from %s (%s), not from the pool image %s: unmount it", p.mnt, m.source, m.fstype, p.image)
}

func (p *Pool) mount() error {
	dev, fd, err := attachLoop(p.image)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
			return rung.Errorf(rung.ErrUnavailable, "no loop device support (%v): load it with modprobe loop, or set the pool mount to an existing btrfs filesystem", err)
		}
		return err
	}
	// The mount holds the device from here on; closing our descriptor
	// lets LO_FLAGS_AUTOCLEAR detach it at unmount (or now, if mount
	// failed).
	defer unix.Close(fd)
	err = unix.Mount(dev, p.mnt, "btrfs", unix.MS_NODEV|unix.MS_NOSUID, "")
	if err == unix.ENODEV {
		return rung.Errorf(rung.ErrUnavailable, "the kernel has no btrfs support: run modprobe btrfs (Debian: apt-get install linux-image-amd64), or set the pool mount to an existing btrfs filesystem")
	}
	if err != nil {
		return fmt.Errorf("mount pool image %s on %s: %w", p.image, p.mnt, err)
	}
	p.owned, p.dev = true, dev
	return nil
}

// makeImage creates a sparse btrfs image at path atomically: a crash
// leaves either no image or a complete one (and maybe a .tmp file that
// the next attempt overwrites).
func makeImage(ctx context.Context, path string, size int64) error {
	mkfs, err := exec.LookPath("mkfs.btrfs")
	if err != nil {
		return rung.Errorf(rung.ErrUnavailable, "mkfs.btrfs not found: install btrfs-progs (apt-get install btrfs-progs), or set the pool mount to an existing btrfs filesystem")
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create pool image: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("size pool image: %w", err)
	}
	// 4 KiB tree nodes, not the default 16: a snapshot references every
	// child of the subvolume's root node, and a 16 KiB root holds up to
	// ~490 of them (snapshots of 10,000-file sandboxes took 7-8 ms p50);
	// 4 KiB caps that at ~120 (about 4 ms), and small-file writes got
	// faster too (112-118 vs 85-94 MB/s in BenchmarkWrite).
	out, err := exec.CommandContext(ctx, mkfs, "-q", "-f", "--nodesize", "4096", tmp).CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("mkfs.btrfs: %w: %s", err, out)
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("install pool image: %w", err)
	}
	return syncFile(filepath.Dir(path))
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}

func (p *Pool) openDirs() error {
	if p.owned {
		// Only root may enter; containers get bind mounts of subdirectories.
		if err := os.Chmod(p.mnt, 0o700); err != nil {
			return fmt.Errorf("pool root: %w", err)
		}
	}
	for _, d := range []struct {
		name string
		fd   *int
	}{{dirSandboxes, &p.sbxFd}, {dirSnapshots, &p.snpFd}, {dirStaging, &p.stageFd}} {
		path := filepath.Join(p.mnt, d.name)
		if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("pool dir %s: %w", d.name, err)
		}
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("pool dir %s: %w", d.name, err)
		}
		*d.fd = fd
	}
	info, err := fsInfo(p.sbxFd)
	if err != nil {
		return fmt.Errorf("pool fs info: %w", err)
	}
	p.fsid = uuidString(info.fsid)
	return nil
}

// Dir returns the pool's root directory on the host.
func (p *Pool) Dir() string { return p.mnt }

// Close closes the pool: it unmounts a pool Open mounted or adopted
// (which detaches its loop device) and does nothing to a user-provided
// mount. Close is idempotent. If the pool is still busy (a container
// holds a bind mount), the unmount is lazy and completes when the last
// user goes.
func (p *Pool) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	for _, fd := range []*int{&p.sbxFd, &p.snpFd, &p.stageFd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	var err error
	if p.owned {
		err = unix.Unmount(p.mnt, 0)
		switch {
		case err == unix.EBUSY:
			// The loop device detaches itself when the last user goes.
			p.log.Warn("storage pool busy at close, unmounting lazily", "dir", p.mnt)
			err = unix.Unmount(p.mnt, unix.MNT_DETACH)
		case err == nil:
			err = p.waitDetached()
		}
		if err != nil {
			err = fmt.Errorf("unmount pool %s: %w", p.mnt, err)
		}
	}
	if p.lockFd >= 0 {
		unix.Close(p.lockFd)
		p.lockFd = -1
	}
	return err
}

// Release closes the pool like [Pool.Close] but leaves its file system
// mounted: for a daemon that stops and leaves containers running on
// sandbox files (live restore), whose next [Open] adopts the mount. It is
// idempotent, and a Close after it does nothing.
func (p *Pool) Release() error {
	if p.closed.Swap(true) {
		return nil
	}
	for _, fd := range []*int{&p.sbxFd, &p.snpFd, &p.stageFd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	if p.lockFd >= 0 {
		unix.Close(p.lockFd)
		p.lockFd = -1
	}
	return nil
}

// waitDetached waits until the loop device is gone after the unmount.
// The kernel releases the filesystem and then auto-clears the device
// asynchronously (we saw it still attached right after umount(2) under
// load), and a caller that closes the pool expects nothing attached. If it
// lingers, ask the device to detach itself.
func (p *Pool) waitDetached() error {
	if p.dev == "" || waitLoopGone(p.image, p.dev, 5*time.Second) {
		return nil
	}
	if err := clearLoop(p.dev); err != nil {
		return fmt.Errorf("detach loop device %s: %w", p.dev, err)
	}
	return nil
}

// detachStale detaches loop devices still backed by our image although
// nothing mounts it (we checked, and we hold the pool lock): one a killed
// process attached and the kernel is still auto-clearing, or one attached
// by hand. Mounting through a second device would stack them.
func (p *Pool) detachStale(ctx context.Context) error {
	devs, err := loopDevicesFor(p.image)
	if err != nil {
		return fmt.Errorf("list loop devices: %w", err)
	}
	for _, d := range devs {
		clearLoop(d) // ENXIO: already being cleared
		if !waitLoopGone(p.image, d, 2*time.Second) {
			return rung.Errorf(rung.ErrConflict, "loop device %s holds the pool image %s and does not detach: detach it (losetup -d %s)", d, p.image, d)
		}
		p.log.WarnContext(ctx, "storage pool detached a stale loop device", "device", d)
	}
	return nil
}

// Grow enlarges an image-backed pool to size bytes: it extends the image
// file, tells the loop device, and resizes btrfs, all online. It fails
// with [rung.ErrInvalid] for a smaller size and with [rung.ErrConflict]
// for a user-provided mount (grow that filesystem yourself).
func (p *Pool) Grow(ctx context.Context, size int64) error {
	if err := p.check(ctx); err != nil {
		return err
	}
	if p.image == "" {
		return rung.Errorf(rung.ErrConflict, "pool is a user-provided mount; grow it with btrfs filesystem resize")
	}
	st, err := os.Stat(p.image)
	if err != nil {
		return fmt.Errorf("grow pool: %w", err)
	}
	if size < st.Size() {
		return rung.Errorf(rung.ErrInvalid, "grow pool to %d bytes: smaller than its %d bytes", size, st.Size())
	}
	if err := os.Truncate(p.image, size); err != nil {
		return fmt.Errorf("grow pool image: %w", err)
	}
	dev, err := unix.Open(p.dev, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("grow pool: %w", err)
	}
	err = unix.IoctlSetInt(dev, unix.LOOP_SET_CAPACITY, 0)
	unix.Close(dev)
	if err != nil {
		return fmt.Errorf("grow pool loop device: %w", err)
	}
	if err := resize(p.sbxFd, "max"); err != nil {
		return fmt.Errorf("resize pool filesystem: %w", err)
	}
	p.log.InfoContext(ctx, "storage pool grown", "size", size)
	return nil
}

func (p *Pool) checkOpen() error {
	if p.closed.Load() {
		return rung.Errorf(rung.ErrUnavailable, "storage pool is closed")
	}
	return nil
}
