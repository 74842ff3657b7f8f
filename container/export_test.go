package container

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
)

// RunSameBundle runs, through m's runtime and to completion, the bundle
// m would start for req (same root filesystem, mounts, namespaces,
// seccomp profile, memory and pids limits; like rung's own bundle it has
// no CPU quota, which Start applies once the agent answers) with argv as
// its process instead of the agent. It returns how long the runtime's `run` took: the reference
// that rung's own cold start is compared with. With detach it times
// `run --detach` (what starting a long-lived container costs) and deletes
// the container afterwards. The overlay is mounted before the clock
// starts and unmounted after it stops.
func RunSameBundle(ctx context.Context, m *Manager, req StartRequest, argv []string, detach bool) (time.Duration, error) {
	dir := filepath.Join(m.cfg.StateDir, "raw-"+string(req.Sandbox))
	rootfs, runDir := filepath.Join(dir, "rootfs"), filepath.Join(dir, "run")
	for _, d := range []string{rootfs, runDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return 0, err
		}
	}
	defer os.RemoveAll(dir)
	if err := m.prepareAgentDir(); err != nil {
		return 0, err
	}
	if err := m.mountRootfs(req, &Container{dir: dir, rootfs: rootfs}); err != nil {
		return 0, err
	}
	defer unix.Unmount(rootfs, unix.MNT_DETACH)
	if err := m.writeBootID(req.Sandbox); err != nil {
		return 0, err
	}
	defer os.Remove(m.bootIDFile(req.Sandbox))
	spec := m.bundleSpec(req, dir, []string{"PATH=/bin"}, m.cfg.Runtime.passesFDs())
	spec.Process.Args = argv
	if err := writeSpec(dir, spec); err != nil {
		return 0, err
	}
	rt := m.cfg.Runtime
	id := "raw-" + string(req.Sandbox)
	args := []string{"run", "--bundle", dir, id}
	if detach {
		args = []string{"run", "--detach", "--pid-file", filepath.Join(dir, "pid"), "--bundle", dir, id}
		defer rt.delete(context.WithoutCancel(ctx), id)
	}
	cmd := rt.command(ctx, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	elapsed := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("%s run: %w: %s", rt.Name, err, out.Bytes())
	}
	return elapsed, nil
}

// DeleteForce runs the runtime's `delete --force` of the sandbox's
// container, as Stop did before it was graceful: the reference that
// BenchmarkStop compares with.
func DeleteForce(ctx context.Context, m *Manager, id rung.SandboxID) error {
	return m.cfg.Runtime.delete(ctx, string(id))
}
