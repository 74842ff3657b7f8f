package storage

import (
	"fmt"
	"io"
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadDirChunksAndPool reads a directory larger than one getdents
// buffer in small batches, closes another half-read, and reads both
// again: buffers go back to the pool only when nothing in them is still
// to be read.
func TestReadDirChunksAndPool(t *testing.T) {
	v := newView(t)
	var want []string
	for i := range 600 {
		name := fmt.Sprintf("a-rather-long-file-name-%04d", i)
		want = append(want, name)
		if err := os.WriteFile(v.h("/workspace/"+name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(batch int, stopAfter int) []string {
		t.Helper()
		f, err := v.OpenFile("/workspace", os.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var got []string
		for stopAfter < 0 || len(got) < stopAfter {
			ents, err := f.ReadDir(batch)
			for _, e := range ents {
				fi, ierr := e.Info()
				if ierr != nil || fi.Name() != e.Name() || fi.IsDir() {
					t.Fatalf("Info(%s) = %v, %v", e.Name(), fi, ierr)
				}
				got = append(got, e.Name())
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(got)
		return got
	}
	if got := read(7, 50); len(got) < 50 {
		t.Fatalf("half read: %d entries", len(got))
	}
	for _, batch := range []int{7, 1000} {
		if got := read(batch, -1); !slices.Equal(got, want) {
			t.Errorf("ReadDir(%d): %d entries, want %d", batch, len(got), len(want))
		}
	}
}
