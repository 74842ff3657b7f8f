package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// MaxSubvolNameLen is the longest sandbox or snapshot name a [Pool]
// accepts.
const MaxSubvolNameLen = 64

// Subvolume kinds, chosen by the name's prefix.
const (
	sandboxPrefix  = "sbx_"
	snapshotPrefix = "snp_"
)

// checkName validates a subvolume name: "sbx_" or "snp_" followed by 1 or
// more of [a-z0-9_], at most MaxSubvolNameLen bytes in all. Nothing else
// ever reaches a path, so "..", "/", NUL and friends are refused here.
func checkName(name string) error {
	rest, ok := strings.CutPrefix(name, sandboxPrefix)
	if !ok {
		rest, ok = strings.CutPrefix(name, snapshotPrefix)
	}
	if !ok || rest == "" || len(name) > MaxSubvolNameLen {
		return rung.Errorf(rung.ErrInvalid, "invalid sandbox or snapshot name %q", clip(name))
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return rung.Errorf(rung.ErrInvalid, "invalid sandbox or snapshot name %q", clip(name))
		}
	}
	return nil
}

// clip shortens an untrusted name for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func isSnapshotName(name string) bool { return strings.HasPrefix(name, snapshotPrefix) }

// dirOf returns the descriptor and name of the directory that holds name.
func (p *Pool) dirOf(name string) (int, string) {
	if isSnapshotName(name) {
		return p.snpFd, dirSnapshots
	}
	return p.sbxFd, dirSandboxes
}

func (p *Pool) check(ctx context.Context, names ...string) error {
	if err := p.checkOpen(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, n := range names {
		if err := checkName(n); err != nil {
			return err
		}
	}
	return nil
}

func wantKind(name, prefix, what string) error {
	if !strings.HasPrefix(name, prefix) {
		return rung.Errorf(rung.ErrInvalid, "%s name %q must start with %q", what, name, prefix)
	}
	return nil
}

// Path returns the host directory of subvolume name (for bind mounts), or
// "" if name is not a valid name. It does not check that it exists.
func (p *Pool) Path(name string) string {
	if checkName(name) != nil {
		return ""
	}
	_, dir := p.dirOf(name)
	return filepath.Join(p.mnt, dir, name)
}

// Exists reports whether subvolume name exists. It returns
// [rung.ErrInvalid] for an invalid name.
func (p *Pool) Exists(ctx context.Context, name string) (bool, error) {
	if err := p.check(ctx, name); err != nil {
		return false, err
	}
	err := p.stat(name)
	if errors.Is(err, rung.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// stat checks that name is a subvolume, returning rung.ErrNotFound if not.
func (p *Pool) stat(name string) error {
	dirfd, _ := p.dirOf(name)
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.ENOENT {
		return rung.Errorf(rung.ErrNotFound, "%s not found", name)
	}
	if err != nil {
		return fmt.Errorf("stat %s: %w", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Ino != btrfsFirstFreeObjectID {
		return rung.Errorf(rung.ErrNotFound, "%s not found (not a subvolume)", name)
	}
	return nil
}

// openSubvol opens subvolume name for ioctls.
func (p *Pool) openSubvol(name string) (int, error) {
	dirfd, _ := p.dirOf(name)
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return -1, rung.Errorf(rung.ErrNotFound, "%s not found", name)
	}
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", name, err)
	}
	return fd, nil
}

// Create makes an empty sandbox subvolume name ("sbx_..."), holding
// fs/workspace, fs/tmp (mode 1777), rootfs/upper and rootfs/work. It is
// atomic: the subvolume is built in staging/ and renamed into place, so
// after a crash it either exists complete or not at all. It returns
// [rung.ErrExists] if name exists and [rung.ErrInvalid] for a bad name.
func (p *Pool) Create(ctx context.Context, name string) error {
	if err := p.check(ctx, name); err != nil {
		return err
	}
	if err := wantKind(name, sandboxPrefix, "sandbox"); err != nil {
		return err
	}
	if err := p.stat(name); err == nil {
		return rung.Errorf(rung.ErrExists, "%s already exists", name)
	}
	tmp := stagingName(name)
	if err := subvolCreate(p.stageFd, tmp); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	err := p.populate(tmp)
	if err == nil {
		err = unix.Renameat2(p.stageFd, tmp, p.sbxFd, name, unix.RENAME_NOREPLACE)
		if err == unix.EEXIST {
			err = rung.Errorf(rung.ErrExists, "%s already exists", name)
		}
	}
	if err != nil {
		if derr := snapDestroy(p.stageFd, tmp); derr != nil {
			p.log.WarnContext(ctx, "staging subvolume left for reconcile", "subvolume", tmp, "err", derr)
		}
		return fmt.Errorf("create %s: %w", name, err)
	}
	return nil
}

// stagingName is name plus a random suffix; the "." makes it an invalid
// subvolume name, so it can never be mistaken for a live one.
func stagingName(name string) string {
	var b [6]byte
	rand.Read(b[:])
	return name + "." + hex.EncodeToString(b[:])
}

// layout is a new sandbox's directory tree, parents first.
var layout = []struct {
	path string
	mode uint32
}{
	{"fs", 0o755},
	{"fs/workspace", 0o755},
	{"fs/tmp", 0o1777},
	{"rootfs", 0o700},
	{"rootfs/upper", 0o755},
	{"rootfs/work", 0o700},
}

func (p *Pool) populate(tmp string) error {
	fd, err := unix.Openat(p.stageFd, tmp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for _, d := range layout {
		if err := unix.Mkdirat(fd, d.path, 0o700); err != nil {
			return fmt.Errorf("mkdir %s: %w", d.path, err)
		}
		// Set the mode explicitly: mkdir applies the umask and drops the
		// sticky bit.
		if err := unix.Fchmodat(fd, d.path, d.mode, 0); err != nil {
			return fmt.Errorf("chmod %s: %w", d.path, err)
		}
	}
	return sealAt(fd, "fs") // last: it holds workspace and tmp now (seal.go)
}

// Snapshot makes dst ("snp_...") a read-only snapshot of src (a sandbox or
// a snapshot). It is O(1) and atomic, and durable when it returns (btrfs
// commits a transaction to create a snapshot). Errors: [rung.ErrNotFound]
// for a missing src, [rung.ErrExists] for an existing dst,
// [rung.ErrInvalid] for bad names.
func (p *Pool) Snapshot(ctx context.Context, src, dst string) error {
	if err := p.check(ctx, src, dst); err != nil {
		return err
	}
	if err := wantKind(dst, snapshotPrefix, "snapshot"); err != nil {
		return err
	}
	return p.snapshot(ctx, src, dst, true)
}

// Fork makes dst ("sbx_...") a writable snapshot of src (a sandbox or a
// snapshot): a new sandbox that starts with src's files and shares their
// extents until either side writes. Snapshot and Fork copy src's quota
// limit, if any, to dst. Errors as [Pool.Snapshot].
func (p *Pool) Fork(ctx context.Context, src, dst string) error {
	if err := p.check(ctx, src, dst); err != nil {
		return err
	}
	if err := wantKind(dst, sandboxPrefix, "sandbox"); err != nil {
		return err
	}
	return p.snapshot(ctx, src, dst, false)
}

func (p *Pool) snapshot(ctx context.Context, src, dst string, readonly bool) error {
	if err := p.stat(src); err != nil {
		return err
	}
	dirfd, _ := p.dirOf(dst)
	if !readonly {
		// A spare made ahead (spare.go) saves the transaction commit.
		took, err := p.takeSpare(src, dirfd, dst)
		if err != nil {
			return err
		}
		if took {
			return p.finishCopy(ctx, src, dirfd, dst, false)
		}
	}
	srcFd, err := p.openSubvol(src)
	if err != nil {
		return err
	}
	defer unix.Close(srcFd)
	err = snapCreate(dirfd, srcFd, dst, readonly)
	if err == unix.EEXIST {
		return rung.Errorf(rung.ErrExists, "%s already exists", dst)
	}
	if err != nil {
		return fmt.Errorf("snapshot %s to %s: %w", src, dst, err)
	}
	return p.finishCopy(ctx, src, dirfd, dst, readonly)
}

// finishCopy gives dst, a new snapshot or fork of src in dirfd, src's
// quota limit and, a fork, a sealed fs/. On failure it removes dst.
func (p *Pool) finishCopy(ctx context.Context, src string, dirfd int, dst string, readonly bool) error {
	// A snapshot carries the limit too, so that a fork of it inherits it;
	// an unlimited fork must not appear.
	err := p.copyLimit(src, dst)
	if err != nil {
		err = fmt.Errorf("copy quota of %s to %s: %w", src, dst, err)
	} else if !readonly {
		// A fork of a snapshot whose source was never sealed (made
		// before the seal, or imported: a send stream carries no inode
		// flags) must not start unsealed.
		if err = sealAt(dirfd, dst+"/fs"); err != nil && !errors.Is(err, unix.ENOENT) {
			err = fmt.Errorf("fork %s to %s: %w", src, dst, err)
		} else {
			err = nil
		}
	}
	if err != nil {
		if derr := p.destroy(dirfd, dst); derr != nil {
			p.log.WarnContext(ctx, "subvolume left for reconcile", "subvolume", dst, "err", derr)
		}
		return err
	}
	return nil
}

// List returns the names of all sandboxes and snapshots, sorted.
func (p *Pool) List(ctx context.Context) ([]string, error) {
	if err := p.check(ctx); err != nil {
		return nil, err
	}
	var names []string
	for _, dir := range []string{dirSandboxes, dirSnapshots} {
		ents, err := os.ReadDir(filepath.Join(p.mnt, dir))
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", dir, err)
		}
		for _, e := range ents {
			if checkName(e.Name()) == nil && e.IsDir() {
				names = append(names, e.Name())
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// Root opens the file view (fs/) of subvolume name. The caller closes it.
// Errors: [rung.ErrNotFound], [rung.ErrInvalid].
func (p *Pool) Root(name string) (*Root, error) {
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := p.stat(name); err != nil {
		return nil, err
	}
	dirfd, _ := p.dirOf(name)
	// Subvolumes made before fs/ was sealed get the seal on first use.
	// (A read-only snapshot cannot take it, and needs none.)
	if err := sealAt(dirfd, name+"/fs"); err != nil && !errors.Is(err, unix.EROFS) {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	return OpenRoot(filepath.Join(p.Path(name), "fs"))
}

// Sync commits the pool's current btrfs transaction and waits for it, so
// every Create, Delete and file write that returned before it is durable
// against power loss. Snapshot and Fork do not need it.
func (p *Pool) Sync(ctx context.Context) error {
	if err := p.check(ctx); err != nil {
		return err
	}
	if err := btrfsSync(p.sbxFd); err != nil {
		return fmt.Errorf("sync pool: %w", err)
	}
	return nil
}
