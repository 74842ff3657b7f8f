package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/mcp/mcptest"
)

// TestMCP drives a daemon with a container tier through MCP as agents
// do, with the official Go SDK's client: `rung mcp` over stdio, and
// `rung serve`'s /mcp over Streamable HTTP, each through a whole session;
// then another tenant's session, malformed arguments and bad tokens.
func TestMCP(t *testing.T) {
	c, d, addr := startContainerDaemonWith(t, DaemonConfig{})
	bin := rungBinary(t)
	endpoint := "http://" + addr + "/mcp"

	t.Run("stdio", func(t *testing.T) {
		var stderr syncBuffer
		cmd := exec.Command(bin, "mcp")
		cmd.Env = append(os.Environ(), "RUNG_ADDR="+addr, "RUNG_TOKEN="+d.Token)
		cmd.Stderr = &stderr
		s := mcptest.ConnectCommand(t, cmd)
		agentSession(t, s, "stdio", d.Token)
		if err := s.Close(); err != nil {
			t.Errorf("close: %v (stderr %s)", err, stderr.String())
		}
		if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
			t.Errorf("rung mcp after the client closed its stdin: %v (stderr %s)", cmd.ProcessState, stderr.String())
		}
	})
	t.Run("http", func(t *testing.T) {
		agentSession(t, mcptest.ConnectHTTP(t, endpoint, d.Token), "http", d.Token)
	})
	t.Run("tenants", func(t *testing.T) {
		ctx := t.Context()
		if _, err := c.CreateTenant(ctx, "other"); err != nil {
			t.Fatal(err)
		}
		tok, err := c.CreateToken(ctx, "other", false)
		if err != nil {
			t.Fatal(err)
		}
		o := mcptest.ConnectHTTP(t, endpoint, tok.Token)
		var list struct {
			Sandboxes []struct{ ID string } `json:"sandboxes"`
		}
		o.Do(t, "sandbox_list", map[string]any{}, &list)
		if len(list.Sandboxes) != 0 {
			t.Errorf("other tenant lists %+v", list.Sandboxes)
		}
		for tool, args := range map[string]map[string]any{
			"sandbox_get":     {"sandbox": "http"},
			"exec":            {"sandbox": "http", "command": "ls"},
			"file_read":       {"sandbox": "http", "path": "answer"},
			"snapshot_create": {"sandbox": "http"},
			"fork":            {"sandbox": "http"},
		} {
			if msg := o.Fail(t, tool, args); !strings.HasPrefix(msg, "not_found: ") {
				t.Errorf("other tenant's %s on http: %s, want not_found", tool, msg)
			}
		}
		// Over stdio, too: the token decides.
		cmd := exec.Command(bin, "mcp")
		cmd.Env = append(os.Environ(), "RUNG_ADDR="+addr, "RUNG_TOKEN="+tok.Token)
		if msg := mcptest.ConnectCommand(t, cmd).Fail(t, "sandbox_get", map[string]any{"sandbox": "stdio"}); !strings.HasPrefix(msg, "not_found: ") {
			t.Errorf("other tenant's rung mcp: %s", msg)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		s := mcptest.ConnectHTTP(t, endpoint, d.Token)
		for _, args := range []map[string]any{
			{"sandbox": "http"},
			{"sandbox": "http", "command": "true", "backend": "vm"},
			{"sandbox": "http", "command": []string{"ls"}},
		} {
			if msg := s.Fail(t, "exec", args); !strings.Contains(msg, "validating") {
				t.Errorf("exec(%v): %s; want a schema error", args, msg)
			}
		}
		s.Do(t, "sandbox_get", map[string]any{"sandbox": "http"}, nil)
	})
	t.Run("tokens", func(t *testing.T) {
		if _, err := mcptest.DialHTTP(t, endpoint, "rung_wrong"); err == nil {
			t.Error("/mcp with an unknown token: no error")
		}
		cmd := exec.Command(bin, "mcp")
		cmd.Env = append(os.Environ(), "RUNG_ADDR="+addr, "RUNG_TOKEN=rung_wrong")
		if msg := mcptest.ConnectCommand(t, cmd).Fail(t, "sandbox_list", map[string]any{}); !strings.HasPrefix(msg, "unauthenticated: ") {
			t.Errorf("rung mcp with an unknown token: %s", msg)
		}
		cmd = exec.Command(bin, "mcp")
		cmd.Env = append(os.Environ(), "RUNG_ADDR="+freeAddr(t), "RUNG_TOKEN="+d.Token)
		if msg := mcptest.ConnectCommand(t, cmd).Fail(t, "sandbox_list", map[string]any{}); !strings.HasPrefix(msg, "unavailable: cannot reach the rung daemon") {
			t.Errorf("rung mcp without a daemon: %s", msg)
		}
	})
}

// agentSession is what an agent does with a sandbox, through s: create
// it, write a test and the code it checks, run the test in the
// container, fix the code with an edit, find it with a search, run the
// test again, serve it and reach it through its preview URL, run
// background processes, snapshot and fork.
func agentSession(t *testing.T, s *mcptest.Session, name, token string) {
	var sb struct {
		ID string `json:"id"`
	}
	s.Do(t, "sandbox_create", map[string]any{"name": name}, &sb)
	s.Do(t, "file_write", map[string]any{"sandbox": name, "path": "test.sh", "mode": "0755",
		"content": "#!/bin/sh\nif [ \"$(cat answer)\" = 42 ]; then echo PASS; else echo FAIL; exit 1; fi\n"}, nil)
	s.Do(t, "file_write", map[string]any{"sandbox": name, "path": "answer", "content": "41\n"}, nil)

	type execOut struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Backend  string `json:"backend"`
		Reason   string `json:"reason"`
	}
	var ex execOut
	s.Do(t, "exec", map[string]any{"sandbox": name, "command": "./test.sh", "backend": "container"}, &ex)
	if ex.ExitCode != 1 || ex.Stdout != "FAIL\n" || ex.Backend != "container" || ex.Reason == "" {
		t.Errorf("failing test = %+v", ex)
	}
	s.Do(t, "file_edit", map[string]any{"sandbox": name, "path": "answer", "old_string": "41", "new_string": "42"}, nil)
	var found struct {
		Matches []struct {
			Path string `json:"path"`
			Line int    `json:"line"`
		} `json:"matches"`
	}
	s.Do(t, "file_search", map[string]any{"sandbox": name, "pattern": "^42$"}, &found)
	if len(found.Matches) != 1 || found.Matches[0].Path != "/workspace/answer" || found.Matches[0].Line != 1 {
		t.Errorf("file_search = %+v", found)
	}
	s.Do(t, "exec", map[string]any{"sandbox": name, "command": "./test.sh", "backend": "container"}, &ex)
	if ex.ExitCode != 0 || ex.Stdout != "PASS\n" || ex.Backend != "container" {
		t.Errorf("passing test = %+v", ex)
	}

	// A server, its readiness and its preview URL.
	var srv struct {
		ID string `json:"id"`
	}
	s.Do(t, "process_start", map[string]any{"sandbox": name, "command": "exec httpd -f -p 8080 -h /workspace"}, &srv)
	s.Do(t, "wait_ready", map[string]any{"sandbox": name, "port": 8080, "timeout_ms": 60000}, nil)
	var pv struct {
		URL string `json:"url"`
	}
	s.Do(t, "preview_url", map[string]any{"sandbox": name, "port": 8080}, &pv)
	req, _ := http.NewRequestWithContext(t.Context(), "GET", pv.URL+"answer", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "42\n" {
		t.Errorf("GET %sanswer = %d %q", pv.URL, resp.StatusCode, b)
	}

	// Background processes: output and exit, and a signal.
	type outputOut struct {
		Stdout  string `json:"stdout"`
		Stderr  string `json:"stderr"`
		Running bool   `json:"running"`
		Exit    *struct {
			Code   int    `json:"code"`
			Signal string `json:"signal"`
			Reason string `json:"reason"`
		} `json:"exit"`
	}
	var job struct {
		ID string `json:"id"`
	}
	s.Do(t, "process_start", map[string]any{"sandbox": name, "command": "echo hello; echo oops >&2; exit 3"}, &job)
	var out outputOut
	s.Do(t, "process_output", map[string]any{"sandbox": name, "process": job.ID, "wait_ms": 60000}, &out)
	if out.Stdout != "hello\n" || out.Stderr != "oops\n" || out.Running || out.Exit == nil || out.Exit.Code != 3 {
		t.Errorf("process_output = %+v", out)
	}
	s.Do(t, "process_signal", map[string]any{"sandbox": name, "process": srv.ID}, nil)
	s.Do(t, "process_output", map[string]any{"sandbox": name, "process": srv.ID, "wait_ms": 60000}, &out)
	if out.Exit == nil || out.Exit.Reason != "signal" || out.Exit.Signal != "SIGTERM" {
		t.Errorf("signaled server's output = %+v", out)
	}
	var procs struct {
		Processes []struct {
			ID      string `json:"id"`
			Running bool   `json:"running"`
		} `json:"processes"`
	}
	s.Do(t, "process_list", map[string]any{"sandbox": name}, &procs)
	if len(procs.Processes) != 2 || procs.Processes[0].Running || procs.Processes[1].Running {
		t.Errorf("process_list = %+v", procs)
	}

	// Snapshot, fork, and the fork runs the test too.
	s.Do(t, "snapshot_create", map[string]any{"sandbox": name, "name": name + "-fixed"}, nil)
	var forks struct {
		Forks []struct {
			Sandbox *struct {
				ID string `json:"id"`
			} `json:"sandbox"`
			Error string `json:"error"`
		} `json:"forks"`
	}
	s.Do(t, "fork", map[string]any{"snapshot": name + "-fixed"}, &forks)
	if len(forks.Forks) != 1 || forks.Forks[0].Sandbox == nil {
		t.Fatalf("fork = %+v", forks)
	}
	s.Do(t, "exec", map[string]any{"sandbox": forks.Forks[0].Sandbox.ID, "command": "./test.sh", "backend": "container"}, &ex)
	if ex.ExitCode != 0 || ex.Stdout != "PASS\n" {
		t.Errorf("test in the fork = %+v", ex)
	}
	var j struct {
		Entries []struct {
			Data struct {
				Backend string `json:"backend"`
			} `json:"data"`
		} `json:"entries"`
	}
	s.Do(t, "journal", map[string]any{"sandbox": name, "type": "exec.ended"}, &j)
	containerExecs := 0
	for _, e := range j.Entries {
		if e.Data.Backend == "container" {
			containerExecs++
		}
	}
	if containerExecs != 2 {
		t.Errorf("journal: %d container execs ended, want 2: %+v", containerExecs, j.Entries)
	}
}

// A graceful stop ends MCP sessions' open streams instead of waiting for
// their clients to hang up.
func TestMCPShutdown(t *testing.T) {
	d, addr := startDaemonWith(t, DaemonConfig{Data: t.TempDir()})
	s := mcptest.ConnectHTTP(t, "http://"+addr+"/mcp", d.Token)
	s.Do(t, "sandbox_list", map[string]any{}, nil)
	// Generous: it only catches a Shutdown that waits for the session.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := d.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with an MCP session open: %v", err)
	}
}
