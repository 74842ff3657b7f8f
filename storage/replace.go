package storage

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// rollbackMark separates the parts of a rollback's staging name,
// "<sbx>.rb.<snp>.<uuid of the sandbox's subvolume before>": enough for
// Reconcile to tell, after a crash, whether the exchange happened (the
// sandbox's subvolume no longer has that uuid) and to say which
// snapshot it was for.
const rollbackMark = ".rb."

// Replace puts a writable snapshot of snapshot snap in place of sandbox
// name's subvolume, atomically: the new subvolume is made in staging/ (with
// the sandbox's quota limit and its fs/ sealed) and exchanged with the old
// one in one renameat2(RENAME_EXCHANGE), so that at every instant name is
// either the old subvolume or the new one, whole. The old one waits in
// staging/ until the caller, having recorded the outcome, calls commit,
// which removes it (a failure there is logged and left for Reconcile).
// After a crash, Reconcile reports which side won (see
// [ReconcileReport].Rollbacks). The caller stops whatever uses the
// subvolume (the sandbox's container) first. Errors: [rung.ErrNotFound]
// for a missing sandbox or snapshot, [rung.ErrInvalid] for bad names.
func (p *Pool) Replace(ctx context.Context, name, snap string) (commit func(), err error) {
	if err := p.check(ctx, name, snap); err != nil {
		return nil, err
	}
	if err := wantKind(name, sandboxPrefix, "sandbox"); err != nil {
		return nil, err
	}
	if err := wantKind(snap, snapshotPrefix, "snapshot"); err != nil {
		return nil, err
	}
	if err := p.stat(snap); err != nil {
		return nil, err
	}
	cur, err := p.openSubvol(name)
	if err != nil {
		return nil, err
	}
	info, err := subvolInfo(cur)
	unix.Close(cur)
	if err != nil {
		return nil, fmt.Errorf("replace %s: %w", name, err)
	}
	old, _ := parseUUID(info.UUID)
	staged := name + rollbackMark + snap + "." + hex.EncodeToString(old[:])
	if err := p.stageFork(ctx, snap, name, staged); err != nil {
		return nil, fmt.Errorf("replace %s with %s: %w", name, snap, err)
	}
	if err := unix.Renameat2(p.stageFd, staged, p.sbxFd, name, unix.RENAME_EXCHANGE); err != nil {
		if derr := p.destroy(p.stageFd, staged); derr != nil {
			p.log.WarnContext(ctx, "staging subvolume left for reconcile", "subvolume", staged, "err", derr)
		}
		if err == unix.ENOENT {
			return nil, rung.Errorf(rung.ErrNotFound, "%s not found", name)
		}
		return nil, fmt.Errorf("replace %s with %s: exchange: %w", name, snap, err)
	}
	return func() {
		// Renamed first to a plain staging name, so that a crash during
		// the delete is not reported again as a rollback to recover.
		plain := stagingName(name)
		if err := unix.Renameat2(p.stageFd, staged, p.stageFd, plain, unix.RENAME_NOREPLACE); err != nil {
			p.log.WarnContext(ctx, "replaced subvolume left for reconcile", "subvolume", staged, "err", err)
			return
		}
		if err := p.destroy(p.stageFd, plain); err != nil {
			p.log.WarnContext(ctx, "replaced subvolume left for reconcile", "subvolume", plain, "err", err)
		}
	}, nil
}

// stageFork makes staging/staged a writable snapshot of snap, limited
// like sandbox limitOf and with its fs/ sealed. On failure it removes
// what it made.
func (p *Pool) stageFork(ctx context.Context, snap, limitOf, staged string) error {
	took, err := p.takeSpare(snap, p.stageFd, staged) // spare.go: no commit
	if err != nil {
		return err
	}
	if !took {
		src, err := p.openSubvol(snap)
		if err != nil {
			return err
		}
		err = snapCreate(p.stageFd, src, staged, false)
		unix.Close(src)
		if err != nil {
			return err
		}
	}
	fd, err := unix.Openat(p.stageFd, staged, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		err = p.copyLimitTo(limitOf, fd)
		if err == nil {
			err = sealFS(fd)
		}
		unix.Close(fd)
	}
	if err != nil {
		if derr := p.destroy(p.stageFd, staged); derr != nil {
			p.log.WarnContext(ctx, "staging subvolume left for reconcile", "subvolume", staged, "err", derr)
		}
	}
	return err
}

// copyLimitTo gives the subvolume open at fd the quota limit of src.
func (p *Pool) copyLimitTo(src string, fd int) error {
	if p.quota == QuotaOff {
		return nil
	}
	limit, err := p.limit(src)
	if err != nil || limit <= 0 {
		return err
	}
	return qgroupLimit(fd, 0, uint64(limit))
}

// sealFS seals the fs/ directory of the subvolume open at fd (seal.go);
// a subvolume without one (not a sandbox's) is left as it is.
func sealFS(fd int) error {
	err := sealAt(fd, "fs")
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// parseUUID parses the canonical text form of a UUID.
func parseUUID(s string) ([16]byte, error) {
	var u [16]byte
	h := strings.ReplaceAll(s, "-", "")
	if len(h) != 32 {
		return u, fmt.Errorf("bad uuid %q", s)
	}
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, fmt.Errorf("bad uuid %q", s)
	}
	return u, nil
}

// Rollback is a rollback ([Pool.Replace]) a crash interrupted, as
// Reconcile found it.
type Rollback struct {
	Sandbox  string `json:"sandbox"`
	Snapshot string `json:"snapshot"`
	// Done says the exchange had happened: the sandbox has the
	// snapshot's files. Otherwise it kept its own.
	Done bool `json:"done"`
}

// parseRollback recognises a rollback's staging name and says whether its
// exchange happened: the sandbox's subvolume no longer has the uuid it
// had before.
func (p *Pool) parseRollback(entry string) (Rollback, bool) {
	sbx, rest, ok := strings.Cut(entry, rollbackMark)
	if !ok || checkName(sbx) != nil || wantKind(sbx, sandboxPrefix, "") != nil {
		return Rollback{}, false
	}
	snp, olduuid, ok := strings.Cut(rest, ".")
	if !ok || checkName(snp) != nil || wantKind(snp, snapshotPrefix, "") != nil || len(olduuid) != 32 {
		return Rollback{}, false
	}
	rb := Rollback{Sandbox: sbx, Snapshot: snp}
	fd, err := p.openSubvol(sbx)
	if err != nil {
		return rb, true // the sandbox is gone: nothing was replaced
	}
	info, err := subvolInfo(fd)
	unix.Close(fd)
	if err == nil {
		cur, _ := parseUUID(info.UUID)
		rb.Done = hex.EncodeToString(cur[:]) != olduuid
	}
	return rb, true
}

// limit returns subvolume name's quota limit in bytes, 0 for none.
func (p *Pool) limit(name string) (int64, error) {
	dir, err := p.qgroupDir(name)
	if err != nil {
		return 0, err
	}
	l, err := readInt(filepath.Join(dir, "max_referenced"))
	if errors.Is(err, os.ErrNotExist) || l < 0 {
		return 0, nil // no qgroup yet, or (u64)-1: no limit
	}
	return l, err
}
