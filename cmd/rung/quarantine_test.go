package main

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/storage/storagetest"
)

// deleteStatus deletes sandbox id through the raw API and returns the
// HTTP status.
func deleteStatus(t *testing.T, addr, token, id string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "DELETE", "http://"+addr+"/v1/sandboxes/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// fillFile fills a new file at path (see [storagetest.Fill]).
func fillFile(t *testing.T, path string, max int64) (int64, error) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return storagetest.Fill(f, max)
}

// TestDeleteFullNestedThroughDaemon is issue 10's finding 3 through a
// real daemon: a sandbox whose subvolume holds a nested subvolume, filled
// to its quota, is deleted with 204 and leaves nothing behind (it used to
// answer 500 and leak both subvolumes). The nested subvolume is made from
// the test, as root, because containers refuse the ioctl.
func TestDeleteFullNestedThroughDaemon(t *testing.T) {
	d, addr := startDaemonWith(t, DaemonConfig{Data: t.TempDir(), NoContainers: true})
	c := client.New(addr, client.WithToken(d.Token))
	const limit = 64 << 20
	sb, err := c.Create(t.Context(), client.CreateRequest{Size: rung.Size{MilliCPU: 250, MemoryBytes: 256 << 20, DiskBytes: limit}})
	if err != nil {
		t.Fatal(err)
	}
	subvol := d.pool.Path(string(sb.ID))
	ws := filepath.Join(subvol, "fs/workspace")
	storagetest.NestedSubvolume(t, filepath.Join(ws, "sub"))
	if n, err := fillFile(t, filepath.Join(ws, "sub/big"), 96<<20); err != nil {
		t.Fatalf("writing into the nested subvolume stopped at %d bytes: %v", n, err)
	}
	if n, err := fillFile(t, filepath.Join(ws, "fill"), 4*limit); !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("filling the sandbox: wrote %d bytes, err %v; want EDQUOT", n, err)
	}
	if code := deleteStatus(t, addr, d.Token, string(sb.ID)); code != http.StatusNoContent {
		t.Fatalf("DELETE of a full sandbox with a nested subvolume: HTTP %d, want 204", code)
	}
	if _, err := os.Stat(subvol); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sandbox's subvolume after DELETE: %v, want it gone", err)
	}
	if names, err := d.pool.List(t.Context()); err != nil || len(names) != 0 {
		t.Errorf("pool after DELETE holds %v (%v), want nothing", names, err)
	}
}

// TestRestartAfterQuarantine checks that a sandbox whose subvolume the
// kernel will not remove neither fails its DELETE nor keeps the daemon
// from starting: it is quarantined, every start serves the rest, and the
// first start after the obstacle is gone finishes the removal.
func TestRestartAfterQuarantine(t *testing.T) {
	cfg := DaemonConfig{Data: t.TempDir(), NoContainers: true}
	d, addr := startDaemonWith(t, cfg)
	c := client.New(addr, client.WithToken(d.Token))
	ctx := t.Context()
	stuck, err := c.Create(ctx, client.CreateRequest{Name: "stuck"})
	if err != nil {
		t.Fatal(err)
	}
	subvol := d.pool.Path(string(stuck.ID))
	undo := storagetest.Undeletable(t, subvol)
	if code := deleteStatus(t, addr, d.Token, "stuck"); code != http.StatusNoContent {
		t.Fatalf("DELETE of an undeletable sandbox: HTTP %d, want 204 (quarantined)", code)
	}
	if _, err := c.Get(ctx, "stuck"); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("Get after DELETE: err = %v, want not found", err)
	}

	d.Close()
	d, addr = startDaemonWith(t, cfg)
	if q := d.Report.Quarantined; len(q) != 1 || q[0].ID != stuck.ID {
		t.Errorf("restart report quarantined = %+v, want %s", q, stuck.ID)
	}
	if _, err := os.Stat(subvol); err != nil {
		t.Errorf("quarantined subvolume: %v, want it left in place", err)
	}
	c = client.New(addr, client.WithToken(d.Token))
	sb, err := c.Create(ctx, client.CreateRequest{Name: "stuck"})
	if err != nil {
		t.Fatalf("create after a quarantine: %v", err)
	}
	res, err := c.Exec(ctx, string(sb.ID), client.ExecRequest{Command: "echo ok", Backend: rung.BackendIsolate})
	if err != nil || res.Stdout != "ok\n" {
		t.Errorf("exec after a quarantine = %+v, %v", res, err)
	}

	undo()
	d.Close()
	d, addr = startDaemonWith(t, cfg)
	// A request first: it also makes sure Serve runs before the test's
	// cleanup closes the daemon (Close before Serve starts would leave
	// Serve running).
	c = client.New(addr, client.WithToken(d.Token))
	if _, err := c.Get(ctx, "stuck"); err != nil {
		t.Errorf("Get of the new \"stuck\" after the last restart: %v", err)
	}
	if len(d.Report.Quarantined) != 0 || len(d.Report.Unfinished) != 1 || d.Report.Unfinished[0] != stuck.ID {
		t.Errorf("restart without the obstacle: quarantined %+v, unfinished %v; want %s finished", d.Report.Quarantined, d.Report.Unfinished, stuck.ID)
	}
	if _, err := os.Stat(subvol); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("subvolume after the removal was finished: %v, want it gone", err)
	}
}
