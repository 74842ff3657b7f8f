package container_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
	"rung.dev/rung/storage/storagetest"
)

// percentile returns the q-quantile of samples (0 <= q <= 1), which it
// leaves in their order.
func percentile(samples []time.Duration, q float64) time.Duration {
	s := slices.Sorted(slices.Values(samples))
	return s[int(q*float64(len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// reportPercentiles adds p50 and p99 of samples (one per iteration).
func reportPercentiles(b *testing.B, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	b.ReportMetric(ms(percentile(samples, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(samples, 0.99)), "p99-ms")
}

// timeEach runs op once per iteration and reports the percentiles of
// its durations.
func timeEach(b *testing.B, op func()) {
	var samples []time.Duration
	for b.Loop() {
		t0 := time.Now()
		op()
		samples = append(samples, time.Since(t0))
	}
	reportPercentiles(b, samples)
}

// BenchmarkColdStart compares rung's start-to-first-exec-result with the
// raw runtime's `run` of the same bundle running /bin/true to completion
// (same-bundle), with `run --detach` of it, and with runc running a
// minimal bundle (no seccomp, no bind mounts: the runtime's own floor).
//
// rung and the two same-bundle references take turns inside one loop, so
// each sees the same machine and the same preceding work: the kernel makes
// the first cgroup migration after a quiet spell wait for an RCU grace
// period (~10 ms here), which back-to-back runs of one variant skip. The
// "after-idle" variant pauses before every measured start (a cold start
// in real use follows idle time); "back-to-back" does not.
func BenchmarkColdStart(b *testing.B) {
	e := newEnv(b)
	for _, pause := range []time.Duration{0, 30 * time.Millisecond} {
		name := "back-to-back"
		if pause > 0 {
			name = "after-idle"
		}
		b.Run(name, func(b *testing.B) {
			var rungT, runT, detachT []time.Duration
			for b.Loop() {
				b.StopTimer()
				time.Sleep(pause)
				sub := subvolume(b)
				b.StartTimer()
				t0 := time.Now()
				c, err := e.m.Start(b.Context(), container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: sub, Image: e.lite, Size: rung.Presets["basic"]})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Exec(b.Context(), agent.ExecRequest{Argv: []string{"true"}}, nil); err != nil {
					b.Fatal(err)
				}
				rungT = append(rungT, time.Since(t0))
				b.StopTimer()
				e.m.Stop(b.Context(), c.Sandbox)
				for _, detach := range []bool{false, true} {
					time.Sleep(pause)
					req := container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: subvolume(b), Image: e.lite, Size: rung.Presets["basic"]}
					d, err := container.RunSameBundle(b.Context(), e.m, req, []string{"/bin/true"}, detach)
					if err != nil {
						b.Fatal(err)
					}
					if detach {
						detachT = append(detachT, d)
					} else {
						runT = append(runT, d)
					}
				}
				b.StartTimer()
			}
			rung50, run50, detach50 := percentile(rungT, 0.5), percentile(runT, 0.5), percentile(detachT, 0.5)
			reportPercentiles(b, rungT)
			b.ReportMetric(ms(run50), "run-p50-ms")
			b.ReportMetric(ms(detach50), "detach-p50-ms")
			b.ReportMetric(float64(rung50)/float64(run50), "x-run")
			b.ReportMetric(float64(rung50)/float64(detach50), "x-detach")
		})
	}
	b.Run("runc/run-minimal", func(b *testing.B) {
		bundle := rawBundle(b, e)
		i := 0
		timeEach(b, func() {
			cmd := exec.Command("runc", "--root", filepath.Join(bundle, "state"), "run", "--bundle", bundle, "raw"+string(rune('a'+i%26))+time.Now().Format("150405.000000"))
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("runc run: %v: %s", err, out)
			}
			i++
		})
	})
}

// rawBundle is a bundle over the lite image's layer running /bin/true,
// with the same namespaces and limits rung uses.
func rawBundle(b *testing.B, e *env) string {
	dir := b.TempDir()
	spec := map[string]any{
		"ociVersion": "1.0.2",
		"root":       map[string]any{"path": e.images.LowerDirs(e.lite)[0], "readonly": true},
		"process":    map[string]any{"args": []string{"/bin/true"}, "cwd": "/", "user": map[string]int{"uid": 0, "gid": 0}, "env": []string{"PATH=/bin"}},
		"mounts": []map[string]any{
			{"destination": "/proc", "type": "proc", "source": "proc"},
			{"destination": "/dev", "type": "tmpfs", "source": "tmpfs"},
		},
		"linux": map[string]any{
			"namespaces": []map[string]string{{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}},
			"resources":  map[string]any{"memory": map[string]int64{"limit": 1 << 30}, "pids": map[string]int64{"limit": 1024}},
		},
	}
	data, _ := json.Marshal(spec)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkExec compares an exec into a running container through the
// agent with `runc exec` into the same container.
func BenchmarkExec(b *testing.B) {
	e := newEnv(b)
	c, _ := e.start(b, rung.Size{})
	b.Run("agent/true", func(b *testing.B) {
		timeEach(b, func() {
			exit, err := c.Exec(b.Context(), agent.ExecRequest{Argv: []string{"true"}}, nil)
			if err != nil || exit.Code != 0 {
				b.Fatal(err, exit)
			}
		})
	})
	b.Run("runc-exec/true", func(b *testing.B) {
		timeEach(b, func() {
			cmd := exec.Command("runc", "--root", e.m.RuntimeRoot(), "exec", string(c.Sandbox), "true")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("runc exec: %v: %s", err, out)
			}
		})
	})
}

// BenchmarkStop times Manager.Stop of an idle container (SIGTERM to the
// agent, which has nothing to wait for, then delete of the exited
// container), against the runtime's own `delete --force` of a live one
// (what Stop did before it was graceful). Starts are not timed.
func BenchmarkStop(b *testing.B) {
	e := newEnv(b)
	// timeStops times stop of a freshly started container per iteration.
	timeStops := func(b *testing.B, stop func(id rung.SandboxID) error) {
		var samples []time.Duration
		for b.Loop() {
			b.StopTimer()
			c, _ := e.start(b, rung.Size{})
			b.StartTimer()
			t0 := time.Now()
			if err := stop(c.Sandbox); err != nil {
				b.Fatal(err)
			}
			samples = append(samples, time.Since(t0))
			b.StopTimer()
			e.m.Stop(b.Context(), c.Sandbox) // after delete-force: unmounts and removes the rest
			b.StartTimer()
		}
		reportPercentiles(b, samples)
	}
	b.Run("rung-stop", func(b *testing.B) {
		timeStops(b, func(id rung.SandboxID) error { return e.m.Stop(b.Context(), id) })
	})
	b.Run("delete-force", func(b *testing.B) {
		timeStops(b, func(id rung.SandboxID) error { return container.DeleteForce(b.Context(), e.m, id) })
	})
}

// BenchmarkConcurrentStart starts 100 containers at once and reports the
// p50 and p99 start time, and the memory each idle container costs: its
// cgroup's usage (agent plus kernel) and the agent's resident set.
func BenchmarkConcurrentStart(b *testing.B) {
	e := newEnv(b)
	const n = 100
	for b.Loop() {
		subs := make([]string, n)
		for i := range subs {
			subs[i] = subvolume(b)
		}
		var mu sync.Mutex
		var samples []time.Duration
		var started []*container.Container
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				t0 := time.Now()
				c, err := e.m.Start(b.Context(), container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: subs[i], Image: e.lite, Size: rung.Presets["lite"]})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				samples = append(samples, time.Since(t0))
				started = append(started, c)
				mu.Unlock()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		reportPercentiles(b, samples)
		var cg, rss, ps int64
		for _, c := range started {
			cg += readInt(filepath.Join("/sys/fs/cgroup/memory/rung", string(c.Sandbox), "memory.usage_in_bytes"))
			rss += vmRSS(c.InitPID())
			ps += pss(c.InitPID())
		}
		b.ReportMetric(float64(cg)/n/(1<<20), "cgroup-MiB/idle")
		b.ReportMetric(float64(rss)/n/(1<<20), "agent-rss-MiB/idle")
		b.ReportMetric(float64(ps)/n/(1<<20), "agent-pss-MiB/idle")
		b.StopTimer()
		for _, c := range started {
			e.m.Stop(b.Context(), c.Sandbox)
		}
		b.StartTimer()
	}
}

func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

func vmRSS(pid int) int64 {
	return procKB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
}

// pss is the agent's proportional set size: its pages shared with the
// other agents (the binary's text) are divided among them.
func pss(pid int) int64 {
	return procKB(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
}

func procKB(path, field string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// smallFileScript creates, reads, finds and tars 10,000 small files with
// busybox, the same binary inside the container and on the host.
const smallFileScript = `mkdir -p d && cd d && i=0; while [ $i -lt 100 ]; do mkdir -p s$i; j=0; while [ $j -lt 100 ]; do echo hello > s$i/f$j; j=$((j+1)); done; i=$((i+1)); done; cat s*/f* | wc -l; find . -type f | wc -l; tar cf ../t.tar . ; cd .. ; rm -rf d t.tar`

// BenchmarkSmallFiles compares small-file work in /workspace inside a
// container with the same busybox script run on the host. The sandbox's
// subvolume is on a real btrfs pool (loop image), as in the daemon;
// host-pool runs it in another subvolume of that pool, host-disk in a
// directory of the host's root file system (ext4 here).
func BenchmarkSmallFiles(b *testing.B) {
	e := newEnv(b)
	pool := storagetest.NewTestPool(b)
	sub := func(name string) string {
		if err := pool.Create(b.Context(), name); err != nil {
			b.Fatal(err)
		}
		return pool.Path(name)
	}
	id := rung.NewSandboxID()
	c, err := e.m.Start(b.Context(), container.StartRequest{Sandbox: id, Subvolume: sub(string(id)), Image: e.lite, Size: rung.Presets["standard-2"]})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("container", func(b *testing.B) {
		for b.Loop() {
			exit, err := c.Exec(b.Context(), agent.ExecRequest{Command: smallFileScript}, nil)
			if err != nil || exit.Code != 0 {
				b.Fatal(err, exit)
			}
		}
	})
	hostRun := func(b *testing.B, dir string) {
		for b.Loop() {
			cmd := exec.Command("/bin/busybox", "sh", "-c", smallFileScript)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatal(err, string(out))
			}
		}
	}
	b.Run("host-pool", func(b *testing.B) { hostRun(b, filepath.Join(sub(string(rung.NewSandboxID())), "fs", "workspace")) })
	b.Run("host-disk", func(b *testing.B) { hostRun(b, b.TempDir()) })
}

// BenchmarkPTYFirstByte is the time from an exec's request to the first
// byte of `echo hi`'s output through the agent into a running container,
// on a pseudo-terminal beside without one: the terminal's own cost, with
// no API or controller in the way.
func BenchmarkPTYFirstByte(b *testing.B) {
	e := newEnv(b)
	c, _ := e.start(b, rung.Size{})
	for _, tc := range []struct {
		name string
		pty  *agent.TermSize
	}{
		{"agent", nil},
		{"agent-pty", &agent.TermSize{Cols: 80, Rows: 24}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var samples []time.Duration
			for b.Loop() {
				var first time.Duration
				t0 := time.Now()
				onFrame := func(agent.Frame) {
					if first == 0 {
						first = time.Since(t0)
					}
				}
				req := agent.ExecRequest{Command: "echo hi", PTY: tc.pty}
				var exit agent.Exit
				var err error
				if tc.pty != nil {
					exit, err = c.ExecPTY(b.Context(), req, nil, onFrame)
				} else {
					exit, err = c.Exec(b.Context(), req, onFrame)
				}
				if err != nil || exit.Code != 0 || first == 0 {
					b.Fatal(err, exit, first)
				}
				samples = append(samples, first)
			}
			reportPercentiles(b, samples)
		})
	}
}
