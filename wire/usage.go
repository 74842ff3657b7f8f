package wire

import (
	"time"

	"rung.dev/rung"
)

// UsageSample is one sample of a sandbox's resource use, taken while its
// container runs (every interval_ms, 5 seconds by default).
type UsageSample struct {
	Time time.Time `json:"time"`
	// CPUSeconds is the CPU time the container has used since it
	// started; CPUPercent the share of one core it used since the
	// previous sample (200 is two cores busy; 0 in a container's first).
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUPercent float64 `json:"cpu_percent"`
	// MemoryBytes is the memory charged to the container now (page cache
	// included, as its memory limit counts it); MemoryPeakBytes the most
	// at once since it started.
	MemoryBytes     int64 `json:"memory_bytes"`
	MemoryPeakBytes int64 `json:"memory_peak_bytes"`
	// DiskBytes is what the sandbox's files take against its disk size;
	// -1 when the server's pool keeps no quotas.
	DiskBytes int64 `json:"disk_bytes"`
}

// SandboxMetrics is GET /v1/sandboxes/{id}/metrics: the sandbox's
// samples from start to end, oldest first.
type SandboxMetrics struct {
	Sandbox    rung.SandboxID `json:"sandbox"`
	IntervalMS int64          `json:"interval_ms"` // between two samples; 0 when the server samples nothing
	Samples    []UsageSample  `json:"samples"`
}

// SandboxUsage is one sandbox's newest sample in a [UsageList].
type SandboxUsage struct {
	Sandbox rung.SandboxID `json:"sandbox"`
	Name    string         `json:"name,omitempty"`
	State   rung.State     `json:"state"`
	Usage   UsageSample    `json:"usage"`
}

// UsageList is GET /v1/usage: the newest sample of each of the caller's
// sandboxes whose container runs, busiest CPU first.
type UsageList struct {
	IntervalMS int64          `json:"interval_ms"`
	Sandboxes  []SandboxUsage `json:"sandboxes"`
}
