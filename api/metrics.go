package api

import (
	"net/http"
	"strconv"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/usage"
	"rung.dev/rung/wire"
)

// metrics serves the daemon's Prometheus metrics (Config.Metrics) to an
// admin token.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request, _ caller) error {
	if s.cfg.Metrics == nil {
		return rung.Errorf(rung.ErrNotFound, "this server keeps no metrics")
	}
	s.cfg.Metrics.ServeHTTP(w, r)
	return nil
}

// sandboxMetrics returns a sandbox's usage samples from ?start= to
// ?end=.
func (s *Server) sandboxMetrics(w http.ResponseWriter, r *http.Request, c caller) error {
	start, err := timeParam(r, "start")
	if err != nil {
		return err
	}
	end, err := timeParam(r, "end")
	if err != nil {
		return err
	}
	u, err := s.ctrl.Usage(r.Context(), c.tenant, r.PathValue("id"), start, end)
	if err != nil {
		return err
	}
	out := wire.SandboxMetrics{Sandbox: u.Sandbox, IntervalMS: u.Interval.Milliseconds(), Samples: make([]wire.UsageSample, len(u.Samples))}
	for i, smp := range u.Samples {
		out.Samples[i] = usageOut(smp)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// currentUsage returns the newest sample of each of the caller's
// sandboxes whose container runs.
func (s *Server) currentUsage(w http.ResponseWriter, r *http.Request, c caller) error {
	cur, interval, err := s.ctrl.CurrentUsage(r.Context(), c.tenant)
	if err != nil {
		return err
	}
	out := wire.UsageList{IntervalMS: interval.Milliseconds(), Sandboxes: make([]wire.SandboxUsage, len(cur))}
	for i, u := range cur {
		out.Sandboxes[i] = wire.SandboxUsage{Sandbox: u.Sandbox.ID, Name: u.Sandbox.Name, State: u.Sandbox.State, Usage: usageOut(u.Sample)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func usageOut(smp usage.Sample) wire.UsageSample {
	return wire.UsageSample{Time: smp.Time.UTC(), CPUSeconds: smp.CPU.Seconds(), CPUPercent: smp.CPUPercent,
		MemoryBytes: smp.MemoryBytes, MemoryPeakBytes: smp.MemoryPeakBytes, DiskBytes: smp.DiskBytes}
}

// timeParam reads query parameter name as an RFC 3339 time or Unix
// seconds (as Prometheus's API takes them); absent is the zero time.
func timeParam(r *http.Request, name string) (time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f < 1e11 {
		return time.Unix(0, int64(f*1e9)), nil
	}
	return time.Time{}, rung.Errorf(rung.ErrInvalid, "%s=%q: want an RFC 3339 time or Unix seconds", name, clip(v))
}
