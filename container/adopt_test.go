package container_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
)

// TestAdopt checks live restore at the container level: a manager that
// lets go of its containers (a daemon stopping, or killed) leaves them
// running, and a new manager over the same state directory adopts them:
// execs work, a background process runs on and its output continues
// after the last sequence number seen. A container whose init died in
// between is not adopted, and ReapStale removes it while sparing the
// adopted one.
func TestAdopt(t *testing.T) {
	e := newEnv(t)
	cfg := container.Config{StateDir: filepath.Join(t.TempDir(), "containers"), Runtime: e.runtime, Images: e.images, AgentBinary: agentBinary(t)}
	m1, err := container.NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	start := func(m *container.Manager) (container.StartRequest, *container.Container) {
		req := container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: subvolume(t), Image: e.lite, Size: rung.Presets["basic"]}
		c, err := m.Start(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return req, c
	}
	reqA, a := start(m1)
	reqDead, dead := start(m1)
	proc, err := a.StartProcess(ctx, agent.ProcessRequest{Command: "i=0; while :; do echo line$i; i=$((i+1)); sleep 0.02; done"})
	if err != nil {
		t.Fatal(err)
	}
	// Read a few frames, as a client following the output would.
	var last int64
	octx, cancel := context.WithCancel(ctx)
	a.Agent().Output(octx, proc.ID, 0, true, func(f agent.Frame) {
		if last = f.Seq; last >= 3 {
			cancel()
		}
	})
	cancel()
	m1.Detach() // the daemon goes; its containers stay
	if err := syscall.Kill(dead.InitPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-dead.Done()

	m2, err := container.NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m2.Close(context.Background()); m1.Close(context.Background()) })
	missing := container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: subvolume(t), Image: e.lite}
	adopted, failed := m2.Adopt(ctx, []container.StartRequest{reqA, reqDead, missing})
	if len(adopted) != 1 || adopted[0].Sandbox != reqA.Sandbox {
		t.Fatalf("adopted %v (failed %v), want only %s", adopted, failed, reqA.Sandbox)
	}
	if !errors.Is(failed[missing.Sandbox], rung.ErrNotFound) || failed[reqDead.Sandbox] == nil {
		t.Errorf("failures = %v; want the missing one not found and the dead one refused", failed)
	}
	if _, err := m2.ReapStale(ctx); err != nil {
		t.Errorf("ReapStale: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, string(reqDead.Sandbox))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead container's state survived ReapStale: %v", err)
	}
	c := adopted[0]
	if got := run(t, c, agent.ExecRequest{Command: "echo adopted"}); got.stdout != "adopted\n" {
		t.Fatalf("exec in the adopted container: %+v", got)
	}
	procs, err := c.Agent().Processes(ctx)
	if err != nil || len(procs) != 1 || !procs[0].Running {
		t.Fatalf("processes after adoption: %+v, %v", procs, err)
	}
	// The output goes on from where the first manager left it.
	var next int64
	octx, cancel = context.WithCancel(ctx)
	c.Agent().Output(octx, proc.ID, last, true, func(f agent.Frame) {
		if next == 0 {
			next = f.Seq
			cancel()
		}
	})
	cancel()
	if next != last+1 {
		t.Errorf("first output frame after adoption has seq %d, want %d", next, last+1)
	}
}
