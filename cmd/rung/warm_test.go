package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/controller"
	"rung.dev/rung/e2b"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/shell/tools"
)

// waitWarm waits (bounded) until the daemon's warm pool is full.
func waitWarm(t testing.TB, d *Daemon) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := d.ctrl.WaitWarm(ctx); err != nil {
		t.Fatalf("warm pool never filled: %v", err)
	}
}

// journalEntry returns the data of the sandbox's first journal entry of
// typ, decoded, or nil.
func journalEntry(t *testing.T, c *client.Client, id, typ string) map[string]any {
	t.Helper()
	if all := journalData(t, c, id, typ); len(all) > 0 {
		return all[0]
	}
	return nil
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func TestWarmPool(t *testing.T) {
	c, d, addr := startContainerDaemonWith(t, DaemonConfig{Warm: []controller.WarmSpec{{Image: "lite", Count: 1}}})
	ctx := t.Context()
	waitWarm(t, d)

	// A matching create claims the spare: its container runs before any
	// exec.
	path := "/opt/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	sb, err := c.Create(ctx, client.CreateRequest{Name: "warm", Env: map[string]string{"GREETING": "hello", "PATH": path}})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	if sb.State != rung.StateRunning || !d.containers.Running(sb.ID) {
		t.Fatalf("claimed sandbox: state %s, container running %v; want running, true", sb.State, d.containers.Running(sb.ID))
	}
	if got := journalTypes(t, c, id); strings.Join(got, " ") != "sandbox.created container.started" {
		t.Errorf("journal after a warm create: %v", got)
	}
	if m := journalEntry(t, c, id, "container.started"); m["warm"] != true {
		t.Errorf("container.started %v, want warm: true", m)
	}
	// The claim counts as a warm start, and the spare's own start (for
	// no sandbox) as none.
	if m := scrape(t, addr, d.Token); m[`rung_container_starts_total{kind="warm"}`] != 1 || m[`rung_container_starts_total{kind="cold"}`] != 0 ||
		m[`rung_container_start_duration_seconds_count{kind="warm"}`] != 1 || m["rung_containers_running"] != 1 {
		t.Errorf("after one warm claim: %v warm, %v cold starts, %v running", m[`rung_container_starts_total{kind="warm"}`],
			m[`rung_container_starts_total{kind="cold"}`], m["rung_containers_running"])
	}

	// Files written through the API are in the container; the sandbox's
	// env reaches its exec (replacing the image's PATH, not beside it);
	// a root filesystem change lands in the sandbox's own subvolume.
	if _, err := c.WriteFile(ctx, id, "/workspace/note.txt", strings.NewReader("from-api\n"), 0); err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, id, client.ExecRequest{
		Command: `cat note.txt; echo "$GREETING"; env | grep -c '^PATH='; echo "$PATH"; echo root-change > /etc/warm-marker`,
		Backend: rung.BackendContainer,
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "from-api\nhello\n1\n" + path + "\n"; string(res.Stdout) != want || res.ExitCode != 0 {
		t.Errorf("first exec: exit %d, stdout %q, stderr %q; want stdout %q", res.ExitCode, res.Stdout, res.Stderr, want)
	}
	if b, err := os.ReadFile(filepath.Join(d.pool.Path(id), "rootfs", "upper", "etc", "warm-marker")); string(b) != "root-change\n" {
		t.Errorf("root filesystem change in the sandbox's subvolume: %q, %v", b, err)
	}
	// The first exec went straight to the spare's container.
	types := journalTypes(t, c, id)
	if count(types, "container.started") != 1 || count(types, "exec.ended") != 1 {
		t.Errorf("journal after the first exec: %v; want one container start, the warm one", types)
	}
	if m := journalEntry(t, c, id, "exec.ended"); m["backend"] != "container" {
		t.Errorf("exec.ended %v, want backend container", m)
	}

	// The pool refills.
	waitWarm(t, d)
	if n := d.ctrl.WarmReady(); n != 1 {
		t.Errorf("spares after refill: %d, want 1", n)
	}

	// Tenant isolation is unchanged: another tenant cannot see the
	// claimed sandbox, and its own warm create is invisible to the first.
	other := tenantClient(t, c, addr, "other")
	if _, err := other.Get(ctx, id); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("other tenant's get: %v, want not_found", err)
	}
	if _, err := other.Exec(ctx, id, client.ExecRequest{Command: "true", Backend: rung.BackendContainer}); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("other tenant's exec: %v, want not_found", err)
	}
	osb, err := other.Create(ctx, client.CreateRequest{Name: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	if osb.State != rung.StateRunning || osb.ID == sb.ID {
		t.Errorf("other tenant's create: %s in state %s, want a fresh claimed spare", osb.ID, osb.State)
	}
	if _, err := c.Get(ctx, string(osb.ID)); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("first tenant sees the other's sandbox: %v", err)
	}

	// A create that matches no spare (another size) starts cold.
	waitWarm(t, d)
	cold, err := c.Create(ctx, client.CreateRequest{Size: rung.Size{Preset: "basic"}})
	if err != nil {
		t.Fatal(err)
	}
	if cold.State != rung.StateReady || d.containers.Running(cold.ID) || d.ctrl.WarmReady() != 1 {
		t.Errorf("non-matching create: state %s, running %v, spares %d; want ready, false, 1", cold.State, d.containers.Running(cold.ID), d.ctrl.WarmReady())
	}
	if _, err := c.Exec(ctx, string(cold.ID), client.ExecRequest{Command: "true", Backend: rung.BackendContainer}); err != nil {
		t.Fatal(err)
	}
	if m := journalEntry(t, c, string(cold.ID), "container.started"); m == nil || m["warm"] != nil {
		t.Errorf("cold container.started %v, want one without warm", m)
	}

	// Stop and delete of a claimed sandbox behave as any other's.
	if err := c.StopContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitJournal(t, c, id, "container.stopped")
	if got, _ := c.Get(ctx, id); got.State != rung.StateReady {
		t.Errorf("state after stop %s, want ready", got.State)
	}
	res, err = c.Exec(ctx, id, client.ExecRequest{Command: "cat /etc/warm-marker", Backend: rung.BackendContainer})
	if err != nil || string(res.Stdout) != "root-change\n" {
		t.Errorf("after a cold restart: %q, %v; want the root filesystem change kept", res.Stdout, err)
	}
	if err := c.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.pool.Exists(ctx, id); ok || err != nil || d.containers.Running(sb.ID) {
		t.Errorf("after delete: subvolume %v (%v), container %v", ok, err, d.containers.Running(sb.ID))
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(mounts, []byte(id)) {
		t.Errorf("a mount of %s survived its delete", id)
	}
}

// TestWarmPoolShutdown checks that a clean shutdown removes the spares:
// the next start finds nothing to reconcile.
func TestWarmPoolShutdown(t *testing.T) {
	testenv.Require(t, "root", "mkfs.btrfs", "runc", "busybox")
	ctx := t.Context()
	cfg := DaemonConfig{Data: t.TempDir(), Tools: tools.All(), PoolImageSize: 2 << 30, AgentBinary: rungBinary(t),
		Warm: []controller.WarmSpec{{Image: "lite", Count: 2}}}
	d, err := OpenDaemon(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitWarm(t, d)
	spares, err := d.pool.List(ctx)
	if err != nil || len(spares) != 2 {
		d.Close()
		t.Fatalf("pool holds %v (%v), want two spares", spares, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(cfg.Data, "containers", "*", "sbx_*"))
	if len(left) > 0 {
		t.Errorf("container state left after shutdown: %v", left)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(mounts, []byte(cfg.Data)) {
		t.Errorf("a mount under %s survived shutdown", cfg.Data)
	}
	cfg.Warm = nil
	d, err = OpenDaemon(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !d.Report.Empty() {
		t.Errorf("restart after a clean shutdown reconciled %+v, want nothing", d.Report)
	}
}

// TestWarmPoolCrash SIGKILLs a daemon holding spares and checks that the
// next start removes their containers and subvolumes.
func TestWarmPoolCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping crash test in -short mode")
	}
	testenv.Require(t, "root", "mkfs.btrfs", "runc", "busybox")
	bin := rungBinary(t)
	data := t.TempDir()
	p := startServe(t, bin, data, "--warm", "lite=2")
	ids := waitSpareLogs(t, p, 2)
	for _, id := range ids {
		if dirs, _ := filepath.Glob(filepath.Join(data, "containers", "*", id)); len(dirs) != 1 {
			t.Fatalf("spare %s has no container state", id)
		}
	}
	p.cmd.Process.Kill()
	<-p.done
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); !bytes.Contains(mounts, []byte(ids[0])) {
		t.Fatalf("spare %s's root filesystem is not mounted after the kill; the test proves nothing", ids[0])
	}

	p = startServe(t, bin, data)
	defer p.stop(t)
	logs := p.logs.String()
	if !strings.Contains(logs, "reaped containers left by an earlier daemon") {
		t.Errorf("restart did not reap the spares' containers; logs:\n%s", logs)
	}
	var report string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "start-up reconciliation fixed things") {
			report = l
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, id := range ids {
		if !strings.Contains(report, id) {
			t.Errorf("reconciliation did not remove spare %s: %q", id, report)
		}
		if dirs, _ := filepath.Glob(filepath.Join(data, "containers", "*", id)); len(dirs) > 0 {
			t.Errorf("spare %s's container state survived: %v", id, dirs)
		}
		if bytes.Contains(mounts, []byte(id)) {
			t.Errorf("a mount of spare %s survived", id)
		}
		if _, err := os.Stat(filepath.Join(data, "pool", "sandboxes", id)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("spare %s's subvolume survived: %v", id, err)
		}
	}
	c := client.New(p.addr, client.WithToken(p.token))
	if list, err := c.List(t.Context(), client.ListOptions{}); err != nil || len(list) != 0 {
		t.Errorf("sandboxes after restart: %v, %v; want none", list, err)
	}
}

// waitSpareLogs waits (bounded) until p has logged n spares ready and
// returns their sandbox ids. It polls the log of a separate process:
// there is nothing to wait on.
func waitSpareLogs(t *testing.T, p *serveProc, n int) []string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var ids []string
		for _, l := range strings.Split(p.logs.String(), "\n") {
			var e struct{ Msg, Sandbox string }
			if json.Unmarshal([]byte(l), &e) == nil && e.Msg == "warm spare ready" {
				ids = append(ids, e.Sandbox)
			}
		}
		if len(ids) >= n {
			return ids
		}
		select {
		case <-p.done:
			t.Fatalf("rung serve exited: %s", p.logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spares never ready; logs:\n%s", n, p.logs)
		}
		time.Sleep(50 * time.Millisecond) // polling a subprocess's log; nothing to wait on
	}
}

// rung serve's --warm spares link nothing and --e2b-warm's link E2B's
// home; a bad spec names its flag.
func TestWarmSpecsFlags(t *testing.T) {
	specs, err := warmSpecs([]string{"lite=2"}, []string{"base:basic=1"})
	want := []controller.WarmSpec{{Image: "lite", Count: 2}, {Image: "base", Size: rung.Size{Preset: "basic"}, Count: 1, LinkWorkspace: e2b.Home}}
	if err != nil || !slices.Equal(specs, want) {
		t.Errorf("warmSpecs = %+v, %v; want %+v", specs, err, want)
	}
	if _, err := warmSpecs(nil, []string{"base=x"}); err == nil || !strings.HasPrefix(err.Error(), "--e2b-warm: ") || !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("a bad --e2b-warm spec: %v, want invalid_argument naming the flag", err)
	}
	if _, err := warmSpecs([]string{"lite"}, nil); err == nil || !strings.HasPrefix(err.Error(), "--warm: ") {
		t.Errorf("a bad --warm spec: %v, want an error naming the flag", err)
	}
}
