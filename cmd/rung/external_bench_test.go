package main

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// BenchmarkExecExternal measures isolate execs as users see them: the
// daemon is a real `rung serve` process and this process is only its
// client, over HTTP with keep-alive (BenchmarkExec runs both in one
// process, where they share the Go scheduler and the heap).
//   - sequential: one `echo hi` round trip at a time (target ≤ 300 µs p50)
//   - concurrent: 50 clients over 100 sandboxes (target ≥ 5,000 execs/s,
//     0 errors), and each exec's latency under that load;
//     RUNG_BENCH_CLIENTS changes the count, and RUNG_BENCH_PAUSE (a
//     duration) makes each client wait so long after each exec, for a
//     moderate load instead of a saturating one
//
// Both report daemon-cpu-µs/exec, the daemon's CPU time (user and system,
// from /proc) per exec: the figure to compare builds by on a busy machine,
// where wall-clock latency moves with everyone else's load.
func BenchmarkExecExternal(b *testing.B) {
	p := startServe(b, rungBinary(b), b.TempDir())
	defer p.stop(b)
	c := client.New(p.addr, client.WithToken(p.token))
	var ids []string
	for range 100 {
		sb, err := c.Create(b.Context(), client.CreateRequest{})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, string(sb.ID))
	}
	req := client.ExecRequest{Command: "echo hi", Backend: rung.BackendIsolate}
	b.Run("sequential", func(b *testing.B) {
		var lat []time.Duration
		cpu0 := procCPU(b, p.cmd.Process.Pid)
		for b.Loop() {
			t0 := time.Now()
			res, err := c.Exec(b.Context(), ids[0], req)
			lat = append(lat, time.Since(t0))
			if err != nil || res.Stdout != "hi\n" {
				b.Fatal(res, err)
			}
		}
		reportLatency(b, lat)
		b.ReportMetric(float64((procCPU(b, p.cmd.Process.Pid)-cpu0).Microseconds())/float64(b.N), "daemon-cpu-µs/exec")
	})
	b.Run("concurrent", func(b *testing.B) {
		clients := 50
		if v := os.Getenv("RUNG_BENCH_CLIENTS"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				b.Fatalf("RUNG_BENCH_CLIENTS=%q: want a count", v)
			}
			clients = n
		}
		var pause time.Duration
		if v := os.Getenv("RUNG_BENCH_PAUSE"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				b.Fatalf("RUNG_BENCH_PAUSE: %v", err)
			}
			pause = d
		}
		var errs, next atomic.Int64
		var wg sync.WaitGroup
		n := int64(b.N)
		lat := make([]time.Duration, n) // each exec's, written once by its client
		b.ResetTimer()
		start := time.Now()
		cpu0 := procCPU(b, p.cmd.Process.Pid)
		for range clients {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > n {
						return
					}
					t0 := time.Now()
					res, err := c.Exec(b.Context(), ids[i%int64(len(ids))], req)
					lat[i-1] = time.Since(t0)
					time.Sleep(pause)
					if err != nil || res.Stdout != "hi\n" {
						errs.Add(1)
					}
				}
			})
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "execs/s")
		reportLatency(b, lat)
		b.ReportMetric(float64(errs.Load()), "errors")
		b.ReportMetric(float64((procCPU(b, p.cmd.Process.Pid)-cpu0).Microseconds())/float64(b.N), "daemon-cpu-µs/exec")
	})
}

// procCPU is the user and system CPU time process pid has used so far
// (/proc/PID/stat fields 14 and 15, in clock ticks of 10 ms on Linux).
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// The command name (field 2) may hold spaces: count from after it.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("parse /proc/%d/stat: %v %v", pid, err1, err2)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
