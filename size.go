package rung

import "fmt"

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

// DefaultPreset is the size of a sandbox created without one.
const DefaultPreset = "lite"

// SizeCaps bound the sizes a tenant may ask for. A zero field means no cap.
type SizeCaps struct {
	MaxMilliCPU    int64 `json:"max_milli_cpu"`
	MaxMemoryBytes int64 `json:"max_memory_bytes"`
	MaxDiskBytes   int64 `json:"max_disk_bytes"`
}

// Resolve turns a request (a preset name, or custom values) into a
// complete Size, and checks it against caps. A size above a cap is refused
// with [ErrPermission], never clamped; malformed input is [ErrInvalid].
func (s Size) Resolve(caps SizeCaps) (Size, error) {
	out := s
	if s.Preset != "" {
		p, ok := Presets[s.Preset]
		if !ok {
			return Size{}, Errorf(ErrInvalid, "unknown size preset %q", s.Preset)
		}
		if s.MilliCPU != 0 || s.MemoryBytes != 0 || s.DiskBytes != 0 {
			return Size{}, Errorf(ErrInvalid, "size preset %q cannot be combined with custom values", s.Preset)
		}
		out = p
	} else if s == (Size{}) {
		out = Presets[DefaultPreset]
	}
	if out.MilliCPU <= 0 || out.MemoryBytes <= 0 || out.DiskBytes <= 0 {
		return Size{}, Errorf(ErrInvalid, "custom size needs positive milli_cpu, memory_bytes and disk_bytes")
	}
	if out.MemoryBytes < 16*mib {
		return Size{}, Errorf(ErrInvalid, "memory_bytes %d is below the 16 MiB minimum", out.MemoryBytes)
	}
	over := func(what string, v, max int64) error {
		return Errorf(ErrPermission, "size %s %d is above this tenant's cap of %d", what, v, max)
	}
	switch {
	case caps.MaxMilliCPU > 0 && out.MilliCPU > caps.MaxMilliCPU:
		return Size{}, over("milli_cpu", out.MilliCPU, caps.MaxMilliCPU)
	case caps.MaxMemoryBytes > 0 && out.MemoryBytes > caps.MaxMemoryBytes:
		return Size{}, over("memory_bytes", out.MemoryBytes, caps.MaxMemoryBytes)
	case caps.MaxDiskBytes > 0 && out.DiskBytes > caps.MaxDiskBytes:
		return Size{}, over("disk_bytes", out.DiskBytes, caps.MaxDiskBytes)
	}
	return out, nil
}

func (s Size) String() string {
	if s.Preset != "" {
		return s.Preset
	}
	return fmt.Sprintf("%dm/%dMiB/%dMB", s.MilliCPU, s.MemoryBytes/mib, s.DiskBytes/1e6)
}
