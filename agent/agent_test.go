package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"rung.dev/rung/agent"
)

// TestMain lets the test binary double as the agent: the agent reaps every
// child of its process, so it must run in a process of its own.
func TestMain(m *testing.M) {
	if dir := os.Getenv("RUNG_AGENT_TEST_DIR"); dir != "" {
		cfg := agent.ServerConfig{SocketDir: dir}
		if os.Getenv("RUNG_AGENT_TEST_LISTENER") == "3" { // passed in, as the container tier does
			ln, err := net.FileListener(os.NewFile(3, "listener"))
			if err != nil {
				os.Stderr.WriteString(err.Error() + "\n")
				os.Exit(1)
			}
			cfg.Listener = ln
		}
		if err := agent.Serve(context.Background(), cfg); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startAgent(t *testing.T) *agent.Client {
	t.Helper()
	dir := t.TempDir()
	spawnAgent(t, dir)
	return waitHealthy(t, agent.NewClient(dir))
}

// spawnAgent runs this test binary as an agent serving in dir until the
// test ends.
func spawnAgent(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "RUNG_AGENT_TEST_DIR="+dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
}

// A socket the host made and passed in is served, and a request made
// before the agent runs waits for it rather than failing; a path too long
// for a unix address works on both sides.
func TestPassedListener(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := agent.Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.File()
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	c := agent.NewClient(dir)
	t.Cleanup(c.Close)
	health := make(chan error, 1)
	go func() { health <- c.Health(t.Context()) }() // before the agent exists
	time.Sleep(50 * time.Millisecond)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "RUNG_AGENT_TEST_DIR="+dir, "RUNG_AGENT_TEST_LISTENER=3")
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	if err := <-health; err != nil {
		t.Fatalf("health queued before the agent started: %v", err)
	}
	var out bytes.Buffer
	exit, err := c.Exec(t.Context(), agent.ExecRequest{Command: "echo hi", Dir: "/"}, func(f agent.Frame) { out.Write(f.Data) })
	if err != nil || exit.Code != 0 || out.String() != "hi\n" {
		t.Errorf("exec: %v %+v %q", err, exit, out.String())
	}
	fi, err := os.Stat(filepath.Join(dir, agent.SocketName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket: %v, %v; want mode 0600", fi, err)
	}
}

// waitHealthy waits until c's agent answers, then returns c.
func waitHealthy(t *testing.T, c *agent.Client) *agent.Client {
	t.Helper()
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		err := c.Health(ctx)
		if err == nil {
			return c
		}
		select {
		case <-ctx.Done():
			t.Fatalf("agent did not come up: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

type result struct {
	Stdout, Stderr string
	Exit           agent.Exit
}

func run(t *testing.T, c *agent.Client, req agent.ExecRequest) result {
	t.Helper()
	if req.Dir == "" {
		req.Dir = "/"
	}
	if req.Env == nil {
		req.Env = []string{"PATH=/usr/bin:/bin"}
	}
	var out, errb bytes.Buffer
	var last int64
	exit, err := c.Exec(t.Context(), req, func(f agent.Frame) {
		if f.Seq <= last {
			t.Errorf("frame seq %d after %d", f.Seq, last)
		}
		last = f.Seq
		if f.Stream == "stdout" {
			out.Write(f.Data)
		} else {
			errb.Write(f.Data)
		}
	})
	if err != nil {
		t.Fatalf("Exec(%q): %v", req.Command, err)
	}
	return result{out.String(), errb.String(), exit}
}

func TestExec(t *testing.T) {
	c := startAgent(t)
	tests := []struct {
		name string
		req  agent.ExecRequest
		want result
	}{
		{"echo", agent.ExecRequest{Command: "echo hi; echo err >&2"},
			result{"hi\n", "err\n", agent.Exit{Code: 0, Reason: "exit"}}},
		{"exit code", agent.ExecRequest{Command: "exit 7"},
			result{"", "", agent.Exit{Code: 7, Reason: "exit"}}},
		{"stdin", agent.ExecRequest{Command: "tr a-z A-Z", Stdin: []byte("abc\n")},
			result{"ABC\n", "", agent.Exit{Code: 0, Reason: "exit"}}},
		{"argv", agent.ExecRequest{Argv: []string{"printf", "%s|", "a b", "c"}},
			result{"a b|c|", "", agent.Exit{Code: 0, Reason: "exit"}}},
		{"env and dir", agent.ExecRequest{Command: "echo $FOO; pwd", Env: []string{"FOO=bar", "PATH=/usr/bin:/bin"}, Dir: "/usr"},
			result{"bar\n/usr\n", "", agent.Exit{Code: 0, Reason: "exit"}}},
		{"signal", agent.ExecRequest{Command: "kill -9 $$"},
			result{"", "", agent.Exit{Code: 137, Signal: "SIGKILL", Reason: "signal"}}},
		{"timeout", agent.ExecRequest{Command: "sleep 30", TimeoutMS: 50},
			result{"", "", agent.Exit{Code: 137, Signal: "SIGKILL", Reason: "timeout"}}},
		{"background child holding stdout", agent.ExecRequest{Command: "sleep 30 & echo started"},
			result{"started\n", "", agent.Exit{Code: 0, Reason: "exit"}}},
		// What the shell leaves running gets its moment to write, as a
		// reader of the shell's output to its end sees it.
		{"process substitution", agent.ExecRequest{Command: "echo hi > >(tr a-z A-Z)", Shell: "/bin/bash"},
			result{"HI\n", "", agent.Exit{Code: 0, Reason: "exit"}}},
		{"tee to process substitutions", agent.ExecRequest{Command: "printf 'a\\nb\\n' | tee >(grep -c b) > /dev/null", Shell: "/bin/bash"},
			result{"1\n", "", agent.Exit{Code: 0, Reason: "exit"}}},
		{"a reader slower than the shell", agent.ExecRequest{Command: "echo hi > >(sleep 0.02; tr a-z A-Z)", Shell: "/bin/bash"},
			result{"HI\n", "", agent.Exit{Code: 0, Reason: "exit"}}},
		{"not found", agent.ExecRequest{Argv: []string{"no-such-command"}},
			result{"", "", agent.Exit{Code: 127, Reason: "start_failed", Error: "no-such-command: command not found"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, c, tc.req)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestOutputLimit(t *testing.T) {
	c := startAgent(t)
	got := run(t, c, agent.ExecRequest{Command: "yes", MaxOutput: 100000})
	if len(got.Stdout) != 100000 || !strings.HasPrefix(got.Stdout, "y\ny\n") {
		t.Errorf("stdout has %d bytes, want exactly 100000 of y lines", len(got.Stdout))
	}
	if got.Exit.Reason != "output_limit" || !got.Exit.Truncated {
		t.Errorf("exit = %+v, want reason output_limit and truncated", got.Exit)
	}
}

func TestConcurrentExecs(t *testing.T) {
	c := startAgent(t)
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			var out bytes.Buffer
			exit, err := c.Exec(t.Context(), agent.ExecRequest{Command: "echo $0", Argv: []string{"/bin/sh", "-c", "echo $0", string(rune('a' + i))}, Dir: "/", Env: []string{"PATH=/bin"}},
				func(f agent.Frame) { out.Write(f.Data) })
			if err == nil && (exit.Code != 0 || out.String() != string(rune('a'+i))+"\n") {
				err = &mismatch{out.String()}
			}
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

type mismatch struct{ got string }

func (m *mismatch) Error() string { return "unexpected output " + m.got }

func TestCancelKillsCommand(t *testing.T) {
	c := startAgent(t)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Exec(ctx, agent.ExecRequest{Command: "sleep 30", Dir: "/", Env: []string{"PATH=/bin"}}, nil)
	if err == nil {
		t.Fatal("Exec with a cancelled context returned no error")
	}
	// The agent still serves.
	got := run(t, c, agent.ExecRequest{Command: "echo ok"})
	if got.Stdout != "ok\n" {
		t.Errorf("after cancel: stdout %q", got.Stdout)
	}
}

func TestProcesses(t *testing.T) {
	c := startAgent(t)
	ctx := t.Context()
	info, err := c.StartProcess(ctx, agent.ProcessRequest{Command: "echo ready; read line; echo got $line; sleep 30", Dir: "/", Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteStdin(ctx, info.ID, []byte("hello\n"), false); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var last int64
	readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Follow until both lines arrive, then re-attach from the last seq.
	for !strings.Contains(out.String(), "got hello") {
		if _, err := c.Output(readCtx, info.ID, last, false, func(f agent.Frame) { out.Write(f.Data); last = f.Seq }); err != nil {
			t.Fatal(err)
		}
		if readCtx.Err() != nil {
			t.Fatalf("output so far %q", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if out.String() != "ready\ngot hello\n" {
		t.Errorf("output %q", out.String())
	}
	var again bytes.Buffer
	// Re-attaching from 0 replays everything; from the last seq, nothing.
	if _, err := c.Output(ctx, info.ID, 0, false, func(f agent.Frame) { again.Write(f.Data) }); err != nil {
		t.Fatal(err)
	}
	if again.String() != "ready\ngot hello\n" {
		t.Errorf("re-attach from seq 0: %q", again.String())
	}
	n := 0
	c.Output(ctx, info.ID, last, false, func(agent.Frame) { n++ })
	if n != 0 {
		t.Errorf("re-attach from the last seq gave %d frames", n)
	}
	if err := c.Signal(ctx, info.ID, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	exit, err := c.Output(ctx, info.ID, last, true, func(agent.Frame) {})
	if err != nil || exit == nil || exit.Signal != "SIGTERM" {
		t.Fatalf("exit after SIGTERM = %+v, %v", exit, err)
	}
	procs, err := c.Processes(ctx)
	if err != nil || len(procs) != 1 || procs[0].Running {
		t.Errorf("Processes = %+v, %v", procs, err)
	}
	if err := c.Signal(ctx, "prc_missing", "SIGTERM"); err == nil {
		t.Error("signal to a missing process succeeded")
	}
}

func TestWaitPort(t *testing.T) {
	c := startAgent(t)
	if err := c.WaitPort(t.Context(), 1, 50*time.Millisecond); err == nil {
		t.Error("WaitPort on a closed port succeeded")
	}
}

// TestClientLongSocketPath reaches an agent whose socket path is longer
// than a unix address holds, as under a deep data directory.
func TestClientLongSocketPath(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	spawnAgent(t, long)
	waitHealthy(t, agent.NewClient(long))
}

// TestClientPinsSocket checks that once a client has reached its agent,
// nothing done to the socket's name redirects it: neither an unlink
// followed by a symlink to another agent's socket (another sandbox's, or
// any host socket) nor anything else in the directory. Under gVisor that
// directory is shared with the container's commands. A client that has
// not found its socket yet refuses a symlink in its place.
func TestClientPinsSocket(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	spawnAgent(t, dir)
	spawnAgent(t, other)
	c := waitHealthy(t, agent.NewClient(dir))
	waitHealthy(t, agent.NewClient(other)).Close()
	whose := func(c *agent.Client) string {
		t.Helper()
		c.DropIdle() // the next request dials anew
		// The agent's own environment names its directory.
		cmd := `tr '\0' '\n' < /proc/$PPID/environ | sed -n 's/^RUNG_AGENT_TEST_DIR=//p'`
		return run(t, c, agent.ExecRequest{Command: cmd}).Stdout
	}
	if got := whose(c); got != dir+"\n" {
		t.Fatalf("agent before the swap = %q, want %q", got, dir)
	}
	sock := filepath.Join(dir, agent.SocketName)
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(other, agent.SocketName), sock); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got := whose(c); got != dir+"\n" {
			t.Fatalf("after the socket was replaced by a symlink, a new connection reached %q, want %q", got, dir)
		}
	}
	fresh := agent.NewClient(dir)
	defer fresh.Close()
	if err := fresh.Health(t.Context()); !errors.Is(err, agent.ErrNoAgent) {
		t.Errorf("a client that never found its socket, facing a symlink: %v, want ErrNoAgent", err)
	}
	c.Close()
	if err := c.Health(t.Context()); !errors.Is(err, agent.ErrNoAgent) {
		t.Errorf("Health after Close: %v, want ErrNoAgent", err)
	}
}

// TestCommandPreferredForOOM checks that a command runs with the highest
// OOM score adjustment, so that the OOM killer picks it over the agent.
// (The shell reads it after a pause: the agent sets it just after the
// fork.)
func TestCommandPreferredForOOM(t *testing.T) {
	c := startAgent(t)
	got := run(t, c, agent.ExecRequest{Command: "sleep 0.1; cat /proc/self/oom_score_adj"})
	if got.Stdout != "1000\n" {
		t.Errorf("command's oom_score_adj = %q, %+v; want 1000", got.Stdout, got.Exit)
	}
}

// waitExit waits for a background process to exit without reading its
// output (after is past any seq it can reach).
func waitExit(t *testing.T, c *agent.Client, id string) *agent.Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	exit, err := c.Output(ctx, id, 1<<40, true, func(agent.Frame) {})
	if err != nil || exit == nil {
		t.Fatalf("waiting for %s to exit: %+v, %v", id, exit, err)
	}
	return exit
}

// exitedIDs lists c's background processes, every one of which has
// exited, and returns their ids, sorted.
func exitedIDs(t *testing.T, c *agent.Client) []string {
	t.Helper()
	procs, err := c.Processes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range procs {
		if p.Running {
			t.Errorf("%s still running after its exit", p.ID)
		}
		ids = append(ids, p.ID)
	}
	slices.Sort(ids)
	return ids
}

// Exited processes leave the cap and the table: more starts than the cap
// keep working, the list keeps the newest maxExited, and a dropped
// process is as unknown as an id never given out.
func TestExitedProcessesPruned(t *testing.T) {
	t.Parallel()
	c := startAgent(t)
	ctx := t.Context()
	var ids []string
	for i := range agent.MaxProcesses + agent.MaxExited + 16 {
		info, err := c.StartProcess(ctx, agent.ProcessRequest{Argv: []string{"true"}, Dir: "/", Env: []string{"PATH=/usr/bin:/bin"}})
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		waitExit(t, c, info.ID)
		ids = append(ids, info.ID)
	}
	got := exitedIDs(t, c)
	want := slices.Sorted(slices.Values(ids[len(ids)-agent.MaxExited:]))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listed processes (-want +got):\n%s", diff)
	}
	if exit := waitExit(t, c, ids[len(ids)-1]); exit.Code != 0 {
		t.Errorf("newest exit = %+v, want code 0", exit)
	}
	_, unknown := c.Output(ctx, "prc_missing", 0, false, func(agent.Frame) {})
	_, dropped := c.Output(ctx, ids[0], 0, false, func(agent.Frame) {})
	if se, ok := errors.AsType[*agent.StatusError](unknown); !ok || se.Code != http.StatusNotFound {
		t.Fatalf("output of an unknown id: %v, want 404", unknown)
	}
	if diff := cmp.Diff(unknown, dropped); diff != "" {
		t.Errorf("output of a dropped process, (-unknown id +dropped):\n%s", diff)
	}
	if diff := cmp.Diff(unknown, c.Signal(ctx, ids[0], "SIGTERM")); diff != "" {
		t.Errorf("signal to a dropped process, (-unknown id +dropped):\n%s", diff)
	}
}

// Exited processes' output is bounded in bytes as well as in number: of
// five full buffers only the newest that fit in maxExitedOutput stay.
func TestExitedOutputBounded(t *testing.T) {
	t.Parallel()
	c := startAgent(t)
	ctx := t.Context()
	var ids []string
	for range agent.MaxExitedOutput/agent.MaxRetainedOutput + 1 {
		info, err := c.StartProcess(ctx, agent.ProcessRequest{
			Command: fmt.Sprintf("head -c %d /dev/zero", agent.MaxRetainedOutput),
			Dir:     "/", Env: []string{"PATH=/usr/bin:/bin"},
		})
		if err != nil {
			t.Fatal(err)
		}
		waitExit(t, c, info.ID)
		ids = append(ids, info.ID)
	}
	got := exitedIDs(t, c)
	want := slices.Sorted(slices.Values(ids[1:]))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listed processes (-want +got):\n%s", diff)
	}
}

// Running processes still hit the cap, and one exiting frees its slot.
func TestProcessCap(t *testing.T) {
	t.Parallel()
	c := startAgent(t)
	ctx := t.Context()
	req := agent.ProcessRequest{Argv: []string{"sleep", "600"}, Dir: "/", Env: []string{"PATH=/usr/bin:/bin"}}
	var first string
	for i := range agent.MaxProcesses {
		info, err := c.StartProcess(ctx, req)
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if i == 0 {
			first = info.ID
		}
	}
	_, err := c.StartProcess(ctx, req)
	if se, ok := errors.AsType[*agent.StatusError](err); !ok || se.Code != http.StatusTooManyRequests {
		t.Fatalf("start past the cap: %v, want 429", err)
	}
	if err := c.Signal(ctx, first, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	waitExit(t, c, first)
	if _, err := c.StartProcess(ctx, req); err != nil {
		t.Errorf("start after one exited: %v", err)
	}
}

// WaitPort finds a server on either loopback address.
func TestWaitPortListening(t *testing.T) {
	t.Parallel()
	c := startAgent(t)
	tests := []struct {
		name, addr string
	}{
		{"ipv4", "127.0.0.1:0"},
		{"ipv6 only", "[::1]:0"}, // as Node and Vite listen on "localhost"
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", tc.addr)
			if err != nil {
				t.Skipf("no loopback at %s: %v", tc.addr, err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			if tc.name == "ipv6 only" {
				// Something on 127.0.0.1 at the same port would answer instead.
				if other, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
					other.Close()
					t.Skipf("port %d is taken on 127.0.0.1 too", port)
				}
			}
			if err := c.WaitPort(t.Context(), port, 10*time.Second); err != nil {
				t.Errorf("WaitPort(%d) with a listener on %s: %v", port, ln.Addr(), err)
			}
		})
	}
}
