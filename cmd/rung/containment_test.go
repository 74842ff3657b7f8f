package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/internal/testenv"
)

// TestSandboxCannotReachAnother replays, through a real daemon and under
// each runtime, the attacks of issue 10 that went through the agent's
// socket directory: sandbox A replaces its agent socket by a symlink to
// sandbox B's and makes the daemon dial anew (B's files were printed);
// and A fills /.rung/run, which was a host directory outside every quota.
// B must be untouched, the daemon must keep serving, and a restart on the
// same data directory must succeed.
func TestSandboxCannotReachAnother(t *testing.T) {
	for _, iso := range []rung.Isolation{rung.IsolationContainer, rung.IsolationGVisor} {
		t.Run(string(iso), func(t *testing.T) {
			if iso == rung.IsolationGVisor {
				testenv.Require(t, "runsc")
			}
			data := t.TempDir()
			c, d, _ := startContainerDaemonWith(t, DaemonConfig{Data: data})
			ctx := t.Context()
			size := rung.Size{MilliCPU: 500, MemoryBytes: 256 << 20, DiskBytes: 64 << 20}
			a, err := c.Create(ctx, client.CreateRequest{Isolation: iso, Size: size})
			if err != nil {
				t.Fatal(err)
			}
			b, err := c.Create(ctx, client.CreateRequest{Isolation: iso, Size: size})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.WriteFile(ctx, string(b.ID), "/workspace/secret.txt", strings.NewReader("B-SECRET\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			exec := func(id rung.SandboxID, cmd string) client.ExecResult {
				t.Helper()
				res, err := c.Exec(ctx, string(id), client.ExecRequest{Command: cmd, Backend: rung.BackendContainer})
				if err != nil {
					t.Fatalf("exec %q: %v", cmd, err)
				}
				return res
			}
			exec(b.ID, "true") // B's container and agent are up

			m := d.containers.Config().Runc
			if iso == rung.IsolationGVisor {
				m = d.containers.Config().GVisor
			}
			bSock := filepath.Join(filepath.Dir(m.RuntimeRoot()), string(b.ID), "run", "agent.sock")
			// The attack, with the host path given outright
			// (mountinfo no longer tells it).
			attack := fmt.Sprintf(`p=$(sed -n "s#.* \(/[^ ]*\)/%s/run /.rung/run .*#\1#p" /proc/self/mountinfo); rm /.rung/run/agent.sock; ln -s ${p:-%s}/%s/run/agent.sock /.rung/run/agent.sock; ln -sf %s /.rung/run/agent.sock; true`,
				a.ID, filepath.Dir(filepath.Dir(filepath.Dir(bSock))), b.ID, bSock)
			exec(a.ID, attack)
			var wg sync.WaitGroup
			outs := make([]string, 4)
			for i := range outs {
				// Overlapping execs need new connections to the agent.
				wg.Go(func() {
					res, err := c.Exec(ctx, string(a.ID), client.ExecRequest{Command: "sleep 0.2; cat /workspace/secret.txt 2>&1; true", Backend: rung.BackendContainer})
					if err != nil {
						outs[i] = "error: " + err.Error()
						return
					}
					outs[i] = string(res.Stdout)
				})
			}
			wg.Wait()
			for _, o := range outs {
				if strings.Contains(o, "B-SECRET") || !strings.Contains(o, "No such file") {
					t.Errorf("an exec in A after the socket swap: %q", o)
				}
			}

			// Finding 4: /.rung/run was the host's disk.
			res := exec(a.ID, "dd if=/dev/zero of=/.rung/run/fill bs=1M count=96 2>&1; echo rc=$?")
			if strings.HasSuffix(string(res.Stdout), "rc=0\n") {
				t.Errorf("96 MiB written to /.rung/run in a sandbox with a 64 MiB quota:\n%s", res.Stdout)
			}

			if got := string(exec(b.ID, "cat /workspace/secret.txt").Stdout); got != "B-SECRET\n" {
				t.Errorf("B after the attacks: %q", got)
			}
			d.Close()
			c, d, _ = startContainerDaemonWith(t, DaemonConfig{Data: data})
			defer d.Close()
			if got := string(exec(b.ID, "cat /workspace/secret.txt").Stdout); got != "B-SECRET\n" {
				t.Errorf("B after a restart: %q", got)
			}
			if got := string(exec(a.ID, "echo alive").Stdout); got != "alive\n" {
				t.Errorf("A after a restart: %q", got)
			}
		})
	}
}

// TestProcessRequestsValidated checks that starting a background process
// holds its input to the rules an exec follows (issue 10, finding 6): a
// working directory outside /workspace and /tmp, an invalid environment
// name or a NUL byte are refused with invalid_argument, before anything
// runs; and that an exec's environment value with a NUL byte is refused
// the same way in both tiers (it was start_failed in the container).
func TestProcessRequestsValidated(t *testing.T) {
	c, _ := startContainerDaemon(t)
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	if _, err := c.Exec(ctx, id, client.ExecRequest{Command: "true", Backend: rung.BackendContainer}); err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]client.ProcessRequest{
		"cwd /etc":            {Command: "pwd", Cwd: "/etc"},
		"cwd dotdot":          {Command: "pwd", Cwd: "../../etc"},
		"env name with =":     {Command: "env", Env: map[string]string{"A=B": "x"}},
		"env name empty":      {Command: "env", Env: map[string]string{"": "x"}},
		"env value NUL":       {Command: "env", Env: map[string]string{"A": "x\x00y"}},
		"command NUL":         {Command: "echo a\x00b"},
		"argv NUL":            {Argv: []string{"echo", "a\x00b"}},
		"no command and argv": {},
	} {
		if _, err := c.StartProcess(ctx, id, req); !errors.Is(err, rung.ErrInvalid) {
			t.Errorf("%s: StartProcess = %v, want invalid_argument", name, err)
		}
	}
	for _, backend := range []rung.Backend{rung.BackendIsolate, rung.BackendContainer} {
		_, err := c.Exec(ctx, id, client.ExecRequest{Command: "echo $A", Env: map[string]string{"A": "x\x00y"}, Backend: backend})
		if !errors.Is(err, rung.ErrInvalid) {
			t.Errorf("exec (%s) with a NUL in an env value: %v, want invalid_argument", backend, err)
		}
	}
	// Nothing ran: no process was started by the refused requests.
	procs, err := c.Processes(ctx, id)
	if err != nil || len(procs) != 0 {
		t.Errorf("processes after refused starts: %+v, %v", procs, err)
	}
	// A valid one still runs, in the directory it names.
	p, err := c.StartProcess(ctx, id, client.ProcessRequest{Command: "pwd; echo $A", Cwd: "/tmp", Env: map[string]string{"A": "ok"}})
	if err != nil {
		t.Fatal(err)
	}
	waitOutput(t, c, id, p.ID, "/tmp\nok\n")
}

// TestIsolateWritesOutsideRefused checks that an in-process write outside
// /workspace and /tmp fails loudly instead of landing where neither the
// container nor the file API sees it (issue 10, finding 7), and that the
// same write through auto, when the check can see its target, runs in the
// container and is visible there.
func TestIsolateWritesOutsideRefused(t *testing.T) {
	c, _ := startContainerDaemon(t)
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	for _, cmd := range []string{"echo hi > /x", "p=/x; echo hi > $p", "mkdir /y", "cd /workspace && ln -s / up && echo hi > up/z"} {
		res, err := c.Exec(ctx, id, client.ExecRequest{Command: cmd, Backend: rung.BackendIsolate})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "not permitted") {
			t.Errorf("isolate %q: exit %d, stderr %q; want a refusal", cmd, res.ExitCode, res.Stderr)
		}
	}
	res, err := c.Exec(ctx, id, client.ExecRequest{Command: "echo hi > /x && cat /x"})
	if err != nil || string(res.Stdout) != "hi\n" || res.Backend != rung.BackendContainer {
		t.Errorf("auto: %+v, %v; want hi from the container", res, err)
	}
	if _, err := c.Stat(ctx, id, "/workspace/up/z"); !errors.Is(err, rung.ErrNotFound) && !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("a file written through a symlink to /: %v", err)
	}
}
