package main

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// walSampleEvery is how many execs pass between two looks at the WAL
// file's size. The file grows by at most a few hundred KiB in that many
// execs, which is the error of the peak reported.
const walSampleEvery = 100

// BenchmarkWAL runs isolate execs (`echo hi`) back to back through the
// HTTP API of a real daemon and reports how large its SQLite WAL
// (rung.db-wal) gets, the database file's size, and the exec latency over
// the first and the last tenth of the run (at most 10,000 execs each),
// so that a latency that grows with the WAL shows; also what an exec
// appends to the WAL, how often it restarted and the longest a restart
// held commits. The target is a WAL of
// at most 64 MiB and the same latency at the end as at the start over
// 100,000 execs:
//
//	go test ./cmd/rung -run '^$' -bench WAL -benchtime 100000x
//
// sequential is one client on one sandbox; concurrent is 50 clients over
// 100 sandboxes, as in BenchmarkThroughput.
func BenchmarkWAL(b *testing.B) {
	b.Run("sequential", func(b *testing.B) { benchWAL(b, 1, 1) })
	b.Run("concurrent", func(b *testing.B) { benchWAL(b, 50, 100) })
}

// timedExec is one exec's start and round-trip time.
type timedExec struct {
	start time.Time
	d     time.Duration
}

func benchWAL(b *testing.B, clients, sandboxes int) {
	data := b.TempDir()
	d, addr, token := startDaemonD(b, data)
	c := client.New(addr, client.WithToken(token))
	var ids []string
	for range sandboxes {
		sb, err := c.Create(b.Context(), client.CreateRequest{})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, string(sb.ID))
	}
	req := client.ExecRequest{Command: "echo hi", Backend: rung.BackendIsolate}
	wal := filepath.Join(data, "rung.db-wal")
	var peak atomic.Int64
	sample := func() {
		if fi, err := os.Stat(wal); err == nil {
			storeMax(&peak, fi.Size())
		}
	}

	var (
		mu    sync.Mutex  // guards times
		times []timedExec // every exec, from every client
		n     atomic.Int64
		errs  atomic.Int64
	)
	exec := func(id string, local *[]timedExec) {
		t0 := time.Now()
		res, err := c.Exec(b.Context(), id, req)
		*local = append(*local, timedExec{t0, time.Since(t0)})
		if err != nil || res.Stdout != "hi\n" {
			errs.Add(1)
		}
		if n.Add(1)%walSampleEvery == 0 {
			sample()
		}
	}
	b.ReportAllocs()
	s0, start := d.store.WALStats(), time.Now()
	if clients == 1 {
		for b.Loop() {
			exec(ids[0], &times)
		}
	} else {
		procs := runtime.GOMAXPROCS(0)
		b.SetParallelism((clients + procs - 1) / procs) // goroutines = parallelism × GOMAXPROCS
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			var local []timedExec
			for pb.Next() {
				exec(ids[next.Add(1)%int64(len(ids))], &local)
			}
			mu.Lock()
			times = append(times, local...)
			mu.Unlock()
		})
	}
	elapsed, s1 := time.Since(start), d.store.WALStats()
	sample()
	reportWAL(b, times, elapsed)
	if len(times) > 0 {
		b.ReportMetric(float64(s1.Frames-s0.Frames)*float64(s1.PageSize+24)/1024/float64(len(times)), "wal-KiB/exec")
	}
	b.ReportMetric(float64(s1.Restarts-s0.Restarts), "restarts")
	b.ReportMetric(100*float64(s1.Held-s0.Held)/float64(elapsed), "held-%")
	b.ReportMetric(float64(s1.MaxHeld.Microseconds())/1000, "max-held-ms")
	b.ReportMetric(float64(peak.Load())/(1<<20), "wal-peak-MiB")
	if fi, err := os.Stat(filepath.Join(data, "rung.db")); err == nil {
		b.ReportMetric(float64(fi.Size())/(1<<20), "db-MiB")
	}
	b.ReportMetric(float64(errs.Load()), "errors")
}

// reportWAL reports the exec rate and the latency of the first and the
// last window of execs, in the order they started.
func reportWAL(b *testing.B, times []timedExec, elapsed time.Duration) {
	if len(times) == 0 {
		return
	}
	slices.SortFunc(times, func(x, y timedExec) int { return x.start.Compare(y.start) })
	w := min(10_000, max(1, len(times)/10))
	for _, win := range []struct {
		name string
		t    []timedExec
	}{{"first", times[:w]}, {"last", times[len(times)-w:]}} {
		d := make([]time.Duration, len(win.t))
		for i, t := range win.t {
			d[i] = t.d
		}
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds()), win.name+"-p50-µs")
		b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), win.name+"-p99-µs")
		// With 50 clients latency follows throughput: this tells a
		// slower daemon from a busier machine only beside the load.
		if span := win.t[len(win.t)-1].start.Sub(win.t[0].start); span > 0 {
			b.ReportMetric(float64(len(win.t)-1)/span.Seconds(), win.name+"-execs/s")
		}
	}
	b.ReportMetric(float64(len(times))/elapsed.Seconds(), "execs/s")
}

// storeMax sets a to v if v is larger.
func storeMax(a *atomic.Int64, v int64) {
	for old := a.Load(); v > old && !a.CompareAndSwap(old, v); old = a.Load() {
	}
}
