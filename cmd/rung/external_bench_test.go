package main

import (
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
//     0 errors)
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
		for b.Loop() {
			t0 := time.Now()
			res, err := c.Exec(b.Context(), ids[0], req)
			lat = append(lat, time.Since(t0))
			if err != nil || res.Stdout != "hi\n" {
				b.Fatal(res, err)
			}
		}
		reportLatency(b, lat)
	})
	b.Run("concurrent", func(b *testing.B) {
		const clients = 50
		var errs, next atomic.Int64
		var wg sync.WaitGroup
		n := int64(b.N)
		b.ResetTimer()
		start := time.Now()
		for range clients {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > n {
						return
					}
					res, err := c.Exec(b.Context(), ids[i%int64(len(ids))], req)
					if err != nil || res.Stdout != "hi\n" {
						errs.Add(1)
					}
				}
			})
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "execs/s")
		b.ReportMetric(float64(errs.Load()), "errors")
	})
}
