package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The daemon's memory limit (rung serve --memory-limit) is the Go
// runtime's soft limit (debug.SetMemoryLimit): the garbage collector works
// harder as the heap nears it instead of letting garbage grow the process
// towards the kernel's OOM killer, which would end every tenant's execs at
// once. Half of it is the pool the isolate execs' memory budgets draw
// from (controller.Limits.IsolateMemoryBytes), so what execs hold stays
// well below it.

// memoryLimitShare is the part of the memory the daemon may use, by
// default, of the host's or of its cgroup's limit, whichever is lower: the
// rest is for the page cache, the containers (which have their own
// cgroups) and everything else on the host.
const memoryLimitShare = 0.75

// defaultMemoryLimit returns memoryLimitShare of the memory available to
// the daemon, or 0 when it cannot tell.
func defaultMemoryLimit() int64 {
	avail := hostMemory()
	if cg := cgroupMemoryMax(); cg > 0 && (avail == 0 || cg < avail) {
		avail = cg
	}
	return int64(float64(avail) * memoryLimitShare)
}

// hostMemory is MemTotal from /proc/meminfo, in bytes; 0 when unknown.
func hostMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// cgroupMemoryMax is the memory.max of the daemon's cgroup (v2), or of
// the nearest ancestor that sets one; 0 when none does.
func cgroupMemoryMax() int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	// cgroup v2: a single line "0::/path".
	_, path, ok := strings.Cut(strings.TrimSpace(string(b)), "::")
	if !ok || strings.Contains(path, "\n") {
		return 0
	}
	for dir := filepath.Join("/sys/fs/cgroup", path); strings.HasPrefix(dir, "/sys/fs/cgroup"); dir = filepath.Dir(dir) {
		v, err := os.ReadFile(filepath.Join(dir, "memory.max"))
		if err == nil {
			if n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err == nil && n > 0 {
				return n
			}
		}
		if dir == "/sys/fs/cgroup" {
			break
		}
	}
	return 0
}

// parseMemoryLimit reads a --memory-limit value: bytes, with an optional
// suffix K, M, G, T (powers of 1024, "KiB" etc. also accepted); "0" or
// "off" turns the limit off.
func parseMemoryLimit(s string) (int64, error) {
	if s == "off" || s == "0" {
		return 0, nil
	}
	t := strings.TrimSuffix(strings.TrimSuffix(s, "B"), "i")
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		case 'T', 't':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid size %q (want bytes with an optional K, M, G or T suffix, or off)", s)
	}
	if n*mult < 64<<20 {
		return 0, fmt.Errorf("%s is below the 64 MiB minimum", s)
	}
	return n * mult, nil
}
