package container

import (
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
	"rung.dev/rung"
)

// Usage is what a sandbox's container has used, as its cgroups count it.
type Usage struct {
	CPU             time.Duration // CPU time of its processes since it started (cpuacct.usage)
	MemoryBytes     int64         // memory charged now, page cache included (memory.usage_in_bytes)
	MemoryPeakBytes int64         // the most charged at once since it started (memory.max_usage_in_bytes)
}

// UsageReader reads containers' usage from their cgroup v1 files, the
// only cgroup layout the manager runs on (see limitCPU). It costs three
// small reads of kernel counters per container and allocates nothing
// after the first. It is not safe for concurrent use.
type UsageReader struct {
	cpu, mem string // the cpuacct and memory hierarchies' parent directories
	buf      [32]byte
}

// NewUsageReader returns a reader of the containers whose cgroups are
// under parent in each hierarchy: "rung" for a [Manager]'s (cgroups
// /rung/<sandbox>, see buildSpec).
func NewUsageReader(parent string) *UsageReader {
	return &UsageReader{cpu: filepath.Join(cgroupFS, "cpuacct", parent), mem: filepath.Join(cgroupFS, "memory", parent)}
}

// Read returns sandbox id's usage; an error when its cgroups are missing
// (no container, or one that just stopped).
func (r *UsageReader) Read(id rung.SandboxID) (Usage, error) {
	cpu, err := r.readInt(r.cpu, id, "cpuacct.usage")
	if err != nil {
		return Usage{}, err
	}
	mem, err := r.readInt(r.mem, id, "memory.usage_in_bytes")
	if err != nil {
		return Usage{}, err
	}
	peak, err := r.readInt(r.mem, id, "memory.max_usage_in_bytes")
	if err != nil {
		return Usage{}, err
	}
	return Usage{CPU: time.Duration(cpu), MemoryBytes: mem, MemoryPeakBytes: peak}, nil
}

// readInt reads the one number in file of sandbox id's cgroup under dir,
// with raw system calls into r.buf: os.ReadFile would allocate a File
// and a buffer sized by a stat for every read.
func (r *UsageReader) readInt(dir string, id rung.SandboxID, file string) (int64, error) {
	path := dir + "/" + string(id) + "/" + file
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("usage of %s: %s: %w", id, file, err)
	}
	n, err := unix.Read(fd, r.buf[:])
	unix.Close(fd)
	if err != nil {
		return 0, fmt.Errorf("usage of %s: %s: %w", id, file, err)
	}
	v, ok := parseCounter(r.buf[:n])
	if !ok {
		return 0, fmt.Errorf("usage of %s: %s: not a number: %q", id, file, r.buf[:n])
	}
	return v, nil
}

// parseCounter parses a cgroup counter: decimal digits and a newline.
func parseCounter(b []byte) (int64, bool) {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	if len(b) == 0 || len(b) > 18 { // 18 digits cannot overflow an int64 (31 years of CPU in ns)
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}
