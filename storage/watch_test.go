package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"rung.dev/rung"
)

// collect reads events from w until it has seen want (in order, as a
// subsequence of what came), failing on a read error.
func collect(t *testing.T, w *Watcher, want []WatchEvent) {
	t.Helper()
	var got []WatchEvent
	i := 0
	for i < len(want) {
		evs, err := w.Next()
		if err != nil {
			t.Fatalf("Next after %v: %v", got, err)
		}
		for _, e := range evs {
			got = append(got, e)
			if i < len(want) && e.Path == want[i].Path && e.Op&want[i].Op == want[i].Op {
				i++
			}
		}
	}
}

func TestWatch(t *testing.T) {
	v := newView(t)
	must(t, os.Mkdir(v.h("/workspace/old"), 0o755))
	w, err := v.Watch("/workspace", WatchOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Changes through the file view and straight on the host (as a
	// container's writes land) are both seen, at every depth, including
	// in a directory made after the watch began and in one moved.
	must(t, v.WriteFile("/workspace/a", []byte("x"), 0o644))
	must(t, os.WriteFile(v.h("/workspace/old/b"), []byte("y"), 0o644))
	must(t, os.Mkdir(v.h("/workspace/new"), 0o755))
	must(t, os.WriteFile(v.h("/workspace/new/c"), []byte("z"), 0o644))
	must(t, os.Chmod(v.h("/workspace/a"), 0o600))
	must(t, os.Rename(v.h("/workspace/old"), v.h("/workspace/moved")))
	must(t, os.WriteFile(v.h("/workspace/moved/d"), nil, 0o644))
	must(t, os.Remove(v.h("/workspace/a")))
	collect(t, w, []WatchEvent{
		{Path: "/workspace/a", Op: WatchCreate},
		{Path: "/workspace/a", Op: WatchWrite},
		{Path: "/workspace/old/b", Op: WatchCreate},
		{Path: "/workspace/new", Op: WatchCreate},
		{Path: "/workspace/new/c", Op: WatchCreate},
		{Path: "/workspace/a", Op: WatchChmod},
		{Path: "/workspace/old", Op: WatchRename},
		{Path: "/workspace/moved", Op: WatchCreate},
		{Path: "/workspace/moved/d", Op: WatchCreate},
		{Path: "/workspace/a", Op: WatchRemove},
	})
	if w.Lost() {
		t.Error("Lost() = true, want false")
	}
	// Close ends a Next that waits.
	done := make(chan error)
	go func() {
		_, err := w.Next()
		done <- err
	}()
	w.Close()
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Errorf("Next after Close = %v, want os.ErrClosed", err)
	}
}

func TestWatchNotRecursive(t *testing.T) {
	v := newView(t)
	must(t, os.Mkdir(v.h("/workspace/sub"), 0o755))
	w, err := v.Watch("/workspace", WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	must(t, os.WriteFile(v.h("/workspace/sub/deep"), nil, 0o644))
	must(t, os.WriteFile(v.h("/workspace/top"), nil, 0o644))
	evs, err := w.Next()
	if err != nil {
		t.Fatal(err)
	}
	// The first batch holds top's creation and nothing of sub/deep, which
	// was written before it: a watch of one directory does not see below.
	if !slices.ContainsFunc(evs, func(e WatchEvent) bool { return e.Path == "/workspace/top" }) ||
		slices.ContainsFunc(evs, func(e WatchEvent) bool { return e.Path == "/workspace/sub/deep" }) {
		t.Errorf("events = %v, want /workspace/top and not /workspace/sub/deep", evs)
	}
}

func TestWatchErrors(t *testing.T) {
	v := newView(t)
	must(t, os.WriteFile(v.h("/workspace/file"), nil, 0o644))
	// A link to a host directory outside the root resolves inside it,
	// where there is no such directory.
	must(t, os.Symlink(filepath.Join(v.parent, "secretdir"), v.h("/workspace/out")))
	must(t, os.Symlink("../../../..", v.h("/workspace/up")))
	for _, d := range []string{"a", "b", "c"} {
		must(t, os.MkdirAll(v.h("/tmp/"+d+"/x"), 0o755))
	}
	for _, tc := range []struct {
		name string
		opt  WatchOptions
		want error
	}{
		{"/workspace/missing", WatchOptions{}, fs.ErrNotExist},
		{"/workspace/file", WatchOptions{}, syscall.ENOTDIR},
		{"/workspace/out", WatchOptions{}, fs.ErrNotExist},
		{"/tmp", WatchOptions{Recursive: true, MaxDirs: 4}, rung.ErrLimit},
	} {
		w, err := v.Watch(tc.name, tc.opt)
		if err == nil {
			w.Close()
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("Watch(%q) = %v, want %v", tc.name, err, tc.want)
		}
	}
	// "up" climbs no higher than the root: watching it watches the view's
	// own top, and a recursive watch there never reaches the secret dir.
	w, err := v.Watch("/workspace/up", WatchOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, d := range w.dirs {
		if d != "/workspace/up" && filepath.Dir(d) == "/workspace/up" && filepath.Base(d) == "secretdir" {
			t.Errorf("watched %s", d)
		}
	}
	must(t, os.WriteFile(filepath.Join(v.parent, "secretdir", "g"), nil, 0o644))
	must(t, os.WriteFile(v.h("/tmp/marker"), nil, 0o644))
	evs, err := w.Next()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if filepath.Base(e.Path) == "g" {
			t.Errorf("saw %s, outside the root", e.Path)
		}
	}
}

// BenchmarkWatch measures how long a change takes to reach a watcher:
// from the start of a write of a new file, through the file view, to
// Next returning its creation. Side by side: a watch of one directory,
// and a recursive watch of a tree of 100 directories (the file goes into
// one of the deepest).
func BenchmarkWatch(b *testing.B) {
	for _, tc := range []struct {
		name      string
		recursive bool
	}{{"dir", false}, {"recursive", true}} {
		b.Run(tc.name, func(b *testing.B) {
			v := newView(b)
			dir := "/workspace"
			if tc.recursive {
				for i := range 10 {
					for j := range 10 {
						must(b, os.MkdirAll(v.h(fmt.Sprintf("/workspace/d%d/e%d", i, j)), 0o755))
					}
				}
				dir = "/workspace/d9/e9"
			}
			top := dir
			if tc.recursive {
				top = "/workspace"
			}
			w, err := v.Watch(top, WatchOptions{Recursive: tc.recursive})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			lat := make([]time.Duration, 0, 100_000)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p := fmt.Sprintf("%s/f%d", dir, i)
				start := time.Now()
				if err := v.WriteFile(p, nil, 0o644); err != nil {
					b.Fatal(err)
				}
				for seen := false; !seen; {
					evs, err := w.Next()
					if err != nil {
						b.Fatal(err)
					}
					seen = slices.ContainsFunc(evs, func(e WatchEvent) bool { return e.Path == p && e.Op&WatchCreate != 0 })
				}
				if len(lat) < cap(lat) {
					lat = append(lat, time.Since(start))
				}
				i++
			}
			reportPercentiles(b, lat)
		})
	}
}
