package container

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// ProbeResult is how one runtime did in [Probe].
type ProbeResult struct {
	Runtime string        `json:"runtime"`
	OK      bool          `json:"ok"`
	Error   string        `json:"error,omitempty"`
	Median  time.Duration `json:"median"` // of the timed runs of `run` of a container running /bin/true
}

// Probe runs a container executing /bin/true from rootfs (read-only)
// with each candidate a few times, with the namespaces and cgroup limits
// rung uses, and returns the fastest candidate that worked, with every
// result. It fails only when no candidate works.
func Probe(ctx context.Context, rootfs, stateDir string, candidates []Runtime) (Runtime, []ProbeResult, error) {
	var results []ProbeResult
	best := -1
	for i, rt := range candidates {
		res := probeOne(ctx, rootfs, filepath.Join(stateDir, "probe-"+rt.Name), rt)
		results = append(results, res)
		if res.OK && (best < 0 || res.Median < results[best].Median) {
			best = i
		}
	}
	if best < 0 {
		return Runtime{}, results, fmt.Errorf("no OCI runtime works on this host: %+v", results)
	}
	return candidates[best], results, nil
}

func probeOne(ctx context.Context, rootfs, dir string, rt Runtime) ProbeResult {
	res := ProbeResult{Runtime: rt.Name}
	if _, err := exec.LookPath(rt.Binary); err != nil {
		res.Error = err.Error()
		return res
	}
	defer os.RemoveAll(dir)
	rt.Root = filepath.Join(dir, "state")
	if err := os.MkdirAll(rt.Root, 0o700); err != nil {
		res.Error = err.Error()
		return res
	}
	memory, pids := int64(64<<20), int64(64)
	spec := &specs.Spec{
		Version: "1.0.2",
		Root:    &specs.Root{Path: rootfs, Readonly: true},
		Process: &specs.Process{Args: []string{"/bin/true"}, Cwd: "/", Env: []string{"PATH=/bin"}},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "mode=755"}},
		},
		Linux: &specs.Linux{
			Resources: &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &memory}, Pids: &specs.LinuxPids{Limit: &pids}},
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace}, {Type: specs.MountNamespace},
			},
		},
	}
	b, _ := json.Marshal(spec)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		res.Error = err.Error()
		return res
	}
	var times []time.Duration
	for i := range 4 {
		spec.Linux.CgroupsPath = fmt.Sprintf("/rung/probe-%s-%d", rt.Name, i)
		b, _ := json.Marshal(spec)
		os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600)
		t0 := time.Now()
		logPath := filepath.Join(dir, "log")
		logf, err := os.Create(logPath)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		cmd := rt.command(ctx, "run", "--bundle", dir, fmt.Sprintf("probe-%d", i))
		cmd.Stdout, cmd.Stderr = logf, logf
		err = cmd.Run()
		logf.Close()
		if err != nil {
			msg, _ := os.ReadFile(logPath)
			res.Error = fmt.Sprintf("%v: %s", err, lastLine(msg))
			return res
		}
		if i > 0 { // the first run warms caches
			times = append(times, time.Since(t0))
		}
	}
	slices.Sort(times)
	res.OK, res.Median = true, times[len(times)/2]
	return res
}
