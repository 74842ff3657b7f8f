package main

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/controller"
	"rung.dev/rung/internal/testenv"
)

// idleSandboxes is how many sandboxes BenchmarkIdleSandboxes creates:
// $RUNG_BENCH_IDLE, default 1000 (the target is 10,000).
func idleSandboxes() int {
	if n, err := strconv.Atoi(os.Getenv("RUNG_BENCH_IDLE")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// reportLatency reports p50 and p99 of d in microseconds.
func reportLatency(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkExec is one `echo hi` round trip, over HTTP with a keep-alive
// client (the target is ≤ 300 µs p50), beside the same exec made in
// process (no HTTP), so one run gives the HTTP overhead.
func BenchmarkExec(b *testing.B) {
	addr, token := startDaemon(b, b.TempDir())
	c := client.New(addr, client.WithToken(token))
	sb, err := c.Create(b.Context(), client.CreateRequest{})
	if err != nil {
		b.Fatal(err)
	}
	req := client.ExecRequest{Command: "echo hi", Backend: rung.BackendIsolate}
	b.Run("http", func(b *testing.B) {
		b.ReportAllocs()
		var lat []time.Duration
		for b.Loop() {
			t0 := time.Now()
			res, err := c.Exec(b.Context(), string(sb.ID), req)
			lat = append(lat, time.Since(t0))
			if err != nil || res.Stdout != "hi\n" {
				b.Fatal(res, err)
			}
		}
		reportLatency(b, lat)
	})
	b.Run("http-stream", func(b *testing.B) {
		b.ReportAllocs()
		var lat []time.Duration
		var out strings.Builder
		for b.Loop() {
			t0 := time.Now()
			_, err := c.ExecStream(b.Context(), string(sb.ID), req, &out, &out)
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
		}
		reportLatency(b, lat)
	})
}

// BenchmarkThroughput runs `echo hi` across 100 sandboxes from 50
// concurrent clients (the target is ≥ 5,000 execs/s with zero errors).
func BenchmarkThroughput(b *testing.B) {
	addr, token := startDaemon(b, b.TempDir())
	c := client.New(addr, client.WithToken(token))
	var ids []string
	for range 100 {
		sb, err := c.Create(b.Context(), client.CreateRequest{})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, string(sb.ID))
	}
	req := client.ExecRequest{Command: "echo hi", Backend: rung.BackendIsolate}
	b.ReportAllocs()
	var errs, next atomic.Int64
	b.SetParallelism(25) // 25 × GOMAXPROCS (2 here) = 50 concurrent clients
	start, cpu0 := time.Now(), cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := ids[next.Add(1)%int64(len(ids))]
			res, err := c.Exec(b.Context(), id, req)
			if err != nil || res.Stdout != "hi\n" {
				errs.Add(1)
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "execs/s")
	// CPU per exec, client and daemon together (same process): on a
	// loaded host execs/s measures the share of CPU we got, this does not.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/exec")
	b.ReportMetric(float64(errs.Load()), "errors")
}

// BenchmarkCreateFirstExec creates a sandbox and runs its first exec
// (the target is ≤ 2 ms).
func BenchmarkCreateFirstExec(b *testing.B) {
	addr, token := startDaemon(b, b.TempDir())
	c := client.New(addr, client.WithToken(token))
	req := client.ExecRequest{Command: "echo hi", Backend: rung.BackendIsolate}
	b.ReportAllocs()
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		sb, err := c.Create(b.Context(), client.CreateRequest{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Exec(b.Context(), string(sb.ID), req); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat)
}

// BenchmarkCreateFirstContainerExec creates a sandbox and runs its first
// container exec (`echo hi`), from a daemon without spares (cold: the
// container starts on the exec) and from one keeping a spare of each
// kind (warm: the create claims it; the target is <= 10 ms). Kinds, side
// by side: base, what a create with no image, size or user gets from
// `rung serve` (image base, the default size, the user "user"; the cold
// target is <= 40 ms), and the lite image at sizes lite (62 millicpu) and
// basic (250). base comes from the shared test image cache (built there
// once). Between iterations, outside the measured time, the sandbox is
// deleted and the warm daemon's spares refilled.
func BenchmarkCreateFirstContainerExec(b *testing.B) {
	kinds := []struct {
		name string
		req  client.CreateRequest
		warm controller.WarmSpec
	}{
		{"base", client.CreateRequest{}, controller.WarmSpec{Image: "base", Count: 1}},
		{"lite", client.CreateRequest{Image: "lite", Size: rung.Size{Preset: "lite"}}, controller.WarmSpec{Image: "lite", Size: rung.Size{Preset: "lite"}, Count: 1}},
		{"basic", client.CreateRequest{Image: "lite", Size: rung.Size{Preset: "basic"}}, controller.WarmSpec{Image: "lite", Size: rung.Size{Preset: "basic"}, Count: 1}},
	}
	ensureBase(b)
	for _, mode := range []string{"cold", "warm"} {
		b.Run(mode, func(b *testing.B) {
			var warm []controller.WarmSpec
			if mode == "warm" {
				for _, k := range kinds {
					warm = append(warm, k.warm)
				}
			}
			c, d, _ := startContainerDaemonWith(b, DaemonConfig{Warm: warm, DefaultImage: "base", ImageDir: testenv.ImageCache})
			for _, k := range kinds {
				b.Run(k.name, func(b *testing.B) {
					benchCreateFirstExec(b, c, d, k.req)
				})
			}
		})
	}
}

func benchCreateFirstExec(b *testing.B, c *client.Client, d *Daemon, create client.CreateRequest) {
	ctx := b.Context()
	req := client.ExecRequest{Command: "echo hi", Backend: rung.BackendContainer}
	var lat, creates, firsts, seconds []time.Duration
	claimed := 0
	for b.Loop() {
		b.StopTimer()
		waitWarm(b, d)
		b.StartTimer()
		t0 := time.Now()
		sb, err := c.Create(ctx, create)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		res, err := c.Exec(ctx, string(sb.ID), req)
		lat = append(lat, time.Since(t0))
		creates, firsts = append(creates, t1.Sub(t0)), append(firsts, time.Since(t1))
		if err != nil || res.Stdout != "hi\n" {
			b.Fatal(res, err)
		}
		b.StopTimer()
		// The same exec again, outside the measured time: what the first
		// one pays beyond a running container's steady state.
		t2 := time.Now()
		if res, err := c.Exec(ctx, string(sb.ID), req); err != nil || res.Stdout != "hi\n" {
			b.Fatal(res, err)
		}
		seconds = append(seconds, time.Since(t2))
		if sb.State == rung.StateRunning {
			claimed++
		}
		if err := c.Delete(ctx, string(sb.ID)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	reportLatency(b, lat)
	b.ReportMetric(float64(claimed)/float64(len(lat)), "warm-hits/op")
	b.ReportMetric(float64(median(creates).Microseconds()), "create-p50-µs")
	b.ReportMetric(float64(median(firsts).Microseconds()), "first-exec-p50-µs")
	b.ReportMetric(float64(median(seconds).Microseconds()), "second-exec-p50-µs")
}

// BenchmarkIdleSandboxes measures the daemon's memory per idle sandbox
// (the target is ≤ 50 KiB): heap and RSS growth over -idle-sandboxes
// creates, each touched by one exec and then left idle until its actor
// is gone.
func BenchmarkIdleSandboxes(b *testing.B) {
	for b.Loop() {
		d, addr, token := startDaemonD(b, b.TempDir())
		c := client.New(addr, client.WithToken(token))
		heap0, rss0 := memNow()
		n := idleSandboxes()
		t0 := time.Now()
		for range n {
			sb, err := c.Create(b.Context(), client.CreateRequest{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Exec(b.Context(), string(sb.ID), client.ExecRequest{Command: "echo hi", Backend: rung.BackendIsolate}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(time.Since(t0).Microseconds())/float64(n), "µs/create+exec")
		time.Sleep(7 * time.Second) // let every actor pass IdleGrace (5 s) and exit: the state being measured
		heap1, rss1 := memNow()
		b.ReportMetric(float64(heap1-heap0)/float64(n), "heap-B/sandbox")
		b.ReportMetric(float64(rss1-rss0)/float64(n), "rss-B/sandbox")
		b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
		b.ReportMetric(float64(d.Active()), "active-actors")
	}
}

func memNow() (heap, rss int64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			rss = kb << 10
		}
	}
	return int64(ms.HeapAlloc), rss
}

// cpuTime is this process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// median is the middle of d (d is sorted in place).
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}
