package storage

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchFiles is the size of the small-file working set: 10,000 files of
// 1 KiB in one directory.
const (
	benchFiles    = 10000
	benchFileSize = 1024
)

// smallFileOps is one way to do the four small-file operations: through a
// Root (sandbox paths) or through package os (host paths).
type smallFileOps struct {
	create func(name string, data []byte) error
	read   func(name string) ([]byte, error)
	stat   func(name string) error
	list   func(dir string) (int, error)
	mkdir  func(dir string) error
	// statdir lists dir and lstats every entry, as ls -l or find do.
	statdir func(dir string) (int, error)
	path    func(sandbox string) string // the name each op takes for a sandbox path
}

func rootOps(r *Root) smallFileOps {
	return smallFileOps{
		create: func(name string, data []byte) error {
			f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if _, err := f.Write(data); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		},
		read:  r.ReadFile,
		stat:  func(name string) error { _, err := r.Stat(name); return err },
		list:  func(dir string) (int, error) { ents, err := r.ReadDir(dir); return len(ents), err },
		mkdir: func(dir string) error { return r.Mkdir(dir, 0o755) },
		statdir: func(dir string) (int, error) {
			f, err := r.OpenFile(dir, os.O_RDONLY, 0)
			if err != nil {
				return 0, err
			}
			defer f.Close()
			return infoAll(f.ReadDir(-1))
		},
		path: func(p string) string { return p },
	}
}

func osOps(host string) smallFileOps {
	return smallFileOps{
		create: func(name string, data []byte) error {
			f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if _, err := f.Write(data); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		},
		read:  os.ReadFile,
		stat:  func(name string) error { _, err := os.Stat(name); return err },
		list:  func(dir string) (int, error) { ents, err := os.ReadDir(dir); return len(ents), err },
		mkdir: func(dir string) error { return os.Mkdir(dir, 0o755) },
		statdir: func(dir string) (int, error) {
			f, err := os.Open(dir)
			if err != nil {
				return 0, err
			}
			defer f.Close()
			return infoAll(f.ReadDir(-1))
		},
		path: func(p string) string { return host + p },
	}
}

// BenchmarkSmallFiles compares small-file work through a Root with the
// same work through package os, on ext4 (the test temp dir; checked) and
// on tmpfs (/dev/shm). Per-file ops (create, read, stat) cycle through
// 10,000 files of 1 KiB; list reads the whole 10,000-entry directory;
// statdir lists it and lstats every entry (ls -l, find).
//
//	go test ./storage -run '^$' -bench SmallFiles -benchtime 20000x -count 5
func BenchmarkSmallFiles(b *testing.B) {
	disks := []struct{ name, dir string }{{"", b.TempDir()}, {"-tmpfs", ""}}
	if isFS(b, "/dev/shm", unix.TMPFS_MAGIC) {
		dir, err := os.MkdirTemp("/dev/shm", "rung-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		disks[1].dir = dir
	}
	if !isFS(b, disks[0].dir, unix.EXT4_SUPER_MAGIC) {
		b.Logf("note: %s is not ext4", disks[0].dir)
	}
	data := make([]byte, benchFileSize)
	for _, op := range []string{"create", "read", "stat", "list", "statdir"} {
		b.Run(op, func(b *testing.B) {
			for _, d := range disks {
				if d.dir == "" {
					continue
				}
				host := filepath.Join(d.dir, op)
				for _, dir := range []string{"workspace/set", "tmp"} {
					if err := os.MkdirAll(filepath.Join(host, dir), 0o755); err != nil {
						b.Fatal(err)
					}
				}
				for i := range benchFiles {
					if err := os.WriteFile(filepath.Join(host, "workspace/set", "f"+itoa(i)), data, 0o644); err != nil {
						b.Fatal(err)
					}
				}
				r, err := OpenRoot(host)
				if err != nil {
					b.Fatal(err)
				}
				b.Run("root"+d.name, func(b *testing.B) { benchSmallFiles(b, op, "root", rootOps(r), data) })
				b.Run("os"+d.name, func(b *testing.B) { benchSmallFiles(b, op, "os", osOps(host), data) })
				r.Close()
				os.RemoveAll(host)
			}
		})
	}
}

// benchRuns numbers benchSmallFiles runs; benchmarks run one at a time.
var benchRuns int

func infoAll(ents []fs.DirEntry, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		if _, err := e.Info(); err != nil {
			return 0, err
		}
	}
	return len(ents), nil
}

func benchSmallFiles(b *testing.B, op, tag string, ops smallFileOps, data []byte) {
	names := make([]string, benchFiles)
	for i := range names {
		names[i] = ops.path("/workspace/set/f" + itoa(i))
	}
	set := ops.path("/workspace/set")
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	i, round := 0, 0
	// The framework runs a sub-benchmark several times: each run
	// creates in directories of its own.
	benchRuns++
	tag += "-" + itoa(benchRuns) + "-"
	created := ops.path("/workspace/new-" + tag + "0")
	for b.Loop() {
		start := time.Now()
		var err error
		switch op {
		case "create":
			if i == benchFiles {
				// A fresh directory every 10,000 files keeps directory
				// sizes as in the other ops.
				i, round = 0, round+1
				created = ops.path("/workspace/new-" + tag + itoa(round))
			}
			if i == 0 {
				err = ops.mkdir(created)
			}
			if err == nil {
				err = ops.create(created+"/f"+itoa(i), data)
			}
		case "read":
			var got []byte
			got, err = ops.read(names[i%benchFiles])
			if len(got) != benchFileSize && err == nil {
				b.Fatalf("read %d bytes", len(got))
			}
		case "stat":
			err = ops.stat(names[i%benchFiles])
		case "list", "statdir":
			list := ops.list
			if op == "statdir" {
				list = ops.statdir
			}
			var n int
			n, err = list(set)
			if n != benchFiles && err == nil {
				b.Fatalf("listed %d entries", n)
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(start))
		}
		i++
	}
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

func isFS(b *testing.B, dir string, magic int64) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == magic
}
