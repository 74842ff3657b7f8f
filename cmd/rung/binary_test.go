package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"rung.dev/rung/client"
	"rung.dev/rung/internal/testenv"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// rungBinary builds cmd/rung once per test run.
// TestMain removes the binary rungBinary built (about 50 MB a run, which
// would otherwise pile up in the temporary directory run after run).
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

func rungBinary(t testing.TB) string {
	t.Helper()
	testenv.Require(t, "root", "mkfs.btrfs", "go")
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rung-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "rung")
		// Static, as `make build` builds it: the binary is also the
		// agent inside containers, whose images may have no libc.
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("build rung: %v", buildErr)
	}
	return binPath
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// serveProc is a `rung serve` subprocess.
type serveProc struct {
	cmd   *exec.Cmd
	addr  string
	token string
	logs  *syncBuffer
	done  chan struct{}
}

// startServe starts `rung serve` on data, with extra flags, and waits
// until it answers. Its default image is lite unless flags name another:
// serve's own default, base, takes minutes to build.
func startServe(t testing.TB, bin, data string, flags ...string) *serveProc {
	t.Helper()
	p := &serveProc{addr: freeAddr(t), logs: &syncBuffer{}, done: make(chan struct{})}
	// Daemons in tests run side by side: the network tier, which owns a
	// host-wide table and range, only when a test gives them their own.
	networked := false
	for _, f := range flags {
		networked = networked || strings.HasPrefix(f, "--network-range")
	}
	if !networked {
		flags = append([]string{"--no-network"}, flags...)
	}
	p.cmd = exec.Command(bin, append([]string{"serve", "--addr", p.addr, "--data", data, "--default-image", "lite"}, flags...)...)
	p.cmd.Stderr = p.logs
	if v := os.Getenv("RUNG_BENCH_SERVE_GOMAXPROCS"); v != "" {
		// The daemon's threads fixed, the client's left as they are: a
		// benchmark compares `rung serve`'s governor with a fixed count.
		p.cmd.Env = append(os.Environ(), "GOMAXPROCS="+v)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }() // ends when the process exits
	// A test that failed before it stopped its daemon leaves it to this.
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.stop(t)
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-p.done:
			t.Fatalf("rung serve exited early: %s", p.logs)
		default:
		}
		if b, err := os.ReadFile(filepath.Join(data, "token")); err == nil {
			if c, err := net.Dial("tcp", p.addr); err == nil {
				c.Close()
				p.token = strings.TrimSpace(string(b))
				return p
			}
		}
		if time.Now().After(deadline) {
			p.cmd.Process.Kill()
			t.Fatalf("rung serve did not come up: %s", p.logs)
		}
		time.Sleep(20 * time.Millisecond) // polling a subprocess's start-up; nothing to wait on
	}
}

// stop ends the daemon with SIGTERM and waits for it.
func (p *serveProc) stop(t testing.TB) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		t.Errorf("rung serve ignored SIGTERM")
	}
}

// run runs a CLI verb against p and returns stdout and the exit code.
func (p *serveProc) run(t *testing.T, bin, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "RUNG_ADDR="+p.addr, "RUNG_TOKEN="+p.token)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Logf("rung %v: exit %d, stderr %s", args, code, errb.String())
	}
	return out.String(), code
}

func TestBinaryCLI(t *testing.T) {
	bin := rungBinary(t)
	data := t.TempDir()
	p := startServe(t, bin, data)
	defer p.stop(t)
	if fi, err := os.Stat(filepath.Join(data, "token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	out, code := p.run(t, bin, "", "create", "--name", "cli", "--label", "a=b")
	id := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(id, "sbx_") {
		t.Fatalf("create = %q, %d", out, code)
	}
	if _, code := p.run(t, bin, "hello world\n", "put", id, "dir/in.txt"); code != 0 {
		t.Fatal("put failed")
	}
	out, code = p.run(t, bin, "", "exec", id, "--backend", "isolate", "--json", "--", "read", "a", "b", "<", "dir/in.txt;", "echo", "$b;", "exit", "3")
	var res client.ExecResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Stdout != "world\n" || res.ExitCode != 3 || res.Backend != "isolate" {
		t.Errorf("exec --json = %q (%v)", out, err)
	}
	if code != 3 {
		t.Errorf("exec --json exit code %d, want the command's 3", code)
	}
	out, code = p.run(t, bin, "", "exec", "cli", "--backend", "isolate", "--", "echo hi; exit 7")
	if out != "hi\n" || code != 7 {
		t.Errorf("exec streamed = %q, exit %d; want \"hi\\n\", 7", out, code)
	}
	if out, _ := p.run(t, bin, "", "get", id, "/workspace/dir/in.txt"); out != "hello world\n" {
		t.Errorf("get = %q", out)
	}
	if out, _ := p.run(t, bin, "", "files", id, "-r"); !strings.Contains(out, "/workspace/dir/in.txt") {
		t.Errorf("files = %q", out)
	}
	if out, _ := p.run(t, bin, "", "ls"); !strings.Contains(out, id) || !strings.Contains(out, "cli") {
		t.Errorf("ls = %q", out)
	}
	if out, _ := p.run(t, bin, "", "journal", id); !strings.Contains(out, "file.written") || !strings.Contains(out, "exec.ended") {
		t.Errorf("journal = %q", out)
	}
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "sub", "f"), []byte("tarred"), 0o644)
	if _, code := p.run(t, bin, "", "cp", src, id+":/workspace/copy"); code != 0 {
		t.Fatal("cp up failed")
	}
	dst := filepath.Join(t.TempDir(), "back")
	if _, code := p.run(t, bin, "", "cp", id+":/workspace/copy", dst); code != 0 {
		t.Fatal("cp down failed")
	}
	if b, err := os.ReadFile(filepath.Join(dst, "sub", "f")); err != nil || string(b) != "tarred" {
		t.Errorf("cp round trip = %q, %v", b, err)
	}
	if _, code := p.run(t, bin, "", "tenant", "create", "other"); code != 0 {
		t.Error("tenant create failed")
	}
	if out, code := p.run(t, bin, "", "token", "create", "--tenant", "other"); code != 0 || !strings.HasPrefix(out, "rung_") {
		t.Errorf("token create = %q, %d", out, code)
	}
	if out, code := p.run(t, bin, "", "completion", "bash"); code != 0 || !strings.Contains(out, "rung") {
		t.Errorf("completion bash: exit %d", code)
	}
	if _, code := p.run(t, bin, "", "rm", id); code != 0 {
		t.Error("rm failed")
	}
	if _, code := p.run(t, bin, "", "get", id, "dir/in.txt"); code == 0 {
		t.Error("get after rm succeeded")
	}
}

// syncBuffer is a bytes.Buffer that the subprocess's stderr copier and the
// test may use at the same time.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rung serve refuses a stop grace the agent would cut short, or zero,
// before it opens anything.
func TestServeStopGraceFlag(t *testing.T) {
	bin := rungBinary(t)
	for _, v := range []string{"0s", "-1s", "31s"} {
		data := t.TempDir()
		out, err := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", data, "--stop-grace", v).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--stop-grace must be") {
			t.Errorf("--stop-grace %s: %v, %s", v, err, out)
		}
		if _, err := os.Stat(filepath.Join(data, "rung.db")); err == nil {
			t.Errorf("--stop-grace %s: the daemon opened its store", v)
		}
	}
}
