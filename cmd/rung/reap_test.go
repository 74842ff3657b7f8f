package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/container"
	"rung.dev/rung/image"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/shell/tools"
)

// A restarted daemon reaps containers an earlier one left under every
// runtime, not only the one its probe picks now: runc and crun measure
// within a millisecond of each other here, so the pick can change from
// one start to the next (TestWarmPoolCrash once failed that way).
func TestRestartReapsEveryRuntime(t *testing.T) {
	testenv.Require(t, "root", "mkfs.btrfs", "runc", "crun", "busybox")
	data := t.TempDir()
	images, err := image.Open(filepath.Join(data, "images"), nil)
	if err != nil {
		t.Fatal(err)
	}
	lite, err := images.BuildLite(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	var dirs []string
	for _, rt := range []container.Runtime{{Name: "runc", Binary: "runc"}, container.Crun("crun")} {
		state := filepath.Join(data, "containers", rt.Name)
		m, err := container.NewManager(container.Config{StateDir: state, Runtime: rt, Images: images, AgentBinary: rungBinary(t)})
		if err != nil {
			t.Fatal(err)
		}
		sub := t.TempDir()
		for _, d := range []string{"fs/workspace", "fs/tmp", "rootfs/upper", "rootfs/work"} {
			os.MkdirAll(filepath.Join(sub, d), 0o755)
		}
		c, err := m.Start(t.Context(), container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: sub, Image: lite, Size: rung.Presets["lite"]})
		if err != nil {
			t.Fatal(err)
		}
		// The daemon "crashes": m is dropped without stopping c.
		pids = append(pids, c.InitPID())
		dirs = append(dirs, filepath.Join(state, string(c.Sandbox)))
	}
	images.Close()
	d, err := OpenDaemon(t.Context(), DaemonConfig{Data: data, Tools: tools.All(), PoolImageSize: 2 << 30, AgentBinary: rungBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i, pid := range pids {
		deadline := time.Now().Add(10 * time.Second)
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			t.Errorf("the container in %s still runs after the restart: %.200s", dirs[i], st)
		}
		if _, err := os.Stat(dirs[i]); err == nil {
			t.Errorf("%s survived the restart", dirs[i])
		}
	}
}
