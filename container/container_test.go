package container_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// staticBuild is one CGO_ENABLED=0 build of a package, shared by a test
// run: static, so it runs in any image, busybox's included.
type staticBuild struct {
	pkg  string // import path or directory, as go build takes it
	once sync.Once
	path string
	err  error
}

var (
	agentBuild  = &staticBuild{pkg: "rung.dev/rung/cmd/rung"}
	escapeBuild = &staticBuild{pkg: "./testdata/escape"}
)

func (b *staticBuild) binary(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "rung-build-")
		if err != nil {
			b.err = err
			return
		}
		container.AfterTests = append(container.AfterTests, func() { os.RemoveAll(dir) })
		b.path = filepath.Join(dir, filepath.Base(b.pkg))
		cmd := exec.Command("go", "build", "-o", b.path, b.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build %s: %v\n%s", b.pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// agentBinary builds the static rung binary once per test run: the
// containers run the real agent, with its real start-up cost.
func agentBinary(t testing.TB) string { return agentBuild.binary(t) }

// copyExecutable copies the file at src to dst, executable.
func copyExecutable(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

type env struct {
	m       *container.Manager
	images  *image.Store
	lite    image.Image
	runtime container.Runtime
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
	return &env{m: newManager(t, images, rt, agentBinary(t)), images: images, lite: lite, runtime: rt}
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
	c, sub := e.start(t, size)
	// The escape attempts busybox cannot make (see testdata/escape).
	copyExecutable(t, escapeBuild.binary(t), filepath.Join(sub, "fs/workspace/escape"))
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
		// Before the fork bomb, while the container holds only a handful
		// of small pids: the test's own pid then names no process inside.
		{"ptrace of a host process fails: it is invisible", fmt.Sprintf("./escape ptrace %d", os.Getpid()), 0, prints("ESRCH")},
		{"ptrace of the agent fails", "./escape ptrace 1", 0, prints("EPERM")},
		{"clone into a new user namespace fails", "./escape clone-userns", 0, prints("EPERM")},
		// ENOSYS, not EPERM: glibc then falls back to clone. (gVisor has
		// no clone3 at all.)
		{"clone3 fails as if missing", "./escape clone3-userns", 0, prints("ENOSYS")},
		{"unshare of a user namespace fails", "unshare -U true", 0, nonZero},
		{"io_uring fails", "./escape io-uring", 0, prints("EPERM EPERM EPERM")},
		// Allowed, as in Docker: debuggers and strace work on the
		// container's own processes.
		{"ptrace of an own child works", "./escape ptrace-child", 0, prints("attached")},
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
	// runsc does not load the seccomp profile (see defaultSeccomp): the
	// namespace or io_uring ring a command makes there is the Sentry's,
	// and the host kernel never sees the call.
	const inSentry = "known difference: under runsc the call reaches gVisor's kernel, not the host's, and gVisor allows it"
	underGVisor := map[string]string{
		"fork bomb stops at the pids limit":     "known difference: under gVisor the pids limit also binds the sentry's own threads, so a fork bomb ends the whole sandbox (see docs/decisions/container.md)",
		"clone into a new user namespace fails": inSentry,
		"unshare of a user namespace fails":     inSentry,
		"io_uring fails":                        inSentry,
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if why := underGVisor[tc.name]; why != "" && os.Getenv("RUNG_TEST_RUNTIME") == "runsc" {
				t.Skip(why)
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

// prints checks that a command's standard output is want and a newline.
func prints(want string) func(o out) error {
	return func(o out) error {
		if got := strings.TrimSuffix(o.stdout, "\n"); got != want {
			return fmt.Errorf("printed %q, want %q", got, want)
		}
		return nil
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
	if best.Name == "crun" && !best.SeccompBPF {
		t.Errorf("crun lost its compiled seccomp program in the probe")
	}
	// The probe's own state directory is not the caller's: a manager made
	// from best keeps its containers under its own root, where a restart
	// finds and reaps them (it once got the probe's, and reaped nothing).
	if best.Root != "" {
		t.Errorf("best.Root = %q, want the candidate's (empty)", best.Root)
	}
	// A runtime that ignores the compiled program (runc knows no such
	// annotation) must not run containers without a filter: the probe
	// gives it the profile to compile instead.
	ignoring := container.Runtime{Name: "runc", Binary: "runc", SeccompBPF: true}
	best, results, err = container.Probe(t.Context(), rootfs, t.TempDir(), []container.Runtime{ignoring})
	if err != nil || !results[0].OK || best.SeccompBPF {
		t.Errorf("probe of a runtime ignoring the program: %+v, %+v, %v; want OK with SeccompBPF off", best, results, err)
	}
}

// TestProbeConcurrent: probes running at once (a daemon starting while
// another, or a test, probes) keep to their own cgroups. They once shared
// one, and a failure that caused was taken for crun ignoring the compiled
// program, so crun ran with the profile compiled by itself (CI saw it).
func TestProbeConcurrent(t *testing.T) {
	e := newEnv(t)
	rootfs := e.images.LowerDirs(e.lite)[0]
	for range 3 {
		var wg sync.WaitGroup
		for range 3 {
			dir := t.TempDir()
			wg.Go(func() {
				best, results, err := container.Probe(t.Context(), rootfs, dir, []container.Runtime{container.Crun("crun")})
				if err != nil || !best.SeccompBPF {
					t.Errorf("concurrent probe: %+v, %+v, %v; want crun with its compiled program", best, results, err)
				}
			})
		}
		wg.Wait()
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

// TestThreadsAndSpawnInGlibc runs what glibc (2.34 and later) starts
// with clone3, which the seccomp profile refuses: threads and
// posix_spawn work only because it refuses with ENOSYS, on which glibc
// falls back to clone.
func TestThreadsAndSpawnInGlibc(t *testing.T) {
	testenv.Require(t, "root", "runc", "debootstrap")
	if testing.Short() {
		t.Skip("builds a Debian image with debootstrap")
	}
	m, im := debianManager(t, "debian-python", "python3")
	c, err := m.Start(t.Context(), container.StartRequest{Sandbox: rung.NewSandboxID(), Subvolume: subvolume(t), Image: im, Size: rung.Presets["basic"]})
	if err != nil {
		t.Fatal(err)
	}
	script := `import os, threading
t = threading.Thread(target=print, args=("thread",)); t.start(); t.join()
pid = os.posix_spawn("/bin/true", ["true"], os.environ)
print("spawned", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
pid = os.fork()
if pid == 0: os._exit(7)
print("forked", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))`
	o := run(t, c, agent.ExecRequest{Argv: []string{"python3", "-c", script}})
	if want := "thread\nspawned 0\nforked 7\n"; o.stdout != want || o.exit.Code != 0 {
		t.Errorf("python3 = %+v, want stdout %q", o, want)
	}
}

// TestBootID: each container start has a boot id of its own, as each
// boot of a VM does: well-formed, not the host's, the same for every
// command of the container, another after a stop and start of the same
// sandbox, and read-only even to the container's root.
func TestBootID(t *testing.T) {
	e := newEnv(t)
	host, err := os.ReadFile(container.BootIDPath)
	if err != nil {
		t.Fatal(err)
	}
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n$`)
	sub := subvolume(t)
	id := rung.NewSandboxID()
	bootID := func() string {
		c, err := e.m.Start(t.Context(), container.StartRequest{Sandbox: id, Subvolume: sub, Image: e.lite, Size: rung.Presets["basic"]})
		if err != nil {
			t.Fatal(err)
		}
		first := run(t, c, agent.ExecRequest{Command: "cat " + container.BootIDPath})
		if !form.MatchString(first.stdout) || first.stdout == string(host) {
			t.Fatalf("boot id %q (host's %q): want a fresh random UUID", first.stdout, host)
		}
		if again := run(t, c, agent.ExecRequest{Command: "cat " + container.BootIDPath}); again.stdout != first.stdout {
			t.Errorf("boot id changed within one start: %q, then %q", first.stdout, again.stdout)
		}
		if w := run(t, c, agent.ExecRequest{Command: "echo 00000000-0000-4000-8000-000000000000 > " + container.BootIDPath}); w.exit.Code == 0 {
			t.Errorf("root in the container wrote its boot id")
		}
		if after := run(t, c, agent.ExecRequest{Command: "cat " + container.BootIDPath}); after.stdout != first.stdout {
			t.Errorf("boot id after a write: %q, want %q", after.stdout, first.stdout)
		}
		if err := e.m.Stop(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(e.m.RuntimeRoot()), "boot-id", string(id))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the stopped container's boot id file: %v, want it gone", err)
		}
		return first.stdout
	}
	one, two := bootID(), bootID()
	if one == two {
		t.Errorf("a restart kept boot id %q", one)
	}
	other, _ := e.start(t, rung.Size{})
	if got := run(t, other, agent.ExecRequest{Command: "cat " + container.BootIDPath}); got.stdout == two || got.stdout == one {
		t.Errorf("another sandbox's container has boot id %q too", got.stdout)
	}
}
