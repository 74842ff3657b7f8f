package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

func need(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// inContainer runs command in the sandbox's container and returns its stdout,
// failing the test unless it exits 0.
func inContainer(t testing.TB, c *client.Client, id, command string) string {
	t.Helper()
	res, err := c.Exec(t.Context(), id, client.ExecRequest{Command: command, Backend: rung.BackendContainer, TimeoutMS: 120000})
	if err != nil {
		t.Fatalf("exec %q in %s: %v", command, id, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exec %q in %s: exit %d: %s%s", command, id, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// installScript installs, offline, a package under /usr (a .deb built here
// with dpkg-deb, installed with sudo dpkg -i) and one under the user's home
// (a local Python package pip-installed into a venv there), and leaves
// files in /workspace and /tmp. It runs as the sandbox's user.
const installScript = `set -e
cd /tmp
mkdir -p deb/DEBIAN deb/usr/bin
printf 'Package: rung-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: rung <rung@example.com>\nDescription: rung test package\n' > deb/DEBIAN/control
printf '#!/bin/sh\necho hello from a deb\n' > deb/usr/bin/rung-hello
chmod 755 deb/usr/bin/rung-hello
dpkg-deb --build --root-owner-group deb rung-hello.deb >/dev/null
sudo -n dpkg -i rung-hello.deb >/dev/null
python3 -m venv ~/venv
mkdir -p hello/hello_rung
echo 'def greet(): return "hello from pip"' > hello/hello_rung/__init__.py
printf 'from setuptools import setup\nsetup(name="hello-rung", version="1.0", packages=["hello_rung"])\n' > hello/setup.py
~/venv/bin/pip install -q --no-index --no-build-isolation --no-use-pep517 ./hello
echo work > /workspace/work.txt
echo scratch > /tmp/scratch.txt`

// checkScript prints what installScript left, from wherever it runs.
const checkScript = `rung-hello; dpkg -l rung-hello | tail -1 | cut -c1-2; ~/venv/bin/python -c 'import hello_rung; print(hello_rung.greet())'; cat /workspace/work.txt /tmp/scratch.txt; id -un; stat -c %U /workspace/work.txt ~/venv`

const checkWant = "hello from a deb\nii\nhello from pip\nwork\nscratch\nuser\nuser\nuser\n"

// TestSnapshotRoundTripContainer snapshots a sandbox of the base image
// whose container is running (and again frozen), with a package installed
// by dpkg under /usr and one by pip under /home/user, files in /workspace
// and /tmp, and a background process writing: a sandbox restored from
// either snapshot has all of it in its own container, on the same image
// digest, as the same user. A restore asking for another image, or a
// server without the digest (an export imported into a second daemon), is
// a conflict naming both digests.
func TestSnapshotRoundTripContainer(t *testing.T) {
	c, _ := startBaseDaemon(t)
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{Name: "dev"})
	need(t, err)
	if !strings.HasPrefix(sb.Image, "base@sha256:") || sb.User != "user" {
		t.Fatalf("sandbox image %q user %q", sb.Image, sb.User)
	}
	inContainer(t, c, "dev", installScript)
	// A process still writing when the snapshots are taken.
	_, err = c.StartProcess(ctx, "dev", client.ProcessRequest{Command: "while :; do date >> /workspace/clock; sleep 0.01; done"})
	need(t, err)
	crash, err := c.Snapshot(ctx, "dev", client.SnapshotRequest{Name: "crash"})
	need(t, err)
	frozen, err := c.Snapshot(ctx, "dev", client.SnapshotRequest{Name: "frozen", Freeze: true})
	need(t, err)
	if crash.Image != sb.Image || crash.Consistency != "crash" || frozen.Consistency != "frozen" {
		t.Errorf("snapshots = %+v / %+v", crash, frozen)
	}
	if crash.SizeBytes <= 0 {
		t.Errorf("snapshot size %d, want the sandbox's usage", crash.SizeBytes)
	}
	for _, snap := range []string{"crash", "frozen"} {
		r, err := c.Create(ctx, client.CreateRequest{FromSnapshot: snap})
		need(t, err)
		if r.Image != sb.Image || r.Size != sb.Size || r.User != sb.User {
			t.Errorf("restored from %s: image %s size %+v user %s, want %s %+v %s", snap, r.Image, r.Size, r.User, sb.Image, sb.Size, sb.User)
		}
		if got := inContainer(t, c, string(r.ID), checkScript); got != checkWant {
			t.Errorf("restored from %s prints %q, want %q", snap, got, checkWant)
		}
	}

	// Another image: refused, naming both digests.
	lite, err := c.Create(ctx, client.CreateRequest{Image: "lite"})
	need(t, err)
	_, err = c.Create(ctx, client.CreateRequest{FromSnapshot: "crash", Image: "lite"})
	if !errors.Is(err, rung.ErrConflict) || !strings.Contains(err.Error(), sb.Image) || !strings.Contains(err.Error(), lite.Image) {
		t.Errorf("restore onto another image: %v, want conflict naming %s and %s", err, sb.Image, lite.Image)
	}
	if _, err := c.Rollback(ctx, string(lite.ID), "crash"); !errors.Is(err, rung.ErrConflict) {
		t.Errorf("rollback of a lite sandbox to a base snapshot: %v, want conflict", err)
	}

	// A server that lacks the digest: the archive imports (it is files),
	// the restore is refused.
	r, err := c.ExportSnapshot(ctx, "crash", "")
	need(t, err)
	archive, err := io.ReadAll(r)
	r.Close()
	need(t, err)
	c2, _, _ := startContainerDaemonWith(t, DaemonConfig{})
	in, err := c2.ImportSnapshot(ctx, bytes.NewReader(archive), client.ImportOptions{})
	need(t, err)
	_, err = c2.Create(ctx, client.CreateRequest{FromSnapshot: string(in.ID)})
	if !errors.Is(err, rung.ErrConflict) || !strings.Contains(err.Error(), sb.Image) || !strings.Contains(err.Error(), "does not have") {
		t.Errorf("restore where the image is missing: %v, want conflict naming %s", err, sb.Image)
	}
}

// TestForkIsolationContainer forks a sandbox with a running container ten
// times; each fork writes the same path in /workspace, /tmp and its root
// filesystem from its own container, and sees only its own writes, as
// the parent sees none of them.
func TestForkIsolationContainer(t *testing.T) {
	c, _ := startContainerDaemon(t)
	ctx := t.Context()
	_, err := c.Create(ctx, client.CreateRequest{Name: "parent"})
	need(t, err)
	inContainer(t, c, "parent", "echo base | tee /workspace/f /tmp/f /etc/f >/dev/null")
	forks, err := c.Fork(ctx, "parent", client.ForkRequest{Count: 10})
	need(t, err)
	var wg sync.WaitGroup
	for i, f := range forks {
		if f.Err != nil {
			t.Fatalf("fork %d: %v", i, f.Err)
		}
		wg.Go(func() {
			id := string(f.Sandbox.ID)
			res, err := c.Exec(ctx, id, client.ExecRequest{Command: fmt.Sprintf("cat /workspace/f && echo %d | tee /workspace/f /tmp/f /etc/f >/dev/null", i), Backend: rung.BackendContainer})
			if err != nil || res.ExitCode != 0 || res.Stdout != "base\n" {
				t.Errorf("fork %d: %+v, %v", i, res, err)
			}
		})
	}
	wg.Wait()
	for i, f := range forks {
		want := fmt.Sprintf("%d\n%d\n%d\n", i, i, i)
		if got := inContainer(t, c, string(f.Sandbox.ID), "cat /workspace/f /tmp/f /etc/f"); got != want {
			t.Errorf("fork %d reads %q, want only its own writes %q", i, got, want)
		}
	}
	if got := inContainer(t, c, "parent", "cat /workspace/f /tmp/f /etc/f"); got != "base\nbase\nbase\n" {
		t.Errorf("parent reads %q after its forks wrote", got)
	}
}

// TestRollbackWithProcess rolls back a sandbox while a background process
// writes in it: the container is stopped gracefully (the process's exit
// and the container's stop are journaled), the files are the snapshot's,
// the sandbox keeps its id, name and journal, and its next container exec
// starts a new container on the snapshot's root filesystem.
func TestRollbackWithProcess(t *testing.T) {
	c, _ := startContainerDaemon(t)
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{Name: "work"})
	need(t, err)
	id := string(sb.ID)
	inContainer(t, c, id, "echo v1 > /workspace/f; echo v1 > /etc/f")
	_, err = c.Snapshot(ctx, id, client.SnapshotRequest{Name: "v1"})
	need(t, err)
	p, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "while :; do echo tick >> /workspace/log; sleep 0.01; done"})
	need(t, err)
	// Wait for the process itself to have written, rather than sleeping.
	inContainer(t, c, id, "echo v2 > /workspace/f; echo v2 > /etc/f; while [ $(wc -l < /workspace/log) -lt 5 ]; do sleep 0.01; done")
	before := journalTypes(t, c, id)
	back, err := c.Rollback(ctx, "work", "v1")
	need(t, err)
	if back.ID != sb.ID || back.Name != "work" || back.State != rung.StateReady {
		t.Errorf("after rollback: %+v", back)
	}
	after := journalTypes(t, c, id)
	if len(after) <= len(before) || !sameStart(before, after) {
		t.Errorf("journal was replaced, not continued: %d then %d entries", len(before), len(after))
	}
	for _, typ := range []string{"process.exited", "container.stopped", "sandbox.restored"} {
		waitJournal(t, c, id, typ)
	}
	if got := inContainer(t, c, id, "cat /workspace/f /etc/f; test -e /workspace/log && echo log survived || true"); got != "v1\nv1\n" {
		t.Errorf("after rollback the container reads %q", got)
	}
	if _, err := c.ProcessOutput(ctx, id, p.ID, 0, false, func(client.OutputFrame) error { return nil }); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("the old container's process after rollback: %v, want not found", err)
	}
}

func sameStart(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// lastEntry returns the data of the sandbox's last journal entry of
// typ, or nil.
func lastEntry(t *testing.T, c *client.Client, id, typ string) map[string]any {
	t.Helper()
	evs, err := c.Journal(t.Context(), id, 0)
	need(t, err)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == typ {
			var d map[string]any
			json.Unmarshal(evs[i].Data, &d)
			return d
		}
	}
	return nil
}
