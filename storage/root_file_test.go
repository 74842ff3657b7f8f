package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
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

// TestFileOps checks that a Root's files behave as os.File does: reads,
// positioned I/O, EOF, appends, the copy paths and use after Close.
func TestFileOps(t *testing.T) {
	v := newView(t)
	f, err := v.OpenFile("/workspace/f", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	must(t, err)
	if n, err := f.Write([]byte("hello world")); n != 11 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if n, err := f.(io.WriterAt).WriteAt([]byte("W"), 6); n != 1 || err != nil {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(f)
	if string(all) != "hello World" || err != nil {
		t.Fatalf("ReadAll = %q, %v", all, err)
	}
	if n, err := f.Read(make([]byte, 4)); n != 0 || err != io.EOF {
		t.Fatalf("Read at EOF = %d, %v", n, err)
	}
	b := make([]byte, 8)
	if n, err := f.ReadAt(b, 6); n != 5 || err != io.EOF || string(b[:n]) != "World" {
		t.Fatalf("ReadAt past EOF = %d, %v", n, err)
	}
	var sb strings.Builder
	f.Seek(0, io.SeekStart)
	if n, err := f.(io.WriterTo).WriteTo(&sb); n != 11 || err != nil || sb.String() != "hello World" {
		t.Fatalf("WriteTo = %d, %v, %q", n, err, sb.String())
	}
	if n, err := f.(io.ReaderFrom).ReadFrom(strings.NewReader("!")); n != 1 || err != nil {
		t.Fatalf("ReadFrom = %d, %v", n, err)
	}
	if got, _ := os.ReadFile(v.h("/workspace/f")); string(got) != "hello World!" {
		t.Fatalf("file holds %q", got)
	}
	sc := f.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	rc, err := sc.SyscallConn()
	must(t, err)
	must(t, rc.Control(func(fd uintptr) { must(t, unix.Flock(int(fd), unix.LOCK_EX)) }))
	must(t, f.Close())
	for name, err := range map[string]error{
		"Close": f.Close(),
		"Read":  second(f.Read(b)),
		"Write": second(f.Write(b)),
		"Stat":  second(f.Stat()),
		"Seek":  second(f.Seek(0, 0)),
	} {
		if !errors.Is(err, fs.ErrClosed) {
			t.Errorf("%s after Close = %v, want fs.ErrClosed", name, err)
		}
	}
	if err := rc.Control(func(uintptr) {}); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Control after Close = %v", err)
	}

	a, err := v.OpenFile("/workspace/f", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	defer a.Close()
	if _, err := a.(io.WriterAt).WriteAt([]byte("x"), 0); err == nil {
		t.Error("WriteAt on an O_APPEND file succeeded")
	}
	if _, err := a.Write([]byte("?")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(v.h("/workspace/f")); string(got) != "hello World!?" {
		t.Fatalf("after append: %q", got)
	}
}

func second[T any](_ T, err error) error { return err }

// TestReadEOF checks that ReadEOF reports the end of a regular file with
// its last, short read, and behaves as Read on a directory.
func TestReadEOF(t *testing.T) {
	v := newView(t)
	must(t, os.WriteFile(v.h("/workspace/f"), []byte("hello"), 0o644))
	f, err := v.OpenFile("/workspace/f", os.O_RDONLY, 0)
	must(t, err)
	defer f.Close()
	re := f.(interface{ ReadEOF([]byte) (int, error) })
	b := make([]byte, 3)
	if n, err := re.ReadEOF(b); n != 3 || err != nil {
		t.Fatalf("first ReadEOF = %d, %v", n, err)
	}
	if n, err := re.ReadEOF(b); n != 2 || err != io.EOF {
		t.Fatalf("short ReadEOF = %d, %v, want 2, EOF", n, err)
	}
	d, err := v.OpenFile("/workspace", os.O_RDONLY, 0)
	must(t, err)
	defer d.Close()
	if _, err := d.(interface{ ReadEOF([]byte) (int, error) }).ReadEOF(b); err == nil || err == io.EOF {
		t.Errorf("ReadEOF of a directory = %v, want EISDIR", err)
	}
}
