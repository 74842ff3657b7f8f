package container_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
	"rung.dev/rung/internal/testenv"
)

// testRuntime is the runtime newEnv uses (RUNG_TEST_RUNTIME).
func testRuntime() container.Runtime {
	switch os.Getenv("RUNG_TEST_RUNTIME") {
	case "runsc":
		return container.GVisor("runsc")
	case "crun":
		return container.Crun("crun")
	}
	return container.Runtime{Name: "runc", Binary: "runc"}
}

// cgroupsOf lists the sandbox's cgroup directories, in every hierarchy.
func cgroupsOf(t *testing.T, id rung.SandboxID) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("/sys/fs/cgroup/*/rung", string(id)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/rung", string(id))); err == nil {
		dirs = append(dirs, filepath.Join("/sys/fs/cgroup/rung", string(id)))
	}
	return dirs
}

// age sets the modification time of dirs and every cgroup below them to
// an hour ago, past the sweep's grace for starts in progress.
func age(t *testing.T, dirs ...string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			return os.Chtimes(path, old, old)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ReapStale removes the empty cgroups a crashed daemon left, and no
// cgroup that holds a process (in any hierarchy), was made a moment ago,
// or is not a sandbox's.
func TestReapStaleSweepsCgroups(t *testing.T) {
	e := newEnv(t)
	memory, cpu := "/sys/fs/cgroup/memory/rung", "/sys/fs/cgroup/cpu/rung"
	if !exists(filepath.Dir(memory)) || !exists(filepath.Dir(cpu)) {
		t.Skip("no cgroup v1 memory and cpu hierarchies")
	}
	stale, busy, young := rung.NewSandboxID(), rung.NewSandboxID(), rung.NewSandboxID()
	cgroups := []struct {
		name, dir string
		kept      bool
	}{ // parents before children
		{"stale memory", filepath.Join(memory, string(stale)), false},
		{"stale memory nested", filepath.Join(memory, string(stale), "nested"), false},
		{"stale cpu", filepath.Join(cpu, string(stale)), false},
		{"busy memory", filepath.Join(memory, string(busy)), true},
		{"busy cpu, empty", filepath.Join(cpu, string(busy)), true},
		{"young memory", filepath.Join(memory, string(young)), true},
		{"not a sandbox", filepath.Join(memory, "not-a-sandbox-"+strconv.Itoa(os.Getpid())), true},
	}
	for _, cg := range cgroups {
		if err := os.MkdirAll(cg.dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, cg := range slices.Backward(cgroups) {
			os.Remove(cg.dir)
		}
	})
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // runs first: the busy cgroup empties before it is removed
		sleep.Process.Kill()
		sleep.Wait()
	})
	procs := filepath.Join(cgroups[3].dir, "cgroup.procs")
	if err := os.WriteFile(procs, []byte(strconv.Itoa(sleep.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	for _, cg := range cgroups {
		if !strings.HasPrefix(cg.name, "young") {
			age(t, cg.dir)
		}
	}

	if _, err := e.m.ReapStale(t.Context()); err != nil {
		t.Fatalf("ReapStale: %v", err)
	}
	for _, cg := range cgroups {
		if got := exists(cg.dir); got != cg.kept {
			t.Errorf("%s (%s): exists = %v after ReapStale, want %v", cg.name, cg.dir, got, cg.kept)
		}
	}
}

// Managers of different runtimes, and other daemons, share /rung: one's
// sweep must leave another's running container alone, however old.
func TestReapStaleSparesOtherManagersContainers(t *testing.T) {
	e := newEnv(t)
	c, _ := e.start(t, rung.Size{})
	before := cgroupsOf(t, c.Sandbox)
	if len(before) == 0 {
		t.Fatalf("no cgroup of %s found", c.Sandbox)
	}
	age(t, before...) // only the processes in them protect them now

	other := newManager(t, e.images, testRuntime(), agentBinary(t))
	reaped, err := other.ReapStale(t.Context())
	if err != nil {
		t.Fatalf("ReapStale: %v", err)
	}
	if slices.Contains(reaped, c.Sandbox) {
		t.Errorf("another manager reaped %s", c.Sandbox)
	}
	for _, dir := range before {
		if !exists(dir) {
			t.Errorf("cgroup %s removed by another manager's ReapStale", dir)
		}
	}
	if o := run(t, c, agent.ExecRequest{Command: "echo alive"}); o.stdout != "alive\n" {
		t.Errorf("after another manager's ReapStale: %+v", o)
	}
}

func TestStopRemovesCgroups(t *testing.T) {
	e := newEnv(t)
	c, _ := e.start(t, rung.Size{})
	if len(cgroupsOf(t, c.Sandbox)) == 0 {
		t.Fatalf("no cgroup of %s found", c.Sandbox)
	}
	if err := e.m.Stop(t.Context(), c.Sandbox); err != nil {
		t.Fatal(err)
	}
	if left := cgroupsOf(t, c.Sandbox); len(left) > 0 {
		t.Errorf("cgroups left after Stop: %q", left)
	}
}

// A runtime killed half-way through a start leaves the cgroups it made,
// and its delete does not know them (measured with runc 1.1.5): Start's
// failure path removes them itself.
func TestFailedStartLeavesNoCgroup(t *testing.T) {
	testenv.Require(t, "root", "runc", "busybox")
	images, lite := liteImage(t)
	// The wrapper plays a runtime that dies after making the cgroups.
	halfway := `case " $* " in *" run "*)
	for id; do :; done
	for h in /sys/fs/cgroup/*/rung /sys/fs/cgroup/rung; do [ -d "$h" ] && mkdir -p "$h/$id"; done
	exit 137;;
esac
exec "$0" "$@"`
	rt := container.Runtime{Name: "runc", Binary: "runc", Wrapper: []string{"sh", "-c", halfway}}
	m := newManager(t, images, rt, "/bin/busybox") // the agent never runs
	id := rung.NewSandboxID()
	t.Cleanup(func() {
		for _, dir := range cgroupsOf(t, id) {
			os.Remove(dir)
		}
	})
	_, err := m.Start(t.Context(), container.StartRequest{Sandbox: id, Subvolume: subvolume(t), Image: lite, Size: rung.Presets["basic"]})
	if err == nil {
		t.Fatal("Start succeeded under a runtime that dies half-way")
	}
	if left := cgroupsOf(t, id); len(left) > 0 {
		t.Errorf("cgroups left after a failed start: %q", left)
	}
}
