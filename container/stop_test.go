package container_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
	"rung.dev/rung/internal/testenv"
)

// startReady starts a background process that prints "ready" once its
// traps are set, and waits for that line.
func startReady(t *testing.T, c *container.Container, command string) agent.ProcessInfo {
	t.Helper()
	info, err := c.StartProcess(t.Context(), agent.ProcessRequest{Command: command})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out strings.Builder
	exit, err := c.Agent().Output(ctx, info.ID, 0, true, func(f agent.Frame) {
		if out.Write(f.Data); strings.Contains(out.String(), "ready\n") {
			cancel()
		}
	})
	if !strings.Contains(out.String(), "ready\n") {
		t.Fatalf("process %q never got ready: output %q, exit %+v, err %v", command, out.String(), exit, err)
	}
	return info
}

// TestStopIsGraceful checks that Stop sends every command SIGTERM first
// and gives it the grace to exit: a background process that traps TERM
// writes a file in /workspace before it exits, and so does a process
// that then ignores the signal, which is killed once the grace is over.
func TestStopIsGraceful(t *testing.T) {
	testenv.Require(t, "root", "runc", "busybox")
	images, lite := liteImage(t)
	const grace = 300 * time.Millisecond
	m, err := container.NewManager(container.Config{
		StateDir: filepath.Join(t.TempDir(), "containers"), Runtime: testRuntime(),
		Images: images, AgentBinary: agentBinary(t), StopGrace: grace,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	sub := subvolume(t)
	c, err := m.Start(t.Context(), container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: sub, Image: lite, Size: rung.Presets["basic"]})
	if err != nil {
		t.Fatal(err)
	}
	startReady(t, c, `trap 'echo bye > /workspace/polite; exit 0' TERM; echo ready; while true; do sleep 0.05; done`)
	startReady(t, c, `trap 'echo ignored > /workspace/stubborn' TERM; echo ready; while true; do sleep 0.05; done`)

	start := time.Now()
	if err := m.Stop(t.Context(), c.Sandbox); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	select {
	case <-c.Done():
	default:
		t.Error("the container's init still runs after Stop")
	}
	for name, want := range map[string]string{"polite": "bye\n", "stubborn": "ignored\n"} {
		b, err := os.ReadFile(filepath.Join(sub, "fs", "workspace", name))
		if err != nil || string(b) != want {
			t.Errorf("/workspace/%s after Stop = %q, %v; want %q (written on SIGTERM)", name, b, err, want)
		}
	}
	// The stubborn process holds the stop for the whole grace, no less.
	if took < grace {
		t.Errorf("Stop took %s with a process ignoring SIGTERM, want at least the %s grace", took, grace)
	}
	// The sandbox can start again at once.
	c2, err := m.Start(t.Context(), container.StartRequest{Sandbox: c.Sandbox, Subvolume: sub, Image: lite, Size: rung.Presets["basic"]})
	if err != nil {
		t.Fatalf("restart after a graceful stop: %v", err)
	}
	m.Stop(t.Context(), c2.Sandbox)
}

// TestStopReportsExits checks that a follower of a background process's
// output gets its exit when the container stops, both for a process that
// exits on SIGTERM and for one killed after the grace.
func TestStopReportsExits(t *testing.T) {
	testenv.Require(t, "root", "runc", "busybox")
	images, lite := liteImage(t)
	m, err := container.NewManager(container.Config{
		StateDir: filepath.Join(t.TempDir(), "containers"), Runtime: testRuntime(),
		Images: images, AgentBinary: agentBinary(t), StopGrace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	c, err := m.Start(t.Context(), container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: subvolume(t), Image: lite, Size: rung.Presets["basic"]})
	if err != nil {
		t.Fatal(err)
	}
	polite := startReady(t, c, `echo ready; exec sleep 1000`)
	stubborn := startReady(t, c, `trap '' TERM; echo ready; while true; do sleep 0.05; done`)
	type result struct {
		exit *agent.Exit
		err  error
	}
	follow := func(id string) chan result {
		ch := make(chan result, 1)
		go func() { // ends when the process or the container exits
			exit, err := c.Agent().Output(t.Context(), id, 1<<62, true, func(agent.Frame) {})
			ch <- result{exit, err}
		}()
		return ch
	}
	politeCh, stubbornCh := follow(polite.ID), follow(stubborn.ID)
	if err := m.Stop(t.Context(), c.Sandbox); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ch   chan result
		want agent.Exit
	}{
		{"exits on SIGTERM", politeCh, agent.Exit{Code: 143, Signal: "SIGTERM", Reason: "signal"}},
		{"killed after the grace", stubbornCh, agent.Exit{Code: 137, Signal: "SIGKILL", Reason: "signal"}},
	}
	for _, tc := range tests {
		r := <-tc.ch
		if r.err != nil || r.exit == nil || *r.exit != tc.want {
			t.Errorf("%s: exit %+v, %v; want %+v", tc.name, r.exit, r.err, tc.want)
		}
	}
}

// TestBackgroundProcessOOM checks that a background process killed by
// the OOM killer is reported with reason "oom", while one killed by a
// plain SIGKILL stays "signal", even after a later OOM kill.
func TestBackgroundProcessOOM(t *testing.T) {
	if os.Getenv("RUNG_TEST_RUNTIME") == "runsc" {
		t.Skip("under gVisor an OOM kill ends the whole container (see TestOOM)")
	}
	e := newEnv(t)
	c, _ := e.start(t, rung.Size{MilliCPU: 500, MemoryBytes: 64 << 20, DiskBytes: 1 << 30})
	wait := func(id string) agent.Exit {
		t.Helper()
		exit, err := c.Agent().Output(t.Context(), id, 1<<62, true, func(agent.Frame) {})
		if err != nil || exit == nil {
			t.Fatalf("follow %s: %+v, %v", id, exit, err)
		}
		return c.ProcessExit(id, *exit)
	}
	bomb, err := c.StartProcess(t.Context(), agent.ProcessRequest{Command: "x=a; while true; do x=$x$x; done"})
	if err != nil {
		t.Fatal(err)
	}
	if got := wait(bomb.ID); got.Reason != "oom" || got.Signal != "SIGKILL" {
		t.Errorf("memory bomb in the background: exit %+v, want reason oom", got)
	}
	// A process started after the OOM kill and killed by hand is "signal".
	later := startReady(t, c, `echo ready; exec sleep 1000`)
	if err := c.Agent().Signal(t.Context(), later.ID, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	if got := wait(later.ID); got.Reason != "signal" {
		t.Errorf("SIGKILL by hand after an OOM kill: exit %+v, want reason signal", got)
	}
	// A later OOM kill does not change a verdict already given.
	exit, err := c.Exec(t.Context(), agent.ExecRequest{Command: "x=a; while true; do x=$x$x; done"}, nil)
	if err != nil || exit.Reason != "oom" {
		t.Fatalf("memory bomb exec: %+v, %v", exit, err)
	}
	if got := c.ProcessExit(later.ID, agent.Exit{Code: 137, Signal: "SIGKILL", Reason: "signal"}); got.Reason != "signal" {
		t.Errorf("verdict after a later OOM kill: %+v, want reason signal still", got)
	}
}
