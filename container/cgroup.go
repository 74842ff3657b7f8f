package container

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

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
