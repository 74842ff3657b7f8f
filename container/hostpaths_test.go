package container_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
	"rung.dev/rung/storage"
	"rung.dev/rung/storage/storagetest"
)

// startOnPool starts a container for a fresh sandbox subvolume of pool,
// as the daemon does, with a marker file naming it in its workspace.
func (e *env) startOnPool(t *testing.T, pool *storage.Pool) *container.Container {
	t.Helper()
	id := rung.NewSandboxID()
	if err := pool.Create(t.Context(), string(id)); err != nil {
		t.Fatal(err)
	}
	sub := pool.Path(string(id))
	if err := os.WriteFile(filepath.Join(sub, "fs/workspace/who"), []byte(id), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := e.m.Start(t.Context(), container.StartRequest{Sandbox: id, Subvolume: sub, Image: e.lite, Size: rung.Presets["basic"]})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHostStaysOutOfReach checks what a container can learn of and do to
// the host through rung's own mounts (issue 10): no host path of the
// daemon's directories in its mountinfo; no host directory shared with it
// under runc and crun, and under runsc only a small tmpfs for the agent's
// socket; an agent socket that its commands cannot redirect to another
// sandbox's agent; and no way to write the agent's log on the host.
func TestHostStaysOutOfReach(t *testing.T) {
	e := newEnv(t)
	pool := storagetest.NewTestPool(t)
	a := e.startOnPool(t, pool)
	b := e.startOnPool(t, pool)
	stateDir := filepath.Dir(e.m.RuntimeRoot())
	gvisor := e.runtime.Name == "runsc"

	t.Run("mountinfo names no host path", func(t *testing.T) {
		o := run(t, a, agent.ExecRequest{Command: "cat /proc/self/mountinfo"})
		// Every host directory of this test (state, images, pool) is
		// under the test's temporary directory; the agent binary was
		// built under another one.
		for _, host := range []string{filepath.Dir(filepath.Dir(stateDir)), filepath.Dir(agentBinary(t)), pool.Dir()} {
			if strings.Contains(o.stdout, host) {
				t.Errorf("mountinfo shows host path %s:\n%s", host, o.stdout)
			}
		}
		if o.exit.Code != 0 || !strings.Contains(o.stdout, " /workspace ") {
			t.Errorf("mountinfo not read: %+v", o)
		}
	})

	t.Run("no host directory to fill", func(t *testing.T) {
		o := run(t, a, agent.ExecRequest{Command: "dd if=/dev/zero of=/.rung/run/fill bs=64k count=32 2>&1; ls -A /.rung/run 2>&1 | grep -v agent.sock; true"})
		if !gvisor && !strings.Contains(o.stdout, "No such file or directory") {
			t.Errorf("/.rung/run is shared with the container under %s: %q", e.runtime.Name, o.stdout)
		}
		if gvisor && !strings.Contains(o.stdout, "No space left") {
			t.Errorf("writing 2 MiB into the agent's socket directory: %q, want ENOSPC", o.stdout)
		}
	})

	t.Run("socket cannot be redirected", func(t *testing.T) {
		// The attack of issue 10: replace the agent's socket by a symlink
		// to another sandbox's, then make the daemon dial anew.
		other := filepath.Join(stateDir, string(b.Sandbox), "run", agent.SocketName)
		run(t, a, agent.ExecRequest{Command: fmt.Sprintf("rm -f /.rung/run/agent.sock; ln -s %s /.rung/run/agent.sock; true", other)})
		var wg sync.WaitGroup
		got := make([]string, 4)
		for i := range got {
			// Overlapping execs need connections of their own.
			wg.Go(func() { got[i] = run(t, a, agent.ExecRequest{Command: "sleep 0.2; cat /workspace/who"}).stdout })
		}
		wg.Wait()
		for _, g := range got {
			if g != string(a.Sandbox) {
				t.Errorf("an exec in %s answered from %q", a.Sandbox, g)
			}
		}
	})

	t.Run("agent log out of reach", func(t *testing.T) {
		logPath := filepath.Join(stateDir, string(a.Sandbox), "runtime.log")
		before, err := os.Stat(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := "for fd in 0 1 2; do echo FORGED-LINE > /proc/1/fd/$fd; dd if=/dev/zero of=/proc/1/fd/$fd bs=64k count=16 oflag=append conv=notrunc; done 2>/dev/null; true"
		run(t, a, agent.ExecRequest{Command: cmd})
		after, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(after)) > before.Size() || strings.Contains(string(after), "FORGED-LINE") {
			t.Errorf("a command wrote the agent's log on the host: %d -> %d bytes", before.Size(), len(after))
		}
	})

	if o := run(t, b, agent.ExecRequest{Command: "cat /workspace/who"}); o.stdout != string(b.Sandbox) {
		t.Errorf("the other sandbox after all that: %+v", o)
	}
}
