package rung

import (
	"cmp"
	"fmt"
	"math/bits"
)

// Size is the resources a sandbox may use. MilliCPU is thousandths of a
// vCPU; MemoryBytes and DiskBytes are bytes.
type Size struct {
	Preset      string `json:"preset,omitempty"`
	MilliCPU    int64  `json:"milli_cpu"`
	MemoryBytes int64  `json:"memory_bytes"`
	DiskBytes   int64  `json:"disk_bytes"`
}

const (
	mib = 1 << 20
	gib = 1 << 30
	gb  = 1000 * 1000 * 1000
)

// Presets are the named sizes (Cloudflare Containers' figures).
var Presets = map[string]Size{
	"lite":       {Preset: "lite", MilliCPU: 62, MemoryBytes: 256 * mib, DiskBytes: 2 * gb},
	"basic":      {Preset: "basic", MilliCPU: 250, MemoryBytes: 1 * gib, DiskBytes: 4 * gb},
	"standard-1": {Preset: "standard-1", MilliCPU: 500, MemoryBytes: 4 * gib, DiskBytes: 8 * gb},
	"standard-2": {Preset: "standard-2", MilliCPU: 1000, MemoryBytes: 6 * gib, DiskBytes: 12 * gb},
	"standard-3": {Preset: "standard-3", MilliCPU: 2000, MemoryBytes: 8 * gib, DiskBytes: 16 * gb},
	"standard-4": {Preset: "standard-4", MilliCPU: 4000, MemoryBytes: 12 * gib, DiskBytes: 20 * gb},
}

// DefaultPreset is the size of a sandbox created without one: 2 vCPU
// (E2B's default too), 8 GiB memory, 16 GB disk, all limits rather than
// reservations. Agents' commands come in bursts (a python3 or node start,
// a build) that a fractional CPU throttles: at lite's 62 millicpu a warm
// `true` took 9 ms p50 and 195 ms p99 and python3 seconds to start, at
// one vCPU or more 3.7 ms and 6.6 ms (issue 11). lite stays a preset.
const DefaultPreset = "standard-3"

// Bounds every size must keep whatever the policy, so that no later
// arithmetic (cgroup quotas in microseconds, byte counts) can overflow.
const (
	MinMemoryBytes = 16 * mib
	MaxMilliCPU    = 1_000_000 // 1000 vCPUs
	MaxSizeBytes   = 1 << 50   // 1 PiB, for memory and disk alike
)

// SizePolicy bounds the sizes one tenant may ask for. A zero field means
// no bound. The memory-per-vCPU bounds are bytes of memory per whole vCPU
// (1000 milli-CPU): MinMemoryPerVCPU 1 GiB refuses 2 vCPUs with 1 GiB.
type SizePolicy struct {
	MaxMilliCPU      int64 `json:"max_milli_cpu"`
	MaxMemoryBytes   int64 `json:"max_memory_bytes"`
	MaxDiskBytes     int64 `json:"max_disk_bytes"`
	MinMemoryPerVCPU int64 `json:"min_memory_per_vcpu_bytes"`
	MaxMemoryPerVCPU int64 `json:"max_memory_per_vcpu_bytes"`
}

// Resolve turns a request (a preset name, or custom values) into a
// complete Size and checks it against policy p. Presets are checked like
// custom values. A size outside the policy is refused with
// [ErrPermission], never clamped, by a message naming the bound and the
// value; malformed input (unknown preset, a preset mixed with custom
// values, a value not positive or out of range) is [ErrInvalid].
func (s Size) Resolve(p SizePolicy) (Size, error) {
	out := s
	if s.Preset != "" {
		ps, ok := Presets[s.Preset]
		if !ok {
			return Size{}, Errorf(ErrInvalid, "unknown size preset %q", s.Preset)
		}
		if s.MilliCPU != 0 || s.MemoryBytes != 0 || s.DiskBytes != 0 {
			return Size{}, Errorf(ErrInvalid, "size preset %q cannot be combined with custom values", s.Preset)
		}
		out = ps
	} else if s == (Size{}) {
		out = Presets[DefaultPreset]
	}
	if err := out.check(); err != nil {
		return Size{}, err
	}
	if err := p.Check(out); err != nil {
		return Size{}, err
	}
	return out, nil
}

// check reports a size that no policy could allow, as [ErrInvalid].
func (s Size) check() error {
	if s.MilliCPU <= 0 || s.MemoryBytes <= 0 || s.DiskBytes <= 0 {
		return Errorf(ErrInvalid, "custom size needs positive milli_cpu, memory_bytes and disk_bytes")
	}
	if s.MemoryBytes < MinMemoryBytes {
		return Errorf(ErrInvalid, "memory_bytes %d is below the 16 MiB minimum", s.MemoryBytes)
	}
	if s.MilliCPU > MaxMilliCPU {
		return Errorf(ErrInvalid, "milli_cpu %d is out of range (at most %d)", s.MilliCPU, MaxMilliCPU)
	}
	for _, v := range []struct {
		name string
		n    int64
	}{{"memory_bytes", s.MemoryBytes}, {"disk_bytes", s.DiskBytes}} {
		if v.n > MaxSizeBytes {
			return Errorf(ErrInvalid, "%s %d is out of range (at most %d)", v.name, v.n, int64(MaxSizeBytes))
		}
	}
	return nil
}

// Check returns nil when p allows s, and otherwise an error wrapping
// [ErrPermission] that names the first bound s breaks, its value and
// s's. s must have positive fields (as [Size.Resolve] ensures).
func (p SizePolicy) Check(s Size) error {
	what := "size"
	if s.Preset != "" {
		what = "size " + s.Preset
	}
	over := func(field string, v, max int64, unit func(int64) string) error {
		return Errorf(ErrPermission, "%s: %s %s is above this tenant's maximum %s", what, field, unit(v), unit(max))
	}
	switch {
	case p.MaxMilliCPU > 0 && s.MilliCPU > p.MaxMilliCPU:
		return over("milli_cpu", s.MilliCPU, p.MaxMilliCPU, plain)
	case p.MaxMemoryBytes > 0 && s.MemoryBytes > p.MaxMemoryBytes:
		return over("memory_bytes", s.MemoryBytes, p.MaxMemoryBytes, bytesText)
	case p.MaxDiskBytes > 0 && s.DiskBytes > p.MaxDiskBytes:
		return over("disk_bytes", s.DiskBytes, p.MaxDiskBytes, bytesText)
	}
	// memory/vCPU against a bound b per vCPU: memory*1000 against
	// b*milli_cpu, in 128 bits so that no value can overflow.
	ratio := func(b int64) int {
		mh, ml := bits.Mul64(uint64(s.MemoryBytes), 1000)
		bh, bl := bits.Mul64(uint64(b), uint64(s.MilliCPU))
		if mh != bh {
			return cmp.Compare(mh, bh)
		}
		return cmp.Compare(ml, bl)
	}
	perVCPU := fmt.Sprintf("memory_bytes %s for milli_cpu %d", bytesText(s.MemoryBytes), s.MilliCPU)
	switch {
	case p.MinMemoryPerVCPU > 0 && ratio(p.MinMemoryPerVCPU) < 0:
		return Errorf(ErrPermission, "%s: %s is below this tenant's minimum of %s per vCPU", what, perVCPU, bytesText(p.MinMemoryPerVCPU))
	case p.MaxMemoryPerVCPU > 0 && ratio(p.MaxMemoryPerVCPU) > 0:
		return Errorf(ErrPermission, "%s: %s is above this tenant's maximum of %s per vCPU", what, perVCPU, bytesText(p.MaxMemoryPerVCPU))
	}
	return nil
}

func plain(n int64) string { return fmt.Sprint(n) }

// bytesText writes n as the API takes it, with a reading aid for
// people: "4294967296 (4 GiB)", "2000000000 (2 GB)", "1234".
func bytesText(n int64) string {
	switch {
	case n == 0:
	case n%gib == 0:
		return fmt.Sprintf("%d (%d GiB)", n, n/gib)
	case n%gb == 0:
		return fmt.Sprintf("%d (%d GB)", n, n/gb)
	case n%mib == 0:
		return fmt.Sprintf("%d (%d MiB)", n, n/mib)
	}
	return fmt.Sprint(n)
}

func (s Size) String() string {
	if s.Preset != "" {
		return s.Preset
	}
	return fmt.Sprintf("%dm/%dMiB/%dMB", s.MilliCPU, s.MemoryBytes/mib, s.DiskBytes/1e6)
}
