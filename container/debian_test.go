package container_test

import (
	"os"
	"path/filepath"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
	"rung.dev/rung/image"
	"rung.dev/rung/internal/testenv"
)

// debianCache keeps the debootstrapped test image between runs: building
// it downloads from Debian's mirror and takes minutes.
const debianCache = "/var/cache/rung-test/images"

// TestDebianPython runs python3 in a Debian image built by debootstrap
// (minbase plus python3; `rung image build debian` adds the rest), and
// checks files cross between the container and the host both ways.
func TestDebianPython(t *testing.T) {
	testenv.Require(t, "root", "runc", "debootstrap")
	if testing.Short() {
		t.Skip("builds a Debian image with debootstrap")
	}
	images, err := image.Open(debianCache, nil)
	if err != nil {
		t.Fatal(err)
	}
	im, err := images.Get("debian-python")
	if err != nil {
		im, err = images.BuildDebian(t.Context(), image.DebianConfig{Name: "debian-python", Packages: []string{"python3"}}, func(line string) { t.Log(line) })
		if err != nil {
			t.Fatal(err)
		}
	}
	m, err := container.NewManager(container.Config{
		StateDir: filepath.Join(t.TempDir(), "containers"), Images: images, AgentBinary: agentBinary(t),
		Runtime: container.Runtime{Name: "runc", Binary: "runc"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(t.Context())
	sub := subvolume(t)
	os.WriteFile(filepath.Join(sub, "fs/workspace/in.txt"), []byte("from the host\n"), 0o644)
	c, err := m.Start(t.Context(), container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: sub, Image: im, Size: rung.Presets["basic"]})
	if err != nil {
		t.Fatal(err)
	}
	o := run(t, c, agent.ExecRequest{Command: `python3 -c 'print(1+1)' && python3 -c 'import sys; print(open("in.txt").read(), end=""); open("out.txt","w").write("from python\n")'`})
	if o.stdout != "2\nfrom the host\n" || o.exit.Code != 0 {
		t.Fatalf("python3: %+v", o)
	}
	b, err := os.ReadFile(filepath.Join(sub, "fs/workspace/out.txt"))
	if err != nil || string(b) != "from python\n" {
		t.Errorf("host sees out.txt = %q, %v", b, err)
	}
}
