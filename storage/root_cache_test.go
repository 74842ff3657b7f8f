package storage

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// statDesc describes what Stat or Lstat said, comparably.
func statDesc(fi fs.FileInfo, err error) string {
	if err != nil {
		return "error " + errno(err).Error()
	}
	return fmt.Sprintf("%s %v %d ino=%d", fi.Name(), fi.Mode(), fi.Size(), ino(fi))
}

// TestRootStatCache changes directories behind the Root's back, as a
// container would, and checks that Stat sees each change at once.
func TestRootStatCache(t *testing.T) {
	v := newView(t)
	h := v.h
	write := func(p string, size int) { must(t, os.WriteFile(h(p), make([]byte, size), 0o644)) }
	want := func(p string, size int) {
		t.Helper()
		fi, err := v.Stat(p)
		if size < 0 {
			if err == nil {
				t.Fatalf("Stat(%q) = size %d, want an error", p, fi.Size())
			}
			return
		}
		if err != nil || fi.Size() != int64(size) {
			t.Fatalf("Stat(%q) = %s, want size %d", p, statDesc(fi, err), size)
		}
	}
	must(t, os.MkdirAll(h("/workspace/a/b"), 0o755))
	write("/workspace/a/b/f", 1)
	want("/workspace/a/b/f", 1)
	if v.cache.byPath["/workspace/a/b"] == nil {
		t.Fatal("Stat did not cache /workspace/a/b")
	}

	must(t, os.Rename(h("/workspace/a"), h("/workspace/a2"))) // ancestor renamed
	want("/workspace/a/b/f", -1)
	want("/workspace/a2/b/f", 1)

	must(t, os.MkdirAll(h("/workspace/a/b"), 0o755)) // a new directory at the old name
	write("/workspace/a/b/f", 2)
	want("/workspace/a/b/f", 2)

	must(t, os.RemoveAll(h("/workspace/a/b"))) // rmdir of a cached directory
	must(t, os.MkdirAll(h("/workspace/a/b"), 0o755))
	write("/workspace/a/b/f", 3)
	want("/workspace/a/b/f", 3)

	must(t, os.Rename(h("/workspace/a"), h("/workspace/a3"))) // replaced by a symlink
	must(t, os.Symlink("a2", h("/workspace/a")))
	want("/workspace/a/b/f", 1)
	if fi, err := v.Lstat("/workspace/a"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat of the symlink = %s", statDesc(fi, err))
	}

	must(t, os.MkdirAll(h("/workspace/c/d"), 0o755)) // an empty directory renamed over
	want("/workspace/c/d/f", -1)
	must(t, os.MkdirAll(h("/workspace/e/d"), 0o755))
	write("/workspace/e/d/f", 4)
	if err := unix.Rename(h("/workspace/e/d"), h("/workspace/c/d")); err != nil { // os.Rename refuses dir over dir
		ents, _ := os.ReadDir(h("/workspace/c/d"))
		t.Fatalf("%v; c/d holds %v", err, ents)
	}
	want("/workspace/c/d/f", 4)

	must(t, unix.Renameat2(unix.AT_FDCWD, h("/workspace/a2"), unix.AT_FDCWD, h("/workspace/a3"), unix.RENAME_EXCHANGE))
	want("/workspace/a2/b/f", 3)
	want("/workspace/a3/b/f", 1)

	// More directories than the cache holds.
	for i := range 3 * dirCacheMax {
		d := "/workspace/many/d" + itoa(i)
		must(t, os.MkdirAll(h(d), 0o755))
		write(d+"/f", i)
	}
	for i := range 3 * dirCacheMax {
		want("/workspace/many/d"+itoa(i)+"/f", i)
	}
	if n := len(v.cache.byPath); n > dirCacheMax {
		t.Errorf("cache holds %d directories, max %d", n, dirCacheMax)
	}
	v.checkOutside(t)
}

// TestRootStatCacheRandom mutates a small tree at random behind the
// Root's back and compares cached Stat and Lstat with the uncached path
// after every change.
func TestRootStatCacheRandom(t *testing.T) {
	v := newView(t)
	rng := rand.New(rand.NewPCG(1, 2))
	dirs := []string{"/workspace/a", "/workspace/b", "/workspace/a/x", "/workspace/b/x", "/workspace/a/x/y", "/tmp/t"}
	names := []string{}
	for _, d := range dirs {
		names = append(names, d, d+"/f", d+"/l", d+"/x/f", d+"/.", d+"/l/.", d+"/..", d+"/./..", d+"/x/..", d+"/l/..")
	}
	steps := 800
	if testing.Short() {
		steps = 150
	}
	for step := range steps {
		d := v.h(dirs[rng.IntN(len(dirs))])
		o := v.h(dirs[rng.IntN(len(dirs))])
		switch rng.IntN(7) {
		case 0:
			os.MkdirAll(d, 0o755)
		case 1:
			os.WriteFile(d+"/f", make([]byte, step%100), 0o644)
		case 2:
			os.RemoveAll(d)
		case 3:
			unix.Rename(d, o)
		case 4:
			unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, o, unix.RENAME_EXCHANGE)
		case 5:
			os.Remove(d + "/l")
			os.Symlink("../"+dirs[rng.IntN(len(dirs))][1:], d+"/l")
		case 6:
			os.RemoveAll(d)
			os.Symlink(dirs[rng.IntN(len(dirs))], d)
		}
		checkStatsUncached(t, step, names, v, v.Root)
	}
}

// TestRootStatCacheConcurrent runs cached Stats while other goroutines
// change the tree, under the race detector.
func TestRootStatCacheConcurrent(t *testing.T) {
	v := newView(t)
	for i := range 8 {
		must(t, os.MkdirAll(v.h("/workspace/d"+itoa(i)+"/s"), 0o755))
		must(t, os.WriteFile(v.h("/workspace/d"+itoa(i)+"/s/f"), []byte("x"), 0o644))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				d := "/workspace/d" + itoa((i+g)%8)
				if g == 0 && i%10 == 0 {
					os.Rename(v.h(d), v.h(d+"-moved"))
					os.Rename(v.h(d+"-moved"), v.h(d))
				}
				if fi, err := v.Stat(d + "/s/f"); err == nil && fi.Size() != 1 {
					t.Errorf("Stat(%s/s/f) size %d", d, fi.Size())
				}
			}
		})
	}
	wg.Wait()
	must(t, v.Close())
	if _, err := v.Stat("/workspace/d0/s/f"); err == nil {
		t.Errorf("Stat after Close succeeded")
	}
}

// TestExecViewOwnChanges changes the tree through an ExecView, which reads
// change events only after its own Remove and Rename, and checks that its
// Stat and Lstat always agree with the uncached path.
func TestExecViewOwnChanges(t *testing.T) {
	root := newView(t)
	v := root.ExecView()
	rng := rand.New(rand.NewPCG(3, 4))
	dirs := []string{"/workspace/a", "/workspace/b", "/workspace/a/x", "/workspace/b/x", "/workspace/a/x/y"}
	var names []string
	for _, d := range dirs {
		names = append(names, d, d+"/f", d+"/x/f", d+"/.", d+"/..", d+"/./..")
	}
	for step := range 400 {
		d := dirs[rng.IntN(len(dirs))]
		o := dirs[rng.IntN(len(dirs))]
		switch rng.IntN(5) {
		case 0:
			v.Mkdir(d, 0o755)
		case 1:
			v.WriteFile(d+"/f", make([]byte, step%50), 0o644)
		case 2:
			v.Remove(d + "/f")
			v.Remove(d)
		case 3:
			v.Rename(d, o)
		case 4:
			v.Rename(d, d+"-old")
			v.Mkdir(d, 0o755)
		}
		checkStatsUncached(t, step, names, v, root.Root)
	}
	// Changes from outside that completed before the view's first lookup
	// are seen by it.
	must(t, os.MkdirAll(root.h("/workspace/z/z"), 0o755))
	if _, err := root.Stat("/workspace/z/z/f"); err == nil {
		t.Fatal("f exists")
	}
	must(t, os.Rename(root.h("/workspace/z"), root.h("/workspace/z2")))
	must(t, os.MkdirAll(root.h("/workspace/z/z"), 0o755))
	must(t, os.WriteFile(root.h("/workspace/z/z/f"), nil, 0o644))
	if _, err := root.ExecView().Stat("/workspace/z/z/f"); err != nil {
		t.Errorf("a new view missed a change made before it: %v", err)
	}
	if err := v.Close(); err != nil {
		t.Errorf("view Close: %v", err)
	}
	if _, err := root.Stat("/workspace"); err != nil {
		t.Errorf("the view's Close closed the root: %v", err)
	}
}

// checkStatsUncached fails unless v's Stat and Lstat of each name agree
// with root's uncached path.
func checkStatsUncached(t *testing.T, step int, names []string, v FS, root *Root) {
	t.Helper()
	for _, n := range names {
		for _, follow := range []bool{true, false} {
			flags, stat := uint64(unix.O_PATH), v.Stat
			if !follow {
				flags, stat = unix.O_PATH|unix.O_NOFOLLOW, v.Lstat
			}
			got := statDesc(stat(n))
			want := statDesc(root.statUncached("stat", n, flags))
			if got != want {
				t.Fatalf("step %d: Stat(%q, follow=%v) = %s, uncached %s", step, n, follow, got, want)
			}
		}
	}
}
