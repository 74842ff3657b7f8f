package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
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

// Probe runs a container executing /bin/true from rootfs (read-only, a
// busybox image) with each candidate a few times, with the namespaces,
// cgroup limits and seccomp filter rung uses, and returns the fastest
// candidate that worked, with every result. Before timing it checks that
// the filter is installed (Seccomp: 2 in /proc/self/status); a runtime
// that ignores rung's compiled program ([Runtime.SeccompBPF]) is given the
// profile to compile instead, and one that installs no filter at all does
// not work. A lone candidate is only checked, not timed: there is nothing
// to choose (a restart keeping its containers' runtime). It fails only
// when no candidate works.
func Probe(ctx context.Context, rootfs, stateDir string, candidates []Runtime) (Runtime, []ProbeResult, error) {
	var results []ProbeResult
	var best Runtime
	found := -1
	for _, cand := range candidates {
		rt, res := probeOne(ctx, rootfs, filepath.Join(stateDir, "probe-"+cand.Name), cand, len(candidates) > 1)
		// The probe's state directory is its own: the caller's
		// containers live under the root it configured (TestProbe).
		rt.Root = cand.Root
		results = append(results, res)
		if res.OK && (found < 0 || res.Median < results[found].Median) {
			best, found = rt, len(results)-1
		}
	}
	if found < 0 {
		return Runtime{}, results, fmt.Errorf("no OCI runtime works on this host: %+v", results)
	}
	return best, results, nil
}

// seccompCheck exits 0 in a container whose process runs under a seccomp
// filter and noFilterExit in one whose process does not: a status of its
// own, since a runtime that fails to start the container exits 1 too.
var seccompCheck = []string{"/bin/sh", "-c", `grep -q "^Seccomp:.2" /proc/self/status || exit ` + strconv.Itoa(noFilterExit)}

const noFilterExit = 75

// probes numbers this process's probes: with the pid it names each
// probe's cgroup, which (unlike its state directory) is global to the
// host. Two probes once shared /rung/probe-crun-seccomp, a daemon's
// and a test's starting at once; one runtime's cleanup removed the
// cgroup the other was starting in, and its failure was taken for a
// runtime ignoring the compiled program.
var probes atomic.Uint64

// probeOne checks rt and, when timed (there is a choice to make), times
// it; otherwise the check's own run is the median.
func probeOne(ctx context.Context, rootfs, dir string, rt Runtime, timed bool) (Runtime, ProbeResult) {
	res := ProbeResult{Runtime: rt.Name}
	if _, err := exec.LookPath(rt.Binary); err != nil {
		res.Error = err.Error()
		return rt, res
	}
	defer os.RemoveAll(dir)
	rt.Root = filepath.Join(dir, "state")
	if err := os.MkdirAll(rt.Root, 0o700); err != nil {
		res.Error = err.Error()
		return rt, res
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
	cgroup := fmt.Sprintf("/rung/probe-%d-%d-", os.Getpid(), probes.Add(1))
	run := func(id string, args []string) error {
		spec.Process.Args = args
		withSeccomp(spec, rt)
		spec.Linux.CgroupsPath = cgroup + id
		b, _ := json.Marshal(spec)
		if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
			return err
		}
		logPath := filepath.Join(dir, "log")
		logf, err := os.Create(logPath)
		if err != nil {
			return err
		}
		cmd := rt.command(ctx, "run", "--bundle", dir, id)
		cmd.Stdout, cmd.Stderr = logf, logf
		err = cmd.Run()
		logf.Close()
		if err != nil {
			msg, _ := os.ReadFile(logPath)
			return fmt.Errorf("%w: %s", err, lastLine(msg))
		}
		return nil
	}
	check := "probe-" + rt.Name + "-seccomp"
	t0 := time.Now()
	err := run(check, seccompCheck)
	if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.ExitCode() == noFilterExit && rt.SeccompBPF {
		rt.SeccompBPF = false // it ignored the program: let it compile the profile
		err = run(check, seccompCheck)
	}
	if err != nil {
		res.Error = fmt.Sprintf("no seccomp filter in its containers: %v", err)
		return rt, res
	}
	if !timed {
		res.OK, res.Median = true, time.Since(t0)
		return rt, res
	}
	var times []time.Duration
	for i := range 4 {
		t0 := time.Now()
		if err := run(fmt.Sprintf("probe-%s-%d", rt.Name, i), []string{"/bin/true"}); err != nil {
			res.Error = err.Error()
			return rt, res
		}
		if i > 0 { // the first run warms caches
			times = append(times, time.Since(t0))
		}
	}
	slices.Sort(times)
	res.OK, res.Median = true, times[len(times)/2]
	return rt, res
}

// withSeccomp gives spec the filter rung's containers get under rt.
func withSeccomp(spec *specs.Spec, rt Runtime) {
	spec.Linux.Seccomp, spec.Annotations = defaultSeccomp(), nil
	if rt.SeccompBPF {
		if prog, err := defaultSeccompBPF(); err == nil {
			spec.Linux.Seccomp = nil
			spec.Annotations = map[string]string{seccompBPFAnnotation: prog}
		}
	}
}
