package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// Usage is a subvolume's space accounting, as of the last btrfs
// transaction commit (at most the commit interval, 30 s by default, old;
// [Pool.Sync] brings it up to date).
type Usage struct {
	// Bytes is the space charged to the subvolume. Under simple quotas
	// that is what it wrote itself (extents shared from the subvolume it
	// was forked from are charged to that one); under full qgroups it is
	// everything it references.
	Bytes int64
	// Exclusive is the space only this subvolume references.
	Exclusive int64
	// Limit is the hard limit in bytes, 0 for none.
	Limit int64
}

func (p *Pool) enableQuotas(mode string) error {
	switch mode {
	case QuotaOff:
		p.quota = QuotaOff
		return nil
	case QuotaAuto, QuotaSimple, QuotaFull:
	default:
		return rung.Errorf(rung.ErrInvalid, "unknown quota mode %q (want simple, full or off)", mode)
	}
	if cur := p.quotaMode(); cur != "" {
		// Already enabled (a re-opened pool, or a user's filesystem):
		// keep what is there rather than rebuilding the accounting.
		if mode != QuotaAuto && mode != cur {
			return rung.Errorf(rung.ErrConflict, "pool has %s quotas enabled, configuration asks for %s", cur, mode)
		}
		p.quota = cur
		return nil
	}
	if mode == QuotaAuto || mode == QuotaSimple {
		err := quotaCtl(p.sbxFd, quotaCtlEnableSimple)
		if err == nil {
			p.quota = QuotaSimple
			return nil
		}
		if mode == QuotaSimple {
			return rung.Errorf(rung.ErrUnavailable, "enable btrfs simple quotas (needs Linux 6.7+): %v", err)
		}
	}
	err := quotaCtl(p.sbxFd, quotaCtlEnable)
	if err == nil {
		p.quota = QuotaFull
		return nil
	}
	if mode == QuotaFull {
		return rung.Errorf(rung.ErrUnavailable, "enable btrfs quotas: %v", err)
	}
	p.log.Warn("storage pool without quotas: sandboxes can fill the pool", "err", err)
	p.quota = QuotaOff
	return nil
}

// quotaMode reads the filesystem's current quota mode from sysfs: ""
// (disabled), QuotaSimple or QuotaFull.
func (p *Pool) quotaMode() string {
	b, err := os.ReadFile(filepath.Join("/sys/fs/btrfs", p.fsid, "qgroups", "mode"))
	if err != nil {
		if _, err := os.Stat(filepath.Join("/sys/fs/btrfs", p.fsid, "qgroups")); err == nil {
			return QuotaFull // kernels before 6.7 have no mode file
		}
		return ""
	}
	switch strings.TrimSpace(string(b)) {
	case "squota":
		return QuotaSimple
	case "qgroup":
		return QuotaFull
	}
	return ""
}

// QuotaMode returns the pool's effective quota mechanism: [QuotaSimple],
// [QuotaFull] or [QuotaOff].
func (p *Pool) QuotaMode() string { return p.quota }

// SetQuota sets a hard limit of bytes on subvolume name; 0 removes the
// limit. Writes past it fail with EDQUOT, both in the isolate tier and in
// containers. It returns [rung.ErrUnavailable] when the pool has no
// quotas, [rung.ErrNotFound] and [rung.ErrInvalid] as usual.
func (p *Pool) SetQuota(ctx context.Context, name string, bytes int64) error {
	if err := p.check(ctx, name); err != nil {
		return err
	}
	if bytes < 0 {
		return rung.Errorf(rung.ErrInvalid, "negative quota %d", bytes)
	}
	if p.quota == QuotaOff {
		return rung.Errorf(rung.ErrUnavailable, "storage pool has quotas off")
	}
	fd, err := p.openSubvol(name)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := qgroupLimit(fd, 0, uint64(bytes)); err != nil {
		return fmt.Errorf("set quota of %s: %w", name, err)
	}
	return nil
}

// Usage returns the space accounting of subvolume name. Errors as
// [Pool.SetQuota].
func (p *Pool) Usage(ctx context.Context, name string) (Usage, error) {
	if err := p.check(ctx, name); err != nil {
		return Usage{}, err
	}
	if p.quota == QuotaOff {
		return Usage{}, rung.Errorf(rung.ErrUnavailable, "storage pool has quotas off")
	}
	dir, err := p.qgroupDir(name)
	if err != nil {
		return Usage{}, err
	}
	var u Usage
	for _, f := range []struct {
		file string
		v    *int64
	}{{"referenced", &u.Bytes}, {"exclusive", &u.Exclusive}, {"max_referenced", &u.Limit}} {
		if *f.v, err = readInt(filepath.Join(dir, f.file)); err != nil {
			return Usage{}, fmt.Errorf("usage of %s: %w", name, err)
		}
	}
	if u.Limit < 0 {
		u.Limit = 0 // (u64)-1: no limit
	}
	return u, nil
}

// UsedBytes returns what [Pool.Usage] returns as Bytes, alone: one
// counter read where Usage reads three, for the usage sampler, which
// reads it for every running sandbox every few seconds. Errors as
// [Pool.SetQuota].
func (p *Pool) UsedBytes(ctx context.Context, name string) (int64, error) {
	if err := p.check(ctx, name); err != nil {
		return 0, err
	}
	if p.quota == QuotaOff {
		return 0, rung.Errorf(rung.ErrUnavailable, "storage pool has quotas off")
	}
	dir, err := p.qgroupDir(name)
	if err != nil {
		return 0, err
	}
	n, err := readInt(filepath.Join(dir, "referenced"))
	if err != nil {
		return 0, fmt.Errorf("usage of %s: %w", name, err)
	}
	return n, nil
}

// qgroupDir returns the sysfs directory of name's level-0 qgroup.
func (p *Pool) qgroupDir(name string) (string, error) {
	fd, err := p.openSubvol(name)
	if err != nil {
		return "", err
	}
	id, err := subvolID(fd)
	unix.Close(fd)
	if err != nil {
		return "", fmt.Errorf("subvolume id of %s: %w", name, err)
	}
	return p.qgroupDirID(id), nil
}

// qgroupDirID returns the sysfs directory of subvolume id's level-0
// qgroup. The kernel exports its in-memory counters there (Linux 5.9+).
func (p *Pool) qgroupDirID(id uint64) string {
	return filepath.Join("/sys/fs/btrfs", p.fsid, "qgroups", "0_"+strconv.FormatUint(id, 10))
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "none" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, err
	}
	return int64(v), nil
}

// copyLimit gives dst the same limit as src, so that a fork of a limited
// sandbox is limited too.
func (p *Pool) copyLimit(src, dst string) error {
	if p.quota == QuotaOff {
		return nil
	}
	dir, err := p.qgroupDir(src)
	if err != nil {
		return err
	}
	limit, err := readInt(filepath.Join(dir, "max_referenced"))
	if errors.Is(err, os.ErrNotExist) || limit <= 0 {
		return nil
	}
	if err != nil {
		return err
	}
	fd, err := p.openSubvol(dst)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return qgroupLimit(fd, 0, uint64(limit))
}
