package container_test

import (
	"fmt"
	"os"
	"os/exec"
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
const debianCache = testenv.ImageCache

// TestDebianPython runs python3 in a Debian image built by debootstrap
// (minbase plus python3; `rung image build debian` adds the rest), and
// checks files cross between the container and the host both ways.
func TestDebianPython(t *testing.T) {
	testenv.Require(t, "root", "runc", "debootstrap")
	if testing.Short() {
		t.Skip("builds a Debian image with debootstrap")
	}
	m, im := debianManager(t, "debian-python", "python3")
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

// BenchmarkGitStatusInContainer compares `git status` of a 5,000-file
// repository with 3 modified files in the container's /workspace (the
// sandbox's directory, bind-mounted) with the host's git on the same
// directory. Builds (once, cached) a Debian image with git.
func BenchmarkGitStatusInContainer(b *testing.B) {
	testenv.Require(b, "root", "runc", "debootstrap", "git")
	m, im := debianManager(b, "debian-git", "git")
	sub := subvolume(b)
	repo := filepath.Join(sub, "fs/workspace/repo")
	for i := range 5000 {
		p := filepath.Join(repo, fmt.Sprintf("d%02d/s%d/f%d.txt", i%50, i%7, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=b", "-c", "user.email=b@x"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "init")
	for _, i := range []int{1, 2000, 4999} {
		os.WriteFile(filepath.Join(repo, fmt.Sprintf("d%02d/s%d/f%d.txt", i%50, i%7, i)), []byte("changed\n"), 0o644)
	}
	git("status", "--porcelain") // refresh the index's stat data once
	// standard-3: 2 vCPU, as many as the host has; git status runs
	// threads, and a 1-vCPU quota would measure the CPU limit instead.
	c, err := m.Start(b.Context(), container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: sub, Image: im, Size: rung.Presets["standard-3"]})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("container", func(b *testing.B) {
		timeEach(b, func() {
			exit, err := c.Exec(b.Context(), agent.ExecRequest{Argv: []string{"git", "-C", "/workspace/repo", "status"}}, nil)
			if err != nil || exit.Code != 0 {
				b.Fatal(err, exit)
			}
		})
	})
	b.Run("host", func(b *testing.B) {
		timeEach(b, func() {
			if out, err := exec.Command("git", "-C", repo, "status").CombinedOutput(); err != nil {
				b.Fatal(err, string(out))
			}
		})
	})
}

// debianManager returns a runc Manager and the cached Debian image name
// (debootstrap minbase plus pkg), building the image on first use.
func debianManager(t testing.TB, name, pkg string) (*container.Manager, image.Image) {
	t.Helper()
	images, err := image.Open(debianCache, nil)
	if err != nil {
		t.Fatal(err)
	}
	im, err := images.Get(name)
	if err != nil {
		im, err = images.BuildDebian(t.Context(), image.DebianConfig{Name: name, Packages: []string{pkg}}, func(line string) { t.Log(line) })
		if err != nil {
			t.Fatal(err)
		}
	}
	return newManager(t, images, container.Runtime{Name: "runc", Binary: "runc"}, agentBinary(t)), im
}
