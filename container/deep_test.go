package container_test

import (
	"path/filepath"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
)

// A data directory deep enough to put the agent's socket past the 107
// bytes a unix address holds still gives working containers, under every
// runtime (runsc's gofer binds the socket by its host path).
func TestDeepStateDir(t *testing.T) {
	e := newEnv(t)
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 90))
	m, err := container.NewManager(container.Config{StateDir: deep, Runtime: e.runtime, Images: e.images, AgentBinary: agentBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(t.Context()) })
	c, err := m.Start(t.Context(), container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: subvolume(t), Image: e.lite, Size: rung.Presets["basic"]})
	if err != nil {
		t.Fatal(err)
	}
	if o := run(t, c, agent.ExecRequest{Command: "echo deep"}); o.stdout != "deep\n" {
		t.Errorf("exec: %+v", o)
	}
	if err := m.Stop(t.Context(), c.Sandbox); err != nil {
		t.Fatal(err)
	}
}
