package container_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
	"rung.dev/rung/image"
	"rung.dev/rung/internal/testenv"
)

var (
	buildOnce sync.Once
	agentBin  string
	buildErr  error
)

// agentBinary builds the static rung binary once per test run: the
// containers run the real agent, with its real start-up cost.
func agentBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rung-agent-")
		if err != nil {
			buildErr = err
			return
		}
		agentBin = filepath.Join(dir, "rung")
		cmd := exec.Command("go", "build", "-o", agentBin, "rung.dev/rung/cmd/rung")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build agent: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return agentBin
}

type env struct {
	m      *container.Manager
	images *image.Store
	lite   image.Image
}

func newEnv(t testing.TB) *env {
	t.Helper()
	testenv.Require(t, "root", "runc", "busybox")
	images, lite := liteImage(t)
	rt := container.Runtime{Name: "runc", Binary: "runc"}
	switch os.Getenv("RUNG_TEST_RUNTIME") {
	case "runsc":
		rt = container.GVisor("runsc")
	case "crun":
		rt = container.Crun("crun")
	}
	return &env{m: newManager(t, images, rt, agentBinary(t)), images: images, lite: lite}
}

// liteImage opens an image store in a temporary directory and builds the
// lite image in it.
func liteImage(t testing.TB) (*image.Store, image.Image) {
	t.Helper()
	images, err := image.Open(filepath.Join(t.TempDir(), "images"), nil)
	if err != nil {
		t.Fatal(err)
	}
	lite, err := images.BuildLite(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return images, lite
}

// newManager returns a Manager over images running agentBin as each
// container's agent, closed when the test ends.
func newManager(t testing.TB, images *image.Store, rt container.Runtime, agentBin string) *container.Manager {
	t.Helper()
	m, err := container.NewManager(container.Config{
		StateDir:    filepath.Join(t.TempDir(), "containers"),
		Runtime:     rt,
		Images:      images,
		AgentBinary: agentBin,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// subvolume makes a directory laid out like a sandbox's subvolume.
func subvolume(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"fs/workspace", "fs/tmp", "rootfs/upper", "rootfs/work"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(dir, "fs/tmp"), 0o1777)
	return dir
}

func (e *env) start(t testing.TB, size rung.Size) (*container.Container, string) {
	t.Helper()
	sub := subvolume(t)
	if size == (rung.Size{}) {
		size = rung.Presets["basic"]
	}
	c, err := e.m.Start(t.Context(), container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: sub, Image: e.lite, Size: size})
	if err != nil {
		t.Fatal(err)
	}
	return c, sub
}

type out struct {
	stdout, stderr string
	exit           agent.Exit
}

func run(t *testing.T, c *container.Container, req agent.ExecRequest) out {
	t.Helper()
	var so, se bytes.Buffer
	exit, err := c.Exec(t.Context(), req, func(f agent.Frame) {
		if f.Stream == "stdout" {
			so.Write(f.Data)
		} else {
			se.Write(f.Data)
		}
	})
	if err != nil {
		t.Fatalf("exec %q: %v", req.Command, err)
	}
	return out{so.String(), se.String(), exit}
}

func TestExecAndSharedWorkspace(t *testing.T) {
	e := newEnv(t)
	c, sub := e.start(t, rung.Size{})
	got := run(t, c, agent.ExecRequest{Command: "echo hi; pwd; echo from-container > /workspace/c.txt; id -u"})
	if got.stdout != "hi\n/workspace\n0\n" || got.exit.Code != 0 {
		t.Fatalf("got %+v", got)
	}
	b, err := os.ReadFile(filepath.Join(sub, "fs/workspace/c.txt"))
	if err != nil || string(b) != "from-container\n" {
		t.Errorf("host sees %q, %v", b, err)
	}
	os.WriteFile(filepath.Join(sub, "fs/workspace/h.txt"), []byte("from-host\n"), 0o644)
	if got := run(t, c, agent.ExecRequest{Command: "cat /workspace/h.txt"}); got.stdout != "from-host\n" {
		t.Errorf("container sees %q", got.stdout)
	}
	// Root filesystem changes land in the sandbox's upper directory.
	run(t, c, agent.ExecRequest{Command: "echo x > /etc/rung-test"})
	if _, err := os.Stat(filepath.Join(sub, "rootfs/upper/etc/rung-test")); err != nil {
		t.Errorf("rootfs change not in upper: %v", err)
	}
}

// Commands get their three standard streams and nothing else of the
// agent's: not the listening socket it inherits from the host.
func TestCommandsInheritOnlyStdio(t *testing.T) {
	e := newEnv(t)
	c, _ := e.start(t, rung.Size{})
	if got := run(t, c, agent.ExecRequest{Command: "ls /proc/$$/fd; true"}); got.stdout != "0\n1\n2\n" {
		t.Errorf("a command's descriptors: %q, want 0 1 2", got.stdout)
	}
}

func TestContainment(t *testing.T) {
	e := newEnv(t)
	size := rung.Size{MilliCPU: 500, MemoryBytes: 64 << 20, DiskBytes: 1 << 30}
	c, _ := e.start(t, size)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hostPort := ln.Addr().(*net.TCPAddr).Port
	// The CPU share is applied once the agent answers (see limitCPU).
	for file, want := range map[string]string{"cpu.cfs_quota_us": "50000", "cpu.cfs_period_us": "100000", "cpu.cfs_burst_us": "50000"} {
		b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpu/rung", string(c.Sandbox), file))
		if err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s = %q, %v; want %s", file, b, err, want)
		}
	}
	tests := []struct {
		name    string
		cmd     string
		timeout int64
		check   func(o out) error
	}{
		{"fork bomb stops at the pids limit", "for i in $(seq 3000); do sleep 5 & done 2>/dev/null; echo spawned; ps | wc -l", 20000, func(o out) error {
			n := 0
			fmt.Sscan(strings.TrimPrefix(o.stdout, "spawned\n"), &n)
			if n > 1100 {
				return fmt.Errorf("%d processes, want at most the pids limit", n)
			}
			return nil
		}},
		{"sleep ends at the timeout", "sleep 1000", 100, func(o out) error {
			if o.exit.Reason != "timeout" {
				return fmt.Errorf("reason %q, want timeout", o.exit.Reason)
			}
			return nil
		}},
		{"mount fails", "mkdir -p /mnt/x && mount -t tmpfs none /mnt/x", 0, nonZero},
		{"sysrq-trigger is read-only", "echo h > /proc/sysrq-trigger", 0, nonZero},
		{"sys is read-only", "echo 1 > /sys/kernel/mm/ksm/run", 0, nonZero},
		{"host loopback unreachable", fmt.Sprintf("nc -w 1 127.0.0.1 %d </dev/null", hostPort), 5000, nonZero},
		{"host files invisible", "cat /etc/shadow /root/.bash_history 2>&1 | head -c 100; test ! -e /work", 0, func(o out) error {
			if o.exit.Code != 0 {
				return fmt.Errorf("host path /work visible")
			}
			return nil
		}},
		{"raw sockets refused", "ping -c 1 -W 1 127.0.0.1", 5000, nonZero},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if strings.HasPrefix(tc.name, "fork bomb") && os.Getenv("RUNG_TEST_RUNTIME") == "runsc" {
				t.Skip("known difference: under gVisor the pids limit also binds the sentry's own threads, so a fork bomb ends the whole sandbox (see docs/decisions/container.md)")
			}
			o := run(t, c, agent.ExecRequest{Command: tc.cmd, TimeoutMS: tc.timeout})
			if err := tc.check(o); err != nil {
				t.Errorf("%s: %v (%+v)", tc.cmd, err, o)
			}
		})
	}
	// After all that, the container still answers.
	if o := run(t, c, agent.ExecRequest{Command: "echo alive"}); o.stdout != "alive\n" {
		t.Errorf("after containment tests: %+v", o)
	}
}

// TestOOM checks that a memory bomb is killed and reported as OOM. Under
// gVisor the sandbox's memory is one cgroup for the sentry and everything
// in it, so the whole container dies: the exec is still reported as OOM,
// and the container is gone (a documented difference).
func TestOOM(t *testing.T) {
	e := newEnv(t)
	c, _ := e.start(t, rung.Size{MilliCPU: 500, MemoryBytes: 64 << 20, DiskBytes: 1 << 30})
	exit, err := c.Exec(t.Context(), agent.ExecRequest{Command: "x=a; while true; do x=$x$x; done"}, nil)
	if os.Getenv("RUNG_TEST_RUNTIME") == "runsc" {
		if err != nil || exit.Reason != "oom" {
			t.Errorf("runsc memory bomb: exit %+v, err %v; want reason oom", exit, err)
		}
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Errorf("runsc memory bomb: container still running")
		}
		return
	}
	if err != nil || exit.Reason != "oom" {
		t.Fatalf("memory bomb: exit %+v, err %v; want reason oom", exit, err)
	}
	if o := run(t, c, agent.ExecRequest{Command: "echo alive"}); o.stdout != "alive\n" {
		t.Errorf("after OOM: %+v", o)
	}
}

func nonZero(o out) error {
	if o.exit.Code == 0 {
		return fmt.Errorf("succeeded, want failure")
	}
	return nil
}

func TestStopLeavesNothing(t *testing.T) {
	e := newEnv(t)
	c, _ := e.start(t, rung.Size{})
	if err := e.m.Stop(t.Context(), c.Sandbox); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("container init still running after Stop")
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if bytes.Contains(mounts, []byte(string(c.Sandbox))) {
		t.Errorf("a mount of %s is left", c.Sandbox)
	}
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory/rung", string(c.Sandbox))); err == nil {
		t.Errorf("cgroup of %s is left", c.Sandbox)
	}
}

func TestDeathIsNoticed(t *testing.T) {
	e := newEnv(t)
	c, _ := e.start(t, rung.Size{})
	if err := syscall.Kill(c.InitPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the container died")
	}
	if e.m.Get(c.Sandbox) != nil {
		t.Error("Get returns a dead container")
	}
	// The next start of the same sandbox works.
	if err := e.m.Stop(t.Context(), c.Sandbox); err != nil {
		t.Errorf("Stop after death: %v", err)
	}
}

func TestProbe(t *testing.T) {
	e := newEnv(t)
	rootfs := e.images.LowerDirs(e.lite)[0]
	cands := []container.Runtime{
		{Name: "runc", Binary: "runc"},
		container.Crun("crun"),
		{Name: "missing", Binary: "/nonexistent/runtime"},
	}
	best, results, err := container.Probe(t.Context(), rootfs, t.TempDir(), cands)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || results[2].OK || results[2].Error == "" {
		t.Errorf("results = %+v; want three, the missing runtime failed with a reason", results)
	}
	if best.Name != "runc" && best.Name != "crun" {
		t.Errorf("best = %q", best.Name)
	}
	for _, r := range results[:2] {
		if !r.OK {
			t.Errorf("%s failed the probe: %s", r.Runtime, r.Error)
		}
		t.Logf("%s: median %v", r.Runtime, r.Median)
	}
}

// TestAgentThatNeverServes: when the container's init exits before its
// agent listens, Start fails at once with that reason (not after the
// agent's 10 s answer timeout) and leaves no mount behind.
func TestAgentThatNeverServes(t *testing.T) {
	testenv.Require(t, "root", "runc", "busybox")
	images, lite := liteImage(t)
	// busybox run as "rung" finds no such applet and exits 127.
	m := newManager(t, images, container.Runtime{Name: "runc", Binary: "runc"}, "/bin/busybox")
	id := rung.NewSandboxID()
	t0 := time.Now()
	_, err := m.Start(t.Context(), container.StartRequest{Sandbox: id, Subvolume: subvolume(t), Image: lite, Size: rung.Presets["basic"]})
	if err == nil || !strings.Contains(err.Error(), "exited before its agent served") {
		t.Fatalf("Start = %v, want the init's exit explained", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Start took %v to notice the exit", d)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if bytes.Contains(mounts, []byte(string(id))) {
		t.Errorf("a mount of %s is left", id)
	}
}
