package storage

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"rung.dev/rung/internal/testenv"
)

// Every way of creating an entry through a Root gives it the owner
// SetOwner set, and leaves what existed alone; without SetOwner new
// entries are the daemon's.
func TestRootOwner(t *testing.T) {
	testenv.Require(t, "root")
	v := newView(t)
	os.WriteFile(v.h("workspace/old"), []byte("x"), 0o644)
	if err := v.WriteFile("/workspace/before", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	v.SetOwner(1000, 1001)
	if uid, gid := v.Owner(); uid != 1000 || gid != 1001 {
		t.Errorf("Owner() = %d:%d, want 1000:1001", uid, gid)
	}
	f, err := v.OpenFile("/workspace/open", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	steps := []struct {
		name string
		do   func() error
	}{
		{"WriteFile", func() error { return v.WriteFile("/workspace/write", []byte("x"), 0o600) }},
		{"Mkdir", func() error { return v.Mkdir("/workspace/dir", 0o755) }},
		{"Symlink", func() error { return v.Symlink("/etc/passwd", "/workspace/link") }},
		{"create through a dangling symlink", func() error {
			if err := v.Symlink("target", "/tmp/dangling"); err != nil {
				return err
			}
			return v.WriteFile("/tmp/dangling", nil, 0o644)
		}},
		{"ExecView", func() error { return v.ExecView().WriteFile("/tmp/view", nil, 0o644) }},
		{"rewrite of an existing file", func() error { return v.WriteFile("/workspace/old", []byte("y"), 0o644) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	for p, want := range map[string][2]uint32{
		"workspace/open": {1000, 1001}, "workspace/write": {1000, 1001}, "workspace/dir": {1000, 1001},
		"workspace/link": {1000, 1001}, "tmp/dangling": {1000, 1001}, "tmp/target": {1000, 1001},
		"tmp/view": {1000, 1001},
		// Existing files keep their owner, rewritten or not.
		"workspace/old": {0, 0}, "workspace/before": {0, 0}, "workspace": {0, 0},
	} {
		var st unix.Stat_t
		if err := unix.Lstat(v.h(p), &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != want[0] || st.Gid != want[1] {
			t.Errorf("/%s is owned by %d:%d, want %d:%d", p, st.Uid, st.Gid, want[0], want[1])
		}
	}
	if err := v.Lchown("/workspace", 1000, 1001); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	unix.Lstat(v.h("workspace"), &st)
	if st.Uid != 1000 || st.Gid != 1001 {
		t.Errorf("Lchown(/workspace): owned by %d:%d", st.Uid, st.Gid)
	}
	v.checkOutside(t)
}
