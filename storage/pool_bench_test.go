package storage_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"rung.dev/rung/storage"
	"rung.dev/rung/storage/storagetest"
)

// Run: go test ./storage/ -run '^$' -bench . -benchtime 2s
// Numbers: docs/bench/storage-pool.md.

// latencies collects per-operation durations and reports their p50 and
// p99 in milliseconds.
type latencies struct {
	name string
	d    []time.Duration
}

func (l *latencies) time(f func() error) error {
	start := time.Now()
	err := f()
	l.d = append(l.d, time.Since(start))
	return err
}

func (l *latencies) report(b *testing.B) {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	pct := func(q float64) float64 {
		return float64(l.d[int(q*float64(len(l.d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), l.name+"-p50-ms")
	b.ReportMetric(pct(0.99), l.name+"-p99-ms")
}

// waitCleaner waits until btrfs has freed deleted subvolumes, so that
// one sub-benchmark's deletions do not slow the next one's commits. Uses
// the btrfs tool (benchmarks only) when it is installed.
func waitCleaner(b *testing.B, p *storage.Pool) {
	b.Helper()
	if _, err := exec.LookPath("btrfs"); err != nil {
		return
	}
	if out, err := exec.Command("btrfs", "subvolume", "sync", p.Dir()).CombinedOutput(); err != nil {
		b.Fatalf("btrfs subvolume sync: %v: %s", err, out)
	}
}

var quotaModes = []string{storage.QuotaSimple, storage.QuotaFull, storage.QuotaOff}

// BenchmarkCreateDelete creates and deletes an empty sandbox per
// iteration, with each quota mode.
func BenchmarkCreateDelete(b *testing.B) {
	for _, mode := range quotaModes {
		b.Run("quota="+mode, func(b *testing.B) {
			p := storagetest.NewTestPoolConfig(b, storage.PoolConfig{Quotas: mode})
			ctx := b.Context()
			create, del := latencies{name: "create"}, latencies{name: "delete"}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				name := fmt.Sprintf("sbx_%d", i)
				must(b, create.time(func() error { return p.Create(ctx, name) }))
				must(b, del.time(func() error { return p.Delete(ctx, name) }))
			}
			create.report(b)
			del.report(b)
		})
	}
}

// makeTree creates n files of 200 bytes (inline in btrfs metadata, like
// most source files' small cousins) in directories of 1,000 under the
// sandbox's workspace, and syncs the pool.
func makeTree(b *testing.B, p *storage.Pool, name string, n int) {
	b.Helper()
	ws := filepath.Join(p.Path(name), "fs/workspace")
	data := make([]byte, 200)
	for i := range n {
		dir := filepath.Join(ws, fmt.Sprintf("d%03d", i/1000))
		if i%1000 == 0 {
			must(b, os.Mkdir(dir, 0o755))
		}
		must(b, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), data, 0o644))
	}
	must(b, p.Sync(b.Context()))
}

// BenchmarkSnapshot snapshots and forks sandboxes of growing size; the
// cost should not grow with it.
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			p := storagetest.NewTestPool(b)
			ctx := b.Context()
			must(b, p.Create(ctx, "sbx_src"))
			makeTree(b, p, "sbx_src", n)
			waitCleaner(b, p)
			for _, op := range []string{"snapshot", "fork"} {
				b.Run(op, func(b *testing.B) {
					lat := latencies{name: op}
					var made []string
					b.ReportAllocs()
					for i := 0; b.Loop(); i++ {
						if op == "snapshot" {
							dst := fmt.Sprintf("snp_%d", i)
							must(b, lat.time(func() error { return p.Snapshot(ctx, "sbx_src", dst) }))
							made = append(made, dst)
						} else {
							dst := fmt.Sprintf("sbx_%d", i)
							must(b, lat.time(func() error { return p.Fork(ctx, "sbx_src", dst) }))
							made = append(made, dst)
						}
					}
					lat.report(b)
					b.StopTimer()
					for _, m := range made {
						must(b, p.Delete(ctx, m))
					}
					waitCleaner(b, p)
				})
			}
		})
	}
}

// BenchmarkSnapshotQuota compares snapshot and delete of a 10,000-file
// sandbox across quota modes (full qgroups account shared extents).
func BenchmarkSnapshotQuota(b *testing.B) {
	for _, mode := range quotaModes {
		b.Run("quota="+mode, func(b *testing.B) {
			p := storagetest.NewTestPoolConfig(b, storage.PoolConfig{Quotas: mode})
			ctx := b.Context()
			must(b, p.Create(ctx, "sbx_src"))
			makeTree(b, p, "sbx_src", 10_000)
			snap, del := latencies{name: "snapshot"}, latencies{name: "delete"}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				dst := fmt.Sprintf("snp_%d", i)
				must(b, snap.time(func() error { return p.Snapshot(ctx, "sbx_src", dst) }))
				must(b, del.time(func() error { return p.Delete(ctx, dst) }))
			}
			snap.report(b)
			del.report(b)
		})
	}
}

// BenchmarkWrite measures the cost of quota accounting on writes: 1,000
// files of 4 KiB, then one 16 MiB file in 1 MiB writes, per iteration.
func BenchmarkWrite(b *testing.B) {
	small := make([]byte, 4096)
	big := make([]byte, 1<<20)
	for _, mode := range quotaModes {
		b.Run("quota="+mode, func(b *testing.B) {
			p := storagetest.NewTestPoolConfig(b, storage.PoolConfig{Quotas: mode})
			ctx := b.Context()
			must(b, p.Create(ctx, "sbx_w"))
			if mode != storage.QuotaOff {
				must(b, p.SetQuota(ctx, "sbx_w", 1<<30))
			}
			ws := filepath.Join(p.Path("sbx_w"), "fs/workspace")
			b.SetBytes(1000*4096 + 16<<20)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				dir := filepath.Join(ws, fmt.Sprint(i))
				must(b, os.Mkdir(dir, 0o755))
				for j := range 1000 {
					must(b, os.WriteFile(filepath.Join(dir, fmt.Sprint(j)), small, 0o644))
				}
				f, err := os.Create(filepath.Join(dir, "big"))
				must(b, err)
				for range 16 {
					_, err := f.Write(big)
					must(b, err)
				}
				must(b, f.Sync())
				f.Close()
				must(b, os.RemoveAll(dir))
			}
		})
	}
}

// BenchmarkManySubvolumes compares List and Create+Delete in a pool of
// 10 and of 1,000 sandboxes.
func BenchmarkManySubvolumes(b *testing.B) {
	for _, n := range []int{10, 1_000} {
		b.Run(fmt.Sprintf("subvols=%d", n), func(b *testing.B) {
			p := storagetest.NewTestPool(b)
			ctx := b.Context()
			for i := range n {
				must(b, p.Create(ctx, fmt.Sprintf("sbx_pre_%d", i)))
			}
			b.Run("list", func(b *testing.B) {
				lat := latencies{name: "list"}
				b.ReportAllocs()
				for b.Loop() {
					must(b, lat.time(func() error {
						names, err := p.List(ctx)
						if err == nil && len(names) != n {
							err = fmt.Errorf("List returned %d names, want %d", len(names), n)
						}
						return err
					}))
				}
				lat.report(b)
			})
			b.Run("create-delete", func(b *testing.B) {
				create, del := latencies{name: "create"}, latencies{name: "delete"}
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					name := fmt.Sprintf("sbx_%d", i)
					must(b, create.time(func() error { return p.Create(ctx, name) }))
					must(b, del.time(func() error { return p.Delete(ctx, name) }))
				}
				create.report(b)
				del.report(b)
			})
		})
	}
}

// BenchmarkDiff diffs two snapshots of a 10,000-file sandbox that differ
// in 100 files: the tree walk's cost is per file, not per change.
func BenchmarkDiff(b *testing.B) {
	p := storagetest.NewTestPool(b)
	ctx := b.Context()
	must(b, p.Create(ctx, "sbx_src"))
	makeTree(b, p, "sbx_src", 10_000)
	must(b, p.Snapshot(ctx, "sbx_src", "snp_1"))
	for i := range 100 {
		path := filepath.Join(p.Path("sbx_src"), "fs/workspace", fmt.Sprintf("d%03d/f%d", i*97/1000, i*97))
		must(b, os.WriteFile(path, []byte("changed"), 0o644))
	}
	must(b, p.Snapshot(ctx, "sbx_src", "snp_2"))
	lat := latencies{name: "diff"}
	b.ReportAllocs()
	for b.Loop() {
		must(b, lat.time(func() error {
			cs, err := p.Diff(ctx, "snp_1", "snp_2")
			if err == nil && len(cs) != 100 {
				err = fmt.Errorf("Diff found %d changes, want 100", len(cs))
			}
			return err
		}))
	}
	lat.report(b)
}
