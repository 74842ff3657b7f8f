package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/shell/tools"
)

// startContainerDaemon runs the daemon in-process with the container
// tier: the static rung binary built for the test is the agent.
func startContainerDaemon(t *testing.T) (*client.Client, *Daemon) {
	t.Helper()
	c, d, _ := startContainerDaemonWith(t, DaemonConfig{})
	return c, d
}

// startContainerDaemonWith is startContainerDaemon with cfg (Data
// default a temporary directory; Tools, PoolImageSize and AgentBinary
// set here); it also returns the API's address.
func startContainerDaemonWith(t testing.TB, cfg DaemonConfig) (*client.Client, *Daemon, string) {
	t.Helper()
	testenv.Require(t, "root", "mkfs.btrfs", "runc", "busybox")
	bin := rungBinary(t)
	if cfg.Data == "" {
		cfg.Data = t.TempDir()
	}
	cfg.Tools, cfg.PoolImageSize, cfg.AgentBinary = tools.All(), 2<<30, bin
	d, err := OpenDaemon(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.containers == nil {
		d.Close()
		t.Fatal("container tier unavailable")
	}
	addr := serveDaemon(t, d)
	return client.New(addr, client.WithToken(d.Token)), d, addr
}

// journalTypes returns the sandbox's journal entry types in order.
func journalTypes(t *testing.T, c *client.Client, id string) []string {
	t.Helper()
	evs, err := c.Journal(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// waitJournal waits (bounded) until the journal holds an entry of typ.
func waitJournal(t *testing.T, c *client.Client, id, typ string) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var found json.RawMessage
	errFound := errors.New("found")
	err := c.Events(ctx, id, client.EventsOptions{Follow: true, JournalOnly: true}, func(e client.Event) error {
		if e.Type == typ {
			found = e.Data
			return errFound
		}
		return nil
	})
	if !errors.Is(err, errFound) {
		t.Fatalf("no %s in the journal (%v): %v", typ, err, journalTypes(t, c, id))
	}
	return found
}

func TestContainerTierEndToEnd(t *testing.T) {
	c, d := startContainerDaemon(t)
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{Name: "ct"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sb.Image, "lite@sha256:") {
		t.Errorf("image %q not pinned by digest", sb.Image)
	}
	id := string(sb.ID)

	// A command the isolate tier lacks goes to the container.
	res, err := c.Exec(ctx, id, client.ExecRequest{Command: "uname -s"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Backend != rung.BackendContainer || string(res.Stdout) != "Linux\n" {
		t.Fatalf("uname -s: backend %s, stdout %q, stderr %q", res.Backend, res.Stdout, res.Stderr)
	}
	// Files cross both ways at once.
	if _, err := c.Exec(ctx, id, client.ExecRequest{Command: "echo from-isolate > a.txt", Backend: rung.BackendIsolate}); err != nil {
		t.Fatal(err)
	}
	res, err = c.Exec(ctx, id, client.ExecRequest{Command: "cat /workspace/a.txt && echo from-container > b.txt", Backend: rung.BackendContainer})
	if err != nil || string(res.Stdout) != "from-isolate\n" {
		t.Fatalf("container reads isolate's file: %q, %v", res.Stdout, err)
	}
	rc, err := c.ReadFile(ctx, id, "/workspace/b.txt")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	got.ReadFrom(rc)
	rc.Close()
	if got.String() != "from-container\n" {
		t.Errorf("API reads container's file: %q", got.String())
	}
	if sb, _ := c.Get(ctx, id); sb.State != rung.StateRunning {
		t.Errorf("state %s, want running", sb.State)
	}
	waitJournal(t, c, id, "container.started")

	// A background server, readiness, output re-attach, signal.
	srv, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "echo serving; exec httpd -f -p 8080 -h /workspace"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitPort(ctx, id, 8080, 10*time.Second); err != nil {
		t.Fatalf("port 8080 not ready: %v", err)
	}
	res, err = c.Exec(ctx, id, client.ExecRequest{Command: "wget -q -O - http://127.0.0.1:8080/a.txt", Backend: rung.BackendContainer})
	if err != nil || string(res.Stdout) != "from-isolate\n" {
		t.Errorf("fetch from the dev server: %q %q %v", res.Stdout, res.Stderr, err)
	}
	var out bytes.Buffer
	if _, err := c.ProcessOutput(ctx, id, srv.ID, 0, false, func(f client.OutputFrame) error { out.Write(f.Data); return nil }); err != nil {
		t.Fatal(err)
	}
	if out.String() != "serving\n" {
		t.Errorf("process output %q", out.String())
	}
	if err := c.SignalProcess(ctx, id, srv.ID, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	exit, err := c.ProcessOutput(ctx, id, srv.ID, 0, true, func(client.OutputFrame) error { return nil })
	if err != nil || exit == nil || exit.Signal != "SIGTERM" {
		t.Errorf("after SIGTERM: %+v, %v", exit, err)
	}
	if err := c.WaitPort(ctx, id, 8081, 50*time.Millisecond); !errors.Is(err, rung.ErrTimeout) {
		t.Errorf("WaitPort on a closed port: %v, want timeout", err)
	}

	// Readiness by command: a run every interval until one exits 0, each
	// one a journaled exec; on timeout the last attempt is named.
	if _, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "sleep 0.3; touch /workspace/ready"}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitCommand(ctx, id, "test -f /workspace/ready", 50*time.Millisecond, 10*time.Second); err != nil {
		t.Fatalf("WaitCommand: %v", err)
	}
	if n := countExecs(t, c, id, "test -f /workspace/ready"); n < 2 {
		t.Errorf("%d journaled attempts, want at least 2 (the file appears after 0.3 s)", n)
	}
	err = c.WaitCommand(ctx, id, "echo not-yet >&2; exit 3", 20*time.Millisecond, 200*time.Millisecond)
	if !errors.Is(err, rung.ErrTimeout) || !strings.Contains(err.Error(), "exited 3") || !strings.Contains(err.Error(), "not-yet") {
		t.Errorf("WaitCommand that never succeeds: %v, want a timeout naming exit 3 and its stderr", err)
	}
	if err := c.WaitCommand(ctx, id, "true", time.Millisecond, time.Second); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("a 1 ms interval: %v, want invalid", err)
	}

	// Stop: the sandbox stays usable by the isolate tier; the next
	// container exec starts it again.
	if err := c.StopContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitJournal(t, c, id, "container.stopped")
	res, err = c.Exec(ctx, id, client.ExecRequest{Command: "cat a.txt b.txt"})
	if err != nil || res.Backend != rung.BackendIsolate || string(res.Stdout) != "from-isolate\nfrom-container\n" {
		t.Errorf("isolate after stop: %+v, %v", res, err)
	}
	res, err = c.Exec(ctx, id, client.ExecRequest{Command: "uname -s"})
	if err != nil || string(res.Stdout) != "Linux\n" {
		t.Errorf("restart on next use: %+v, %v", res, err)
	}

	// A container that dies is noticed and journaled, and restarted on
	// the next use.
	ctr := d.containers.Config().Runc.Get(sb.ID)
	if ctr == nil {
		t.Fatal("no container after exec")
	}
	if p, err := os.FindProcess(ctr.InitPID()); err == nil {
		p.Kill()
	}
	waitJournal(t, c, id, "container.exited")
	res, err = c.Exec(ctx, id, client.ExecRequest{Command: "uname -s"})
	if err != nil || string(res.Stdout) != "Linux\n" {
		t.Errorf("restart after a crash: %+v, %v", res, err)
	}

	// Delete with a running container leaves no mount behind.
	if err := c.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if bytes.Contains(mounts, []byte(id)) {
		t.Errorf("a mount of %s survived its delete", id)
	}
}

func TestContainerIdleStop(t *testing.T) {
	c, _ := startContainerDaemon(t)
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{IdleTimeoutMS: 500})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	if _, err := c.Exec(ctx, id, client.ExecRequest{Command: "true", Backend: rung.BackendContainer}); err != nil {
		t.Fatal(err)
	}
	data := waitJournal(t, c, id, "container.stopped")
	if !strings.Contains(string(data), "idle timeout") {
		t.Errorf("stop reason %s, want idle timeout", data)
	}
	if sb, _ := c.Get(ctx, id); sb.State != rung.StateReady {
		t.Errorf("state after idle stop %s, want ready", sb.State)
	}
}

func TestContainerImagePolicy(t *testing.T) {
	c, _ := startContainerDaemon(t)
	ctx := t.Context()
	if _, err := c.Create(ctx, client.CreateRequest{Image: "no-such-image"}); !errors.Is(err, rung.ErrInvalid) || !strings.Contains(err.Error(), "no-such-image") {
		t.Errorf("unknown image: %v, want invalid_argument naming it", err)
	}
	bad := "lite@sha256:" + strings.Repeat("0", 64)
	if _, err := c.Create(ctx, client.CreateRequest{Image: bad}); !errors.Is(err, rung.ErrPermission) {
		t.Errorf("digest mismatch: %v, want permission_denied", err)
	}
}

func TestContainerGVisor(t *testing.T) {
	testenv.Require(t, "runsc")
	c, _ := startContainerDaemon(t)
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{Isolation: rung.IsolationGVisor})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, string(sb.ID), client.ExecRequest{Command: "dmesg | head -n 1", Backend: rung.BackendContainer})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Stdout), "gVisor") {
		t.Errorf("dmesg under isolation gvisor: %q (stderr %q), want gVisor's banner", res.Stdout, res.Stderr)
	}
}

// countExecs counts the journal's exec.started entries for command.
func countExecs(t *testing.T, c *client.Client, id, command string) int {
	t.Helper()
	n := 0
	for _, m := range journalData(t, c, id, "exec.started") {
		if m["command"] == command {
			n++
		}
	}
	return n
}
