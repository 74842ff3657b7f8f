package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rung.dev/rung/client"
)

// TestSnapshotCLI drives the snapshot verbs of the real binary against a
// real `rung serve`: checkpoint, snapshot create/ls/get/pin/export/import/
// fork/rm, create --from, rollback, fork, pause --memory.
func TestSnapshotCLI(t *testing.T) {
	bin := rungBinary(t)
	p := startServe(t, bin, t.TempDir())
	defer p.stop(t)
	ok := func(stdin string, args ...string) string {
		t.Helper()
		out, code := p.run(t, bin, stdin, args...)
		if code != 0 {
			t.Fatalf("rung %s: exit %d", strings.Join(args, " "), code)
		}
		return strings.TrimSpace(out)
	}
	ok("", "create", "--name", "app")
	ok("v1", "put", "app", "f")
	first := ok("", "checkpoint", "app")
	if !strings.HasPrefix(first, "snp_") {
		t.Fatalf("checkpoint printed %q", first)
	}
	named := ok("", "snapshot", "create", "app", "--name", "base", "--label", "k=v", "--ttl", "1h")
	ok("v2", "put", "app", "f")
	if ls := ok("", "snapshot", "ls", "--label", "k=v"); !strings.Contains(ls, named) || strings.Contains(ls, first) {
		t.Errorf("snapshot ls --label k=v:\n%s", ls)
	}
	var s client.Snapshot
	if err := json.Unmarshal([]byte(ok("", "snapshot", "get", "base")), &s); err != nil || string(s.ID) != named || s.TTLMS != 3600000 {
		t.Errorf("snapshot get: %+v, %v", s, err)
	}
	ok("", "snapshot", "pin", "base")
	if ls := ok("", "snapshot", "ls", "--name", "base"); !strings.Contains(ls, "pinned") {
		t.Errorf("pinned snapshot listed as\n%s", ls)
	}
	ok("", "create", "--name", "copy", "--from", "base")
	if got := ok("", "get", "copy", "f"); got != "v1" {
		t.Errorf("create --from: f = %q", got)
	}
	ok("", "rollback", "app", "base")
	if got := ok("", "get", "app", "f"); got != "v1" {
		t.Errorf("rollback: f = %q", got)
	}
	forks := strings.Fields(ok("", "fork", "app", "--count", "2", "--name", "left"))
	if len(forks) != 2 || !strings.HasPrefix(forks[0], "sbx_") {
		t.Errorf("fork printed %q", forks)
	}
	if out, code := p.run(t, bin, "", "fork", "app", "--name", "left"); code != 1 || out != "" {
		t.Errorf("fork with a taken name: exit %d, %q; want exit 1", code, out)
	}
	if f := strings.Fields(ok("", "snapshot", "fork", "base", "--count", "3")); len(f) != 3 {
		t.Errorf("snapshot fork printed %q", f)
	}
	file := filepath.Join(t.TempDir(), "base.rungsnap")
	ok("", "snapshot", "export", "base", "-o", file)
	imported := ok("", "snapshot", "import", file, "--name", "again")
	if !strings.HasPrefix(imported, "snp_") {
		t.Errorf("import printed %q", imported)
	}
	if ents, _ := os.ReadDir(filepath.Dir(file)); len(ents) != 1 {
		t.Errorf("export left %d files, want only the archive", len(ents))
	}
	if _, code := p.run(t, bin, "", "pause", "app", "--memory"); code == 0 {
		t.Error("pause --memory succeeded; this server has no memory checkpoints")
	}
	ok("", "snapshot", "rm", "again", first)
	if _, code := p.run(t, bin, "", "snapshot", "get", first); code != 3 {
		t.Errorf("get of a deleted snapshot: exit %d, want 3 (not found)", code)
	}
}
