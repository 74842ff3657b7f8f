package container

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"rung.dev/rung"
)

// cgroupPrimer takes the kernel's cgroup migration lock ahead of a
// container start. The first migration after a quiet spell (the runtime
// writing its init's pid to cgroup.procs) waits for an RCU grace period
// before it gets the lock: 6-15 ms measured here, a third of a cold start.
// Once one writer has waited, writers in the next few milliseconds do not.
// So Start has the daemon "move" itself into the cgroup it is already in,
// which takes the same lock and moves nothing, while it mounts the
// overlay and the runtime starts: the wait overlaps that work instead of
// following it.
type cgroupPrimer struct {
	busy atomic.Bool // a priming write is in flight
}

// prime starts one priming write unless one is in flight. It never
// blocks; a failure only means the runtime waits as it would have.
func (p *cgroupPrimer) prime() {
	if !p.busy.CompareAndSwap(false, true) {
		return
	}
	go func() { // ends after one cgroup write (at most a grace period)
		defer p.busy.Store(false)
		takeCgroupLock()
	}()
}

// takeCgroupLock writes "0" (the writing process itself) to the
// cgroup.procs of the cgroup the process is in: a move that moves nothing
// but takes the migration lock.
func takeCgroupLock() error {
	procs, err := ownCgroupProcs()
	if err != nil {
		return err
	}
	return os.WriteFile(procs, []byte("0"), 0)
}

// ownCgroupProcs is the cgroup.procs file of the daemon's own cgroup in
// the v1 memory hierarchy (the one the manager uses), read afresh each
// time so that a daemon moved by its supervisor is never moved back.
func ownCgroupProcs() (string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() { // lines are ID:CONTROLLERS:PATH
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) == 3 && parts[1] == "memory" {
			return filepath.Join("/sys/fs/cgroup/memory", parts[2], "cgroup.procs"), nil
		}
	}
	return "", errors.New("no v1 memory cgroup")
}

// limitCPU applies lim to the container's cpu cgroup. The bundle carries
// no CPU quota so that the agent's own start (a Go binary faulting in its
// pages) is not throttled; no command runs before this.
func limitCPU(id rung.SandboxID, lim cpuLimit) error {
	dir := filepath.Join("/sys/fs/cgroup/cpu/rung", string(id))
	for _, f := range []struct {
		name  string
		value int64
	}{{"cpu.cfs_period_us", lim.period}, {"cpu.cfs_quota_us", lim.quota}, {"cpu.cfs_burst_us", lim.burst}} {
		err := os.WriteFile(filepath.Join(dir, f.name), []byte(strconv.FormatInt(f.value, 10)), 0)
		if err != nil && !(f.name == "cpu.cfs_burst_us" && errors.Is(err, fs.ErrNotExist)) { // burst: Linux 5.14+
			return fmt.Errorf("cpu limit: %w", err)
		}
	}
	return nil
}

// cgroupFS is where the host mounts its cgroup hierarchies: one directory
// per v1 hierarchy (and "unified", the v2 one, on a hybrid host), or the
// v2 hierarchy itself on a v2-only host.
const cgroupFS = "/sys/fs/cgroup"

// staleCgroupAge is how long a sandbox's cgroups must have been left
// unchanged before the sweep of strangers' cgroups may remove them. A
// runtime makes a cgroup directory and only then moves its init in, so a
// young empty cgroup may be a start in progress (another manager's, or
// another daemon's).
const staleCgroupAge = time.Minute

// rungCgroupDirs returns the "rung" directory (the parent of every
// container's cgroup, see buildSpec) of each mounted hierarchy that has
// one. A hierarchy reachable under several names (Debian mounts
// cpu,cpuacct once and links cpu and cpuacct to it) is listed once: the
// directories are told apart by device and inode.
func rungCgroupDirs() []string {
	cands := []string{filepath.Join(cgroupFS, "rung")}
	ents, _ := os.ReadDir(cgroupFS)
	for _, e := range ents {
		cands = append(cands, filepath.Join(cgroupFS, e.Name(), "rung"))
	}
	type key struct{ dev, ino uint64 }
	seen := map[key]bool{}
	var dirs []string
	for _, d := range cands {
		var st unix.Stat_t
		if unix.Stat(d, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		if k := (key{st.Dev, st.Ino}); !seen[k] {
			seen[k] = true
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// cgroupTree is one sandbox's cgroups, in every hierarchy.
type cgroupTree struct {
	dirs   []string  // children before their parents
	busy   bool      // some cgroup among them holds a process
	latest time.Time // the newest modification time among them
}

// add adds dir and the cgroups below it to t.
func (t *cgroupTree) add(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() { // runc and crun may nest cgroups under the container's
			if err := t.add(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return err
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	t.busy = t.busy || len(bytes.TrimSpace(procs)) > 0
	if info.ModTime().After(t.latest) {
		t.latest = info.ModTime()
	}
	t.dirs = append(t.dirs, dir)
	return nil
}

// removeCgroups removes sandbox id's cgroups under parents (see
// [rungCgroupDirs]), children first, and reports whether it did. It
// removes none of them while any one, in any hierarchy, holds a process:
// a runtime may leave a live container's cgroup empty in a hierarchy it
// does not use. Nor, when minAge > 0, if any changed less than minAge ago.
// Cgroups that vanish or fill up meanwhile (another sweep, a runtime
// moving a process in: rmdir fails with EBUSY) are left to their owner.
func removeCgroups(parents []string, id rung.SandboxID, minAge time.Duration) (bool, error) {
	var t cgroupTree
	for _, p := range parents {
		dir := filepath.Join(p, string(id))
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := t.add(dir); errors.Is(err, fs.ErrNotExist) {
			return false, nil // changing under us: someone else is at work
		} else if err != nil {
			return false, fmt.Errorf("cgroups of %s: %w", id, err)
		}
	}
	if len(t.dirs) == 0 || t.busy || minAge > 0 && time.Since(t.latest) < minAge {
		return false, nil
	}
	for _, d := range t.dirs {
		err := unix.Rmdir(d)
		switch {
		case err == nil || err == unix.ENOENT:
		case err == unix.EBUSY:
			return false, nil
		default:
			return false, fmt.Errorf("remove cgroup %s: %w", d, err)
		}
	}
	return true, nil
}

// sweepCgroups removes the cgroups of every sandbox, in every hierarchy,
// that no process uses and that nobody has changed for
// [staleCgroupAge], except those of the sandboxes keep names. This is
// safe while other managers and daemons run containers under the same
// parent: an empty cgroup holds no live container, and a young one may be
// a start in progress. It returns the sandboxes whose cgroups it removed.
func sweepCgroups(keep func(rung.SandboxID) bool) ([]rung.SandboxID, error) {
	parents := rungCgroupDirs()
	ids := map[rung.SandboxID]bool{}
	for _, p := range parents {
		ents, _ := os.ReadDir(p)
		for _, e := range ents {
			if id := rung.SandboxID(e.Name()); e.IsDir() && id.Valid() && !keep(id) {
				ids[id] = true
			}
		}
	}
	var removed []rung.SandboxID
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		ok, err := removeCgroups(parents, id, staleCgroupAge)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			removed = append(removed, id)
		}
	}
	return removed, errors.Join(errs...)
}
