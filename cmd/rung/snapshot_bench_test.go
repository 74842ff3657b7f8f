package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// BenchmarkSnapshots measures, side by side in one run and through the
// API of an in-process daemon with the container tier, issue 13's
// targets on a sandbox with a 10,000-file workspace and 100 MB of root
// filesystem changes (random, so incompressible) whose container runs:
//
//   - snapshot: POST …/snapshots (≤ 10 ms p50)
//   - restore/isolate, restore/container: create from the snapshot and get
//     the first exec's result (≤ 5 ms and ≤ 50 ms p50)
//   - rollback/container: roll back a sandbox with a running container and
//     get the first container exec's result (≤ 100 ms p50)
//   - fork10/isolate, fork10/container: fork the live sandbox 10 times and
//     run one exec in each, side by side (≤ 50 ms and ≤ 1 s)
//   - export, import: the snapshot's archive through the API, in MB/s of
//     the send stream, next to the same work by hand: btrfs send | zstd -3,
//     and zstd -d | btrfs receive
func BenchmarkSnapshots(b *testing.B) {
	c, d, _ := startContainerDaemonWith(b, DaemonConfig{})
	ctx := b.Context()
	sb, err := c.Create(ctx, client.CreateRequest{Name: "big"}) // the default size (standard-3)
	need(b, err)
	id := string(sb.ID)
	inContainer(b, c, id, `set -e
for d in $(seq 1 100); do mkdir -p /workspace/src/d$d; for f in $(seq 1 100); do echo "$d $f" > /workspace/src/d$d/f$f; done; done
mkdir -p /opt/data && head -c 100000000 /dev/urandom > /opt/data/blob`)
	need(b, d.pool.Sync(ctx)) // quota counters and the writes on disk before anything is timed
	snap, err := c.Snapshot(ctx, id, client.SnapshotRequest{Name: "base"})
	need(b, err)
	echo := client.ExecRequest{Command: "echo hi", Backend: rung.BackendIsolate}
	cecho := client.ExecRequest{Command: "echo hi", Backend: rung.BackendContainer}
	execOK := func(b *testing.B, id string, req client.ExecRequest) {
		res, err := c.Exec(ctx, id, req)
		if err != nil || res.Stdout != "hi\n" {
			b.Fatalf("exec in %s: %+v, %v", id, res, err)
		}
	}

	b.Run("snapshot", func(b *testing.B) {
		var lat []time.Duration
		for b.Loop() {
			t0 := time.Now()
			s, err := c.Snapshot(ctx, id, client.SnapshotRequest{})
			lat = append(lat, time.Since(t0))
			need(b, err)
			need(b, c.DeleteSnapshot(ctx, string(s.ID)))
		}
		reportLatency(b, lat)
	})
	for _, tier := range []struct {
		name string
		req  client.ExecRequest
	}{{"isolate", echo}, {"container", cecho}} {
		b.Run("restore/"+tier.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				r, err := c.Create(ctx, client.CreateRequest{FromSnapshot: "base"})
				need(b, err)
				execOK(b, string(r.ID), tier.req)
				lat = append(lat, time.Since(t0))
				need(b, c.Delete(ctx, string(r.ID)))
			}
			reportLatency(b, lat)
		})
	}
	b.Run("rollback/container", func(b *testing.B) {
		r, err := c.Create(ctx, client.CreateRequest{FromSnapshot: "base"})
		need(b, err)
		var lat []time.Duration
		for b.Loop() {
			execOK(b, string(r.ID), cecho) // its container runs when the rollback starts
			t0 := time.Now()
			_, err := c.Rollback(ctx, string(r.ID), "base")
			need(b, err)
			execOK(b, string(r.ID), cecho)
			lat = append(lat, time.Since(t0))
		}
		reportLatency(b, lat)
		need(b, c.Delete(ctx, string(r.ID)))
	})
	for _, tier := range []struct {
		name string
		req  client.ExecRequest
	}{{"isolate", echo}, {"container", cecho}} {
		b.Run("fork10/"+tier.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				forks, err := c.Fork(ctx, id, client.ForkRequest{Count: 10})
				need(b, err)
				var wg sync.WaitGroup
				for _, f := range forks {
					if f.Err != nil {
						b.Fatal(f.Err)
					}
					wg.Go(func() { execOK(b, string(f.Sandbox.ID), tier.req) })
				}
				wg.Wait()
				lat = append(lat, time.Since(t0))
				for _, f := range forks {
					need(b, c.Delete(ctx, string(f.Sandbox.ID)))
				}
			}
			reportLatency(b, lat)
		})
	}
	benchArchive(b, c, d, string(snap.ID))
}

// benchArchive is BenchmarkSnapshots' export and import, beside btrfs
// send | zstd and zstd -d | btrfs receive run by hand on the same snapshot.
func benchArchive(b *testing.B, c *client.Client, d *Daemon, snap string) {
	ctx := b.Context()
	streamBytes := func() int64 {
		out, err := exec.Command("sh", "-c", "btrfs send -q "+d.pool.Path(snap)+" | wc -c").Output()
		need(b, err)
		var n int64
		fmt.Sscan(string(out), &n)
		return n
	}()
	rate := func(b *testing.B, lat []time.Duration) {
		reportLatency(b, lat)
		var total time.Duration
		for _, l := range lat {
			total += l
		}
		b.ReportMetric(float64(streamBytes)/1e6/(total.Seconds()/float64(len(lat))), "MB/s")
	}
	// The archive goes to a file and back, as `rung snapshot export -o
	// FILE` and `import FILE` do, and as the hand-made pipeline does.
	archive := filepath.Join(b.TempDir(), "snap.rungsnap")
	b.Run("export", func(b *testing.B) {
		var lat []time.Duration
		for b.Loop() {
			t0 := time.Now()
			r, err := c.ExportSnapshot(ctx, snap, "")
			need(b, err)
			f, err := os.Create(archive)
			need(b, err)
			_, err = io.Copy(f, r)
			r.Close()
			need(b, errors.Join(err, f.Close()))
			lat = append(lat, time.Since(t0))
		}
		rate(b, lat)
		if fi, err := os.Stat(archive); err == nil {
			b.ReportMetric(float64(fi.Size()), "archive-bytes")
		}
	})
	b.Run("import", func(b *testing.B) {
		var lat []time.Duration
		for b.Loop() {
			t0 := time.Now()
			f, err := os.Open(archive)
			need(b, err)
			s, err := c.ImportSnapshot(ctx, f, client.ImportOptions{Name: "imported"})
			f.Close()
			need(b, err)
			lat = append(lat, time.Since(t0))
			need(b, c.DeleteSnapshot(ctx, string(s.ID)))
		}
		rate(b, lat)
	})
	zst := filepath.Join(b.TempDir(), "stream.zst")
	b.Run("by-hand/btrfs-send-zstd", func(b *testing.B) {
		var lat []time.Duration
		for b.Loop() {
			t0 := time.Now()
			out, err := exec.Command("sh", "-c", "btrfs send -q "+d.pool.Path(snap)+" | zstd -q -3 -f -o "+zst).CombinedOutput()
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
		rate(b, lat)
	})
	b.Run("by-hand/zstd-btrfs-receive", func(b *testing.B) {
		dir := filepath.Join(d.pool.Dir(), "bench-receive")
		need(b, os.MkdirAll(dir, 0o700))
		defer os.RemoveAll(dir)
		var lat []time.Duration
		for b.Loop() {
			t0 := time.Now()
			out, err := exec.Command("sh", "-c", "zstd -q -d -c "+zst+" | btrfs receive -q "+dir).CombinedOutput()
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			if out, err := exec.Command("btrfs", "subvolume", "delete", filepath.Join(dir, snap)).CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
		rate(b, lat)
	})
}
