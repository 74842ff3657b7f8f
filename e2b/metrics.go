package e2b

import (
	"net/http"
	"strconv"
	"time"

	"rung.dev/rung"
)

// metricOut is one of E2B's SandboxMetric: the sandbox's container's usage
// at one sample (the controller samples running containers' cgroups).
type metricOut struct {
	Timestamp     time.Time `json:"timestamp"`
	TimestampUnix int64     `json:"timestampUnix"`
	CPUCount      int64     `json:"cpuCount"`
	CPUUsedPct    float64   `json:"cpuUsedPct"` // of all cpuCount CPUs, as E2B's
	MemUsed       int64     `json:"memUsed"`
	MemTotal      int64     `json:"memTotal"`
	DiskUsed      int64     `json:"diskUsed"` // -1 when the pool keeps no quota
	DiskTotal     int64     `json:"diskTotal"`
}

// metrics serves GET /sandboxes/{id}/metrics?start=&end= (Unix seconds,
// both optional): the samples of the sandbox's container taken in that
// window, oldest first. A running sandbox without a container (and no
// sample in the window) has one taken now, if the window holds now.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request, c caller) error {
	var window [2]time.Time
	for i, name := range []string{"start", "end"} {
		v := r.URL.Query().Get(name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 1e11 {
			return rung.Errorf(rung.ErrInvalid, "%s must be a Unix time in seconds", name)
		}
		window[i] = time.Unix(n, 0)
	}
	if !window[1].IsZero() {
		window[1] = window[1].Add(time.Second - 1) // the whole second named
	}
	sb, err := s.ctrl.Get(r.Context(), c.tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	u, err := s.ctrl.Usage(r.Context(), c.tenant, string(sb.ID), window[0], window[1])
	if err != nil {
		return err
	}
	cpus := max(1, (sb.Size.MilliCPU+999)/1000)
	out := make([]metricOut, 0, len(u.Samples))
	for _, smp := range u.Samples {
		out = append(out, metricOut{Timestamp: smp.Time.UTC(), TimestampUnix: smp.Time.Unix(), CPUCount: cpus,
			CPUUsedPct: smp.CPUPercent / float64(cpus), MemUsed: smp.MemoryBytes, MemTotal: sb.Size.MemoryBytes,
			DiskUsed: smp.DiskBytes, DiskTotal: sb.Size.DiskBytes}) // -1: unknown (no quota on the pool)
	}
	now := time.Now()
	if len(out) == 0 && sb.State == rung.StateReady && !paused(sb) &&
		!now.Before(window[0]) && (window[1].IsZero() || !now.After(window[1])) {
		// A running E2B sandbox whose commands have all run in-process
		// has no container, so no process uses CPU or memory, and the
		// sampler (which reads containers' cgroups) has nothing: its
		// sample is taken now, its disk read from the pool. E2B's VM
		// always has one; the SDK waits for a first sample.
		disk, err := s.ctrl.DiskUsed(r.Context(), c.tenant, string(sb.ID))
		if rung.Code(err) == rung.CodeUnavailable {
			disk, err = -1, nil
		}
		if err != nil {
			return err
		}
		out = append(out, metricOut{Timestamp: now.UTC(), TimestampUnix: now.Unix(), CPUCount: cpus,
			MemTotal: sb.Size.MemoryBytes, DiskUsed: disk, DiskTotal: sb.Size.DiskBytes})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
