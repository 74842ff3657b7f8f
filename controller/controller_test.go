package controller_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
	"rung.dev/rung/storage/storagetest"
	"rung.dev/rung/store"
	"rung.dev/rung/store/sqlite"
)

type env struct {
	c    *controller.Controller
	st   *sqlite.DB
	pool *storage.Pool
	db   string
}

// newEnv returns a controller over a real btrfs test pool and a real
// SQLite store, with tenants "acme" and "beta".
func newEnv(t *testing.T, cfg controller.Config) *env {
	t.Helper()
	pool := storagetest.NewTestPool(t)
	e := &env{pool: pool, db: filepath.Join(t.TempDir(), "rung.db")}
	e.open(t, cfg)
	for _, id := range []rung.TenantID{"acme", "beta"} {
		if err := e.st.CreateTenant(t.Context(), store.Tenant{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) open(t *testing.T, cfg controller.Config) controller.Report {
	t.Helper()
	st, err := sqlite.Open(t.Context(), e.db)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Pool = st, e.pool
	c, rep, err := controller.New(t.Context(), cfg)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	e.c, e.st = c, st
	t.Cleanup(func() { e.close() })
	return rep
}

func (e *env) close() {
	if e.c != nil {
		e.c.Close()
		e.st.Close()
		e.c = nil
	}
}

// sandbox creates a sandbox of tenant "acme" with the defaults and
// returns its id.
func (e *env) sandbox(t *testing.T) string {
	t.Helper()
	sb, err := e.c.Create(t.Context(), "acme", controller.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return string(sb.ID)
}

// requireShell skips tests of exec output while the interpreter is a
// placeholder.
func requireShell(t *testing.T) {
	t.Helper()
	var out bytes.Buffer
	shell.New(shell.Config{}).Run(t.Context(), shell.Request{Script: "echo hi", Stdout: &out})
	if out.String() != "hi\n" {
		t.Skip("skipping: the isolate interpreter is still a placeholder (echo hi printed nothing)")
	}
}

// requireCheck skips tests of automatic routing while shell.Check is a
// placeholder.
func requireCheck(t *testing.T) {
	t.Helper()
	if err := shell.New(shell.Config{}).Check("echo hi"); err != nil {
		t.Skipf("skipping: shell.Check(\"echo hi\") = %v (placeholder?)", err)
	}
}

func TestSandboxLifecycle(t *testing.T) {
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "web", Labels: map[string]string{"env": "dev"}})
	if err != nil {
		t.Fatal(err)
	}
	if !sb.ID.Valid() || sb.State != rung.StateReady || sb.Size.Preset != rung.DefaultPreset || sb.Tenant != "acme" || sb.User != "root" {
		t.Fatalf("Create = %+v", sb)
	}
	for _, ref := range []string{string(sb.ID), "web"} {
		got, err := e.c.Get(ctx, "acme", ref)
		if err != nil || got.ID != sb.ID {
			t.Errorf("Get(%s) = %v, %v", ref, got.ID, err)
		}
		if _, err := e.c.Get(ctx, "beta", ref); !errors.Is(err, rung.ErrNotFound) {
			t.Errorf("Get(%s) as beta: err = %v, want not found", ref, err)
		}
	}
	if _, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "web"}); !errors.Is(err, rung.ErrExists) {
		t.Errorf("duplicate name: err = %v, want ErrExists", err)
	}
	if _, err := e.c.Create(ctx, "beta", controller.CreateRequest{Name: "web"}); err != nil {
		t.Errorf("same name in another tenant: %v", err)
	}
	labels := map[string]string{"env": "prod"}
	if got, err := e.c.Update(ctx, "acme", "web", controller.UpdateRequest{Labels: &labels}); err != nil || got.Labels["env"] != "prod" {
		t.Errorf("Update = %+v, %v", got.Labels, err)
	}
	list, err := e.c.List(ctx, "acme", controller.ListFilter{Labels: map[string]string{"env": "prod"}})
	if err != nil || len(list) != 1 || list[0].ID != sb.ID {
		t.Errorf("List by label = %v, %v", list, err)
	}
	if err := e.c.Delete(ctx, "beta", string(sb.ID)); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("Delete as beta: err = %v, want not found", err)
	}
	if err := e.c.Delete(ctx, "acme", string(sb.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Get(ctx, "acme", string(sb.ID)); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("Get after delete: err = %v", err)
	}
	if ok, _ := e.pool.Exists(ctx, string(sb.ID)); ok {
		t.Errorf("subvolume %s survives delete", sb.ID)
	}
}

// TestGetActive checks Get of a sandbox with an active actor (answered
// from the actor's copy of its row) against the store's row.
func TestGetActive(t *testing.T) {
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{Labels: map[string]string{"a": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	// An exec makes the actor; the update after it writes through it.
	if _, err := e.c.Exec(ctx, "acme", string(sb.ID), rung.ExecRequest{Command: "true"}, controller.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"a": "2", "b": "x"}
	if _, err := e.c.Update(ctx, "acme", string(sb.ID), controller.UpdateRequest{Labels: &labels}); err != nil {
		t.Fatal(err)
	}
	got, err := e.c.Get(ctx, "acme", string(sb.ID))
	if err != nil {
		t.Fatal(err)
	}
	row, err := e.st.GetSandbox(ctx, "acme", sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, row.Sandbox) {
		t.Errorf("Get = %+v\nstore has %+v", got, row.Sandbox)
	}
	got.Labels["a"] = "changed by the caller"
	if again, _ := e.c.Get(ctx, "acme", string(sb.ID)); again.Labels["a"] != "2" {
		t.Errorf("a caller's change to Get's labels reached the next Get: %v", again.Labels)
	}
	if _, err := e.c.Get(ctx, "beta", string(sb.ID)); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("another tenant's Get of an active sandbox: %v, want ErrNotFound", err)
	}
	if admin, err := e.c.Get(ctx, "", string(sb.ID)); err != nil || admin.ID != sb.ID {
		t.Errorf("Get with no tenant (admin): %v, %v", admin.ID, err)
	}
	if err := e.c.Delete(ctx, "acme", string(sb.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Get(ctx, "acme", string(sb.ID)); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("Get after delete: %v, want ErrNotFound", err)
	}
}

func TestCreateInvalid(t *testing.T) {
	e := newEnv(t, controller.Config{Sizes: controller.SizePolicies{Tenants: map[rung.TenantID]rung.SizePolicy{"*": {MaxMemoryBytes: 1 << 30}}}})
	tests := []struct {
		name string
		req  controller.CreateRequest
		want error
	}{
		{"bad name", controller.CreateRequest{Name: "Bad/Name"}, rung.ErrInvalid},
		{"long name", controller.CreateRequest{Name: strings.Repeat("a", 64)}, rung.ErrInvalid},
		{"bad label", controller.CreateRequest{Labels: map[string]string{"A B": "x"}}, rung.ErrInvalid},
		{"bad preset", controller.CreateRequest{Size: rung.Size{Preset: "huge"}}, rung.ErrInvalid},
		{"above caps", controller.CreateRequest{Size: rung.Size{Preset: "standard-4"}}, rung.ErrPermission},
		{"bad isolation", controller.CreateRequest{Isolation: "vm"}, rung.ErrInvalid},
		{"bad env", controller.CreateRequest{Env: map[string]string{"1X": "y"}}, rung.ErrInvalid},
		{"relative link_workspace", controller.CreateRequest{LinkWorkspace: "home/user"}, rung.ErrInvalid},
		{"unclean link_workspace", controller.CreateRequest{LinkWorkspace: "/home/../etc"}, rung.ErrInvalid},
		{"root link_workspace", controller.CreateRequest{LinkWorkspace: "/"}, rung.ErrInvalid},
		{"link_workspace in the workspace", controller.CreateRequest{LinkWorkspace: "/workspace/x"}, rung.ErrInvalid},
		{"link_workspace in /tmp", controller.CreateRequest{LinkWorkspace: "/tmp"}, rung.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := e.c.Create(t.Context(), "acme", tc.req); !errors.Is(err, tc.want) {
				t.Errorf("Create(%+v) err = %v, want %v", tc.req, err, tc.want)
			}
		})
	}
}

func TestSandboxLimit(t *testing.T) {
	e := newEnv(t, controller.Config{Limits: controller.Limits{SandboxesPerTenant: 1}})
	if _, err := e.c.Create(t.Context(), "acme", controller.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Create(t.Context(), "acme", controller.CreateRequest{}); !errors.Is(err, rung.ErrLimit) {
		t.Errorf("second sandbox: err = %v, want ErrLimit", err)
	}
}

func TestFiles(t *testing.T) {
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	id := e.sandbox(t)
	if _, err := e.c.WriteFile(ctx, "acme", id, controller.WriteRequest{Path: "dir/a.txt", Mode: 0o600}, strings.NewReader("hello\n")); err != nil {
		t.Fatal(err)
	}
	r, info, err := e.c.ReadFile(ctx, "acme", id, "/workspace/dir/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "hello\n" || info.Size != 6 || info.Mode != "0600" {
		t.Errorf("ReadFile = %q, %+v", b, info)
	}
	if _, _, err := e.c.ReadFile(ctx, "beta", id, "dir/a.txt"); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("ReadFile as beta: err = %v, want not found", err)
	}
	if err := e.c.Mkdir(ctx, "acme", id, "x/y/z", true); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Move(ctx, "acme", id, "dir/a.txt", "x/b.txt"); err != nil {
		t.Fatal(err)
	}
	list, err := e.c.ListFiles(ctx, "acme", id, "/workspace", true)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range list {
		paths = append(paths, f.Path+":"+f.Type)
	}
	want := "/workspace/dir:dir /workspace/x:dir /workspace/x/b.txt:file /workspace/x/y:dir /workspace/x/y/z:dir"
	if got := strings.Join(paths, " "); got != want {
		t.Errorf("ListFiles = %s, want %s", got, want)
	}
	var tarball bytes.Buffer
	if err := e.c.ExportTar(ctx, "acme", id, "/workspace/x", &tarball); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.ImportTar(ctx, "acme", id, "/tmp/copy", &tarball, 0); err != nil {
		t.Fatal(err)
	}
	if fi, err := e.c.Stat(ctx, "acme", id, "/tmp/copy/b.txt"); err != nil || fi.Size != 6 {
		t.Errorf("Stat of untarred file = %+v, %v", fi, err)
	}
	// An archive that plants a symlink and writes through it is refused
	// (the file API's import is storage's): nothing lands outside the
	// target directory.
	var evil bytes.Buffer
	tw := tar.NewWriter(&evil)
	tw.WriteHeader(&tar.Header{Name: "up", Typeflag: tar.TypeSymlink, Linkname: "/workspace"})
	tw.WriteHeader(&tar.Header{Name: "up/planted.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
	tw.Write([]byte("x"))
	tw.Close()
	if _, err := e.c.ImportTar(ctx, "acme", id, "/tmp/evil", &evil, 0); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("import writing through a planted symlink: %v, want invalid", err)
	}
	if _, err := e.c.Stat(ctx, "acme", id, "/workspace/planted.txt"); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("a file written through the planted symlink: %v", err)
	}
	if err := e.c.RemoveFile(ctx, "acme", id, "x", false); !errors.Is(err, rung.ErrConflict) {
		t.Errorf("remove non-empty dir: err = %v, want conflict", err)
	}
	if err := e.c.RemoveFile(ctx, "acme", id, "x", true); err != nil {
		t.Fatal(err)
	}
	bad := []string{"../etc/passwd", "/etc/passwd", "a/../../b", "a\x00b", strings.Repeat("a/", 3000), "/workspace/" + strings.Repeat("x", 300), ""}
	for _, p := range bad {
		if _, err := e.c.WriteFile(ctx, "acme", id, controller.WriteRequest{Path: p}, strings.NewReader("x")); !errors.Is(err, rung.ErrInvalid) {
			t.Errorf("WriteFile(%.40q) err = %v, want invalid", p, err)
		}
	}
	evs, _, err := e.c.Events(ctx, "acme", id, controller.EventQuery{JournalOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	if got := strings.Join(types, " "); got != "sandbox.created file.written file.mkdir file.moved file.untarred file.removed" {
		t.Errorf("journal = %s", got)
	}
}

func TestEffects(t *testing.T) {
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first, created, err := e.c.DeclareEffect(ctx, "acme", string(sb.ID), controller.EffectRequest{Key: "pr-1", Result: []byte(`{"url":"a"}`)})
	if err != nil || !created {
		t.Fatalf("first declare = %v, %v", created, err)
	}
	again, created, err := e.c.DeclareEffect(ctx, "acme", string(sb.ID), controller.EffectRequest{Key: "pr-1", Result: []byte(`{"url":"b"}`)})
	if err != nil || created || string(again.Result) != string(first.Result) {
		t.Errorf("second declare = %s, %v, %v; want the first result", again.Result, created, err)
	}
	if _, _, err := e.c.DeclareEffect(ctx, "beta", string(sb.ID), controller.EffectRequest{Key: "pr-1"}); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("declare as beta: err = %v", err)
	}
}

// TestExecStartDurable checks when an isolate exec's start entry is
// committed: an exec that changes nothing and has not ended yet gets it
// after a few milliseconds, one that changes a file before its change,
// and a quick one with its end; every exec's entries are in order.
func TestExecStartDurable(t *testing.T) {
	e := newEnv(t, controller.Config{})
	ctx := t.Context()
	sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	journal := func() []string {
		evs, err := e.st.ListEvents(ctx, sb.ID, store.EventQuery{JournalOnly: true, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, ev := range evs {
			types = append(types, ev.Type)
		}
		return types
	}
	waitFor := func(what string, ok func([]string) bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute) // only a hang fails
		for !ok(journal()) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: journal %v", what, journal())
			}
			time.Sleep(time.Millisecond)
		}
	}
	count := func(types []string, typ string) int {
		n := 0
		for _, s := range types {
			if s == typ {
				n++
			}
		}
		return n
	}
	before := len(journal())

	// Blocked reading its stdin, having changed nothing: the start is
	// committed while it waits.
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		res, err := e.c.Exec(ctx, "acme", string(sb.ID), rung.ExecRequest{Command: "read v; echo \"$v\" > /workspace/f; read w; echo \"$w\""}, controller.ExecOptions{Stdin: pr})
		if err == nil && (res.ExitCode != 0 || string(res.Stdout) != "two\n") {
			err = fmt.Errorf("exec: exit %d, stdout %q", res.ExitCode, res.Stdout)
		}
		done <- err
	}()
	waitFor("a waiting exec's start", func(j []string) bool { return count(j[before:], string(rung.EntryExecStarted)) == 1 })
	if n := count(journal()[before:], string(rung.EntryExecEnded)); n != 0 {
		t.Fatalf("exec ended early: %v", journal())
	}
	io.WriteString(pw, "one\ntwo\n")
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	j := journal()[before:]
	if len(j) != 2 || j[0] != string(rung.EntryExecStarted) || j[1] != string(rung.EntryExecEnded) {
		t.Errorf("journal of the exec: %v, want started then ended", j)
	}

	// Quick execs, changing files or not: both entries, in order.
	for _, cmd := range []string{"echo hi", "echo x > /workspace/g", "read l < /workspace/g; echo $l"} {
		before := len(journal())
		if _, err := e.c.Exec(ctx, "acme", string(sb.ID), rung.ExecRequest{Command: cmd}, controller.ExecOptions{}); err != nil {
			t.Fatal(err)
		}
		if j := journal()[before:]; len(j) != 2 || j[0] != string(rung.EntryExecStarted) || j[1] != string(rung.EntryExecEnded) {
			t.Errorf("%s: journal %v, want started then ended", cmd, j)
		}
	}
}
