package storage_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"rung.dev/rung/storage/storagetest"
)

// TestSandboxRootSealed checks that nothing can be made beside workspace
// and tmp in a sandbox's fs/ (issue 10: an isolate-tier write to /x landed
// there, seen by neither the container nor the file API), while both stay
// fully writable, and that sealed sandboxes still fork, snapshot and
// delete. A sandbox made before the seal gets it when its view opens.
func TestSandboxRootSealed(t *testing.T) {
	p := storagetest.NewTestPool(t)
	ctx := t.Context()
	must(t, p.Create(ctx, "sbx_a"))
	r, err := p.Root("sbx_a")
	must(t, err)
	defer r.Close()
	refused := map[string]func() error{
		"create /x": func() error {
			f, err := r.OpenFile("/x", os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				f.Close()
			}
			return err
		},
		"mkdir /y":                 func() error { return r.Mkdir("/y", 0o755) },
		"symlink /z":               func() error { return r.Symlink("/workspace", "/z") },
		"rename into /":            func() error { return r.Rename("/workspace/f", "/f") },
		"create through a symlink": func() error { return r.WriteFile("/workspace/up/x", []byte("x"), 0o644) },
	}
	must(t, r.WriteFile("/workspace/f", []byte("f"), 0o644))
	must(t, r.Symlink("/", "/workspace/up"))
	for name, op := range refused {
		if err := op(); !errors.Is(err, syscall.EPERM) {
			t.Errorf("%s: %v, want EPERM", name, err)
		}
	}
	ents, err := os.ReadDir(filepath.Join(p.Path("sbx_a"), "fs"))
	must(t, err)
	if len(ents) != 2 {
		t.Errorf("fs/ holds %v, want workspace and tmp only", ents)
	}
	// Everything inside the shared directories still works.
	must(t, r.Mkdir("/workspace/d", 0o755))
	must(t, r.WriteFile("/tmp/t", []byte("t"), 0o644))
	must(t, r.Rename("/workspace/f", "/tmp/f"))
	must(t, r.Remove("/tmp/f"))

	must(t, p.Fork(ctx, "sbx_a", "sbx_b"))
	must(t, p.Snapshot(ctx, "sbx_b", "snp_b"))
	for _, name := range []string{"snp_b", "sbx_b", "sbx_a"} {
		must(t, p.Delete(ctx, name))
	}

	// A sandbox from before the seal is sealed when its view opens.
	must(t, p.Create(ctx, "sbx_old"))
	fs := filepath.Join(p.Path("sbx_old"), "fs")
	fd, err := unix.Open(fs, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	fl, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	must(t, err)
	must(t, unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, fl&^0x10))
	unix.Close(fd)
	must(t, os.WriteFile(filepath.Join(fs, "stray"), nil, 0o644)) // possible before the seal
	old, err := p.Root("sbx_old")
	must(t, err)
	defer old.Close()
	if err := old.Mkdir("/y", 0o755); !errors.Is(err, syscall.EPERM) {
		t.Errorf("mkdir /y in a sandbox sealed at open: %v, want EPERM", err)
	}
	must(t, p.Delete(ctx, "sbx_old"))
}
