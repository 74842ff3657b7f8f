package mcp_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/api"
	"rung.dev/rung/controller"
	"rung.dev/rung/controller/controllertest"
	"rung.dev/rung/mcp"
	"rung.dev/rung/mcp/mcptest"
	"rung.dev/rung/shell/tools"
)

// env is a real API (controller, SQLite, btrfs test pool, the isolate
// tier alone) serving /mcp on a loopback port, with tokens of tenants
// "acme" and "beta".
type env struct {
	endpoint   string
	acme, beta string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := controllertest.New(t, controller.Config{Tools: tools.All(), Key: bytes.Repeat([]byte{7}, 32)})
	var apiSrv *api.Server
	h := mcp.NewHandler(mcp.HandlerConfig{
		API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { apiSrv.ServeHTTP(w, r) }),
		Authenticate: func(ctx context.Context, token string) (rung.TenantID, error) {
			tenant, _, err := c.Authenticate(ctx, token)
			return tenant, err
		},
	})
	apiSrv = api.New(api.Config{Controller: c, MCP: h})
	srv := httptest.NewServer(apiSrv)
	// Sessions end first: the server's Close waits for their streams.
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	if _, _, err := c.Bootstrap(t.Context(), filepath.Join(t.TempDir(), "token")); err != nil {
		t.Fatal(err)
	}
	e := &env{endpoint: srv.URL + "/mcp"}
	for _, tn := range []rung.TenantID{"acme", "beta"} {
		if _, err := c.CreateTenant(t.Context(), tn); err != nil {
			t.Fatal(err)
		}
		tok, err := c.CreateToken(t.Context(), controller.TokenRequest{Tenant: tn})
		if err != nil {
			t.Fatal(err)
		}
		if tn == "acme" {
			e.acme = tok.Bearer
		} else {
			e.beta = tok.Bearer
		}
	}
	return e
}

type sandbox struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	State string `json:"state"`
}

// The tools an agent sees: every one named, described, with an object
// input schema that refuses unknown arguments.
func TestToolsListed(t *testing.T) {
	e := newEnv(t)
	s := mcptest.ConnectHTTP(t, e.endpoint, e.acme)
	want := []string{"exec", "file_delete", "file_edit", "file_list", "file_move", "file_read", "file_search", "file_write",
		"fork", "journal", "preview_url", "process_list", "process_output", "process_signal", "process_start",
		"sandbox_create", "sandbox_delete", "sandbox_get", "sandbox_list", "snapshot_create", "snapshot_list",
		"snapshot_rollback", "wait_ready"}
	var got []string
	for _, tool := range s.Tools(t) {
		got = append(got, tool.Name)
		if len(tool.Description) < 40 {
			t.Errorf("%s: description %q is too short to act on", tool.Name, tool.Description)
		}
		if tool.InputSchema["type"] != "object" || tool.InputSchema["additionalProperties"] == nil {
			t.Errorf("%s: input schema %v: want an object without other properties", tool.Name, tool.InputSchema)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("tools = %v\nwant %v", got, want)
	}
	if got := s.Templates(t); !slices.Contains(got, "rung://sandboxes/{sandbox}/journal") || !slices.Contains(got, "rung://sandboxes/{sandbox}/files/{+path}") {
		t.Errorf("resource templates = %v", got)
	}
}

// An agent's session on the isolate tier: create, write, edit, read,
// search, run, snapshot, roll back, fork, read the journal.
func TestAgentSession(t *testing.T) {
	e := newEnv(t)
	s := mcptest.ConnectHTTP(t, e.endpoint, e.acme)
	var sb sandbox
	s.Do(t, "sandbox_create", map[string]any{"name": "proj", "labels": map[string]string{"team": "a"}}, &sb)
	if !strings.HasPrefix(sb.ID, "sbx_") || sb.Name != "proj" {
		t.Fatalf("sandbox_create = %+v", sb)
	}
	s.Do(t, "file_write", map[string]any{"sandbox": "proj", "path": "src/calc.py", "content": "def add(a, b):\n    return a - b\n\ndef sub(a, b):\n    return a - b\n"}, nil)

	// Edit: exact, unique, or refused with a reason and no change.
	if msg := s.Fail(t, "file_edit", map[string]any{"sandbox": "proj", "path": "src/calc.py", "old_string": "return a - b", "new_string": "return a + b"}); !strings.HasPrefix(msg, "invalid_argument: ") || !strings.Contains(msg, "occurs 2 times") {
		t.Errorf("ambiguous edit: %s", msg)
	}
	var ed struct {
		Replacements, Line int
	}
	s.Do(t, "file_edit", map[string]any{"sandbox": "proj", "path": "src/calc.py", "old_string": "def add(a, b):\n    return a - b", "new_string": "def add(a, b):\n    return a + b"}, &ed)
	if ed.Replacements != 1 || ed.Line != 1 {
		t.Errorf("file_edit = %+v", ed)
	}
	if msg := s.Fail(t, "file_edit", map[string]any{"sandbox": "proj", "path": "src/calc.py", "old_string": "return a * b", "new_string": "x"}); !strings.Contains(msg, "not found") {
		t.Errorf("edit of missing text: %s", msg)
	}

	// Read a line range.
	var rd struct {
		Content    string `json:"content"`
		StartLine  int    `json:"start_line"`
		EndLine    int    `json:"end_line"`
		More       bool   `json:"more"`
		TotalLines int    `json:"total_lines"`
	}
	s.Do(t, "file_read", map[string]any{"sandbox": "proj", "path": "/workspace/src/calc.py", "start_line": 2, "max_lines": 1}, &rd)
	if rd.Content != "    return a + b\n" || rd.StartLine != 2 || rd.EndLine != 2 || !rd.More {
		t.Errorf("file_read lines 2-2 = %+v", rd)
	}
	s.Do(t, "file_read", map[string]any{"sandbox": "proj", "path": "src/calc.py", "byte_offset": 4, "byte_count": 3}, &rd)
	if rd.Content != "add" || !rd.More {
		t.Errorf("file_read bytes 4-6 = %+v", rd)
	}

	// Search: grep through exec, in-process.
	var found struct {
		Matches []struct {
			Path string `json:"path"`
			Line int    `json:"line"`
			Text string `json:"text"`
		} `json:"matches"`
		Count   int    `json:"count"`
		Backend string `json:"backend"`
	}
	s.Do(t, "file_search", map[string]any{"sandbox": "proj", "pattern": `return a [+-] b`, "include": "*.py"}, &found)
	if found.Count != 2 || found.Backend != "isolate" || found.Matches[0].Path != "/workspace/src/calc.py" || found.Matches[0].Line != 2 || found.Matches[0].Text != "    return a + b" {
		t.Errorf("file_search = %+v", found)
	}
	s.Do(t, "file_search", map[string]any{"sandbox": "proj", "pattern": "nothing like this"}, &found)
	if found.Count != 0 || found.Matches == nil {
		t.Errorf("file_search without matches = %+v", found)
	}
	if msg := s.Fail(t, "file_search", map[string]any{"sandbox": "proj", "pattern": "x", "path": "/workspace/nope"}); !strings.HasPrefix(msg, "not_found: ") {
		t.Errorf("search of a missing path: %s", msg)
	}

	// Exec: backend and reason in the result; long output cut with a note.
	var ex struct {
		ExitCode  int    `json:"exit_code"`
		Stdout    string `json:"stdout"`
		Backend   string `json:"backend"`
		Reason    string `json:"reason"`
		Truncated bool   `json:"truncated"`
		Note      string `json:"note"`
	}
	s.Do(t, "exec", map[string]any{"sandbox": "proj", "command": "grep -c return src/calc.py; exit 3"}, &ex)
	if ex.ExitCode != 3 || ex.Stdout != "2\n" || ex.Backend != "isolate" || ex.Reason == "" {
		t.Errorf("exec = %+v", ex)
	}
	s.Do(t, "exec", map[string]any{"sandbox": "proj", "command": "seq 1 100000", "max_output_bytes": 1000}, &ex)
	if !ex.Truncated || len(ex.Stdout) > 1100 || !strings.HasPrefix(ex.Stdout, "1\n2\n") || !strings.HasSuffix(ex.Stdout, "99999\n100000\n") || !strings.Contains(ex.Note, "max_output_bytes") {
		t.Errorf("long exec: truncated %v, note %q, %d bytes", ex.Truncated, ex.Note, len(ex.Stdout))
	}
	// No container tier here: a clear error, not a broken session.
	if msg := s.Fail(t, "exec", map[string]any{"sandbox": "proj", "command": "true", "backend": "container"}); !strings.HasPrefix(msg, "unavailable: ") {
		t.Errorf("container exec without a container tier: %s", msg)
	}

	// List, move, delete.
	var ls struct {
		Files []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	s.Do(t, "file_move", map[string]any{"sandbox": "proj", "from": "src/calc.py", "to": "src/math.py"}, nil)
	s.Do(t, "file_list", map[string]any{"sandbox": "proj", "recursive": true}, &ls)
	if len(ls.Files) != 2 || ls.Files[1].Path != "/workspace/src/math.py" {
		t.Errorf("file_list after move = %+v", ls)
	}

	// Snapshot, change, roll back, fork.
	var snap struct {
		ID string `json:"id"`
	}
	s.Do(t, "snapshot_create", map[string]any{"sandbox": "proj", "name": "good"}, &snap)
	s.Do(t, "file_delete", map[string]any{"sandbox": "proj", "path": "src", "recursive": true}, nil)
	if msg := s.Fail(t, "file_read", map[string]any{"sandbox": "proj", "path": "src/math.py"}); !strings.HasPrefix(msg, "not_found: ") {
		t.Errorf("read of a deleted file: %s", msg)
	}
	s.Do(t, "snapshot_rollback", map[string]any{"sandbox": "proj", "snapshot": "good"}, nil)
	s.Do(t, "file_read", map[string]any{"sandbox": "proj", "path": "src/math.py"}, &rd)
	if !strings.Contains(rd.Content, "return a + b") || rd.TotalLines != 5 {
		t.Errorf("after rollback: %+v", rd)
	}
	var forks struct {
		Forks []struct {
			Sandbox *sandbox `json:"sandbox"`
			Error   string   `json:"error"`
		} `json:"forks"`
	}
	s.Do(t, "fork", map[string]any{"sandbox": "proj", "names": []string{"try-a", "try-b"}}, &forks)
	if len(forks.Forks) != 2 || forks.Forks[0].Sandbox == nil || forks.Forks[1].Sandbox.Name != "try-b" {
		t.Fatalf("fork = %+v", forks)
	}
	s.Do(t, "file_read", map[string]any{"sandbox": "try-b", "path": "src/math.py"}, &rd)
	if !strings.Contains(rd.Content, "return a + b") {
		t.Errorf("fork's file = %q", rd.Content)
	}
	var snaps struct {
		Snapshots []struct {
			ID string `json:"id"`
		} `json:"snapshots"`
	}
	s.Do(t, "snapshot_list", map[string]any{"sandbox": "proj"}, &snaps)
	if len(snaps.Snapshots) != 1 || snaps.Snapshots[0].ID != snap.ID {
		t.Errorf("snapshot_list = %+v", snaps)
	}

	// The journal, filtered, and as a resource.
	var j struct {
		Entries []struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		} `json:"entries"`
	}
	s.Do(t, "journal", map[string]any{"sandbox": "proj", "type": "file."}, &j)
	var types []string
	for _, en := range j.Entries {
		types = append(types, en.Type)
	}
	if got := strings.Join(types, " "); got != "file.written file.written file.moved file.removed" {
		t.Errorf("journal file entries = %s", got)
	}
	r, err := s.Read(t, "rung://sandboxes/proj/journal")
	if err != nil || r.MIMEType != "application/json" || !strings.Contains(r.Text, `"type":"sandbox.restored"`) {
		t.Errorf("journal resource = %+v, %v", r, err)
	}
	r, err = s.Read(t, "rung://sandboxes/proj/files/workspace/src/math.py")
	if err != nil || !strings.HasPrefix(r.Text, "def add(a, b):\n    return a + b\n") || !strings.HasPrefix(r.MIMEType, "text/") {
		t.Errorf("file resource = %+v, %v", r, err)
	}
	r, err = s.Read(t, "rung://sandboxes/proj/files/workspace/src")
	if err != nil || !strings.Contains(r.Text, `"path":"/workspace/src/math.py"`) {
		t.Errorf("directory resource = %+v, %v", r, err)
	}
	if _, err := s.Read(t, "rung://sandboxes/proj/files/workspace/none"); err == nil {
		t.Error("missing file resource: no error")
	}

	var list struct {
		Sandboxes []sandbox `json:"sandboxes"`
	}
	s.Do(t, "sandbox_list", map[string]any{"labels": map[string]string{"team": "a"}}, &list)
	if len(list.Sandboxes) != 3 {
		t.Errorf("sandbox_list team=a = %+v", list)
	}
	s.Do(t, "sandbox_delete", map[string]any{"sandbox": "try-a"}, nil)
	if msg := s.Fail(t, "sandbox_get", map[string]any{"sandbox": "try-a"}); !strings.HasPrefix(msg, "not_found: ") {
		t.Errorf("get after delete: %s", msg)
	}
}

// A file an agent writes keeps its mode when rewritten, and binary
// content travels as base64.
func TestWriteModesAndBinary(t *testing.T) {
	e := newEnv(t)
	s := mcptest.ConnectHTTP(t, e.endpoint, e.acme)
	s.Do(t, "sandbox_create", map[string]any{"name": "w"}, nil)
	var fi struct {
		Mode string `json:"mode"`
	}
	s.Do(t, "file_write", map[string]any{"sandbox": "w", "path": "run.sh", "content": "#!/bin/sh\necho 1\n", "mode": "0755"}, &fi)
	s.Do(t, "file_write", map[string]any{"sandbox": "w", "path": "run.sh", "content": "#!/bin/sh\necho 2\n"}, &fi)
	if fi.Mode != "0755" {
		t.Errorf("rewritten script's mode = %s, want 0755 kept", fi.Mode)
	}
	s.Do(t, "file_edit", map[string]any{"sandbox": "w", "path": "run.sh", "old_string": "echo 2", "new_string": "echo 3"}, nil)
	s.Do(t, "file_write", map[string]any{"sandbox": "w", "path": "bin", "content": "/wD+AA==", "encoding": "base64"}, nil)
	var rd struct {
		Content, Encoding string
	}
	s.Do(t, "file_read", map[string]any{"sandbox": "w", "path": "bin"}, &rd)
	if rd.Encoding != "base64" || rd.Content != "/wD+AA==" {
		t.Errorf("binary read = %+v", rd)
	}
	var ex struct {
		Stdout string `json:"stdout"`
	}
	s.Do(t, "exec", map[string]any{"sandbox": "w", "command": "stat -c %a run.sh; cat run.sh"}, &ex)
	if ex.Stdout != "755\n#!/bin/sh\necho 3\n" {
		t.Errorf("after edit: %q", ex.Stdout)
	}
}

// Arguments that do not fit a tool's schema are tool errors naming the
// problem; the session goes on.
func TestMalformedArguments(t *testing.T) {
	e := newEnv(t)
	s := mcptest.ConnectHTTP(t, e.endpoint, e.acme)
	s.Do(t, "sandbox_create", map[string]any{"name": "m"}, nil)
	tests := []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"missing required", "exec", map[string]any{"sandbox": "m"}, "command"},
		{"wrong type", "exec", map[string]any{"sandbox": "m", "command": 5}, "command"},
		{"unknown property", "exec", map[string]any{"sandbox": "m", "command": "true", "shell": "zsh"}, "shell"},
		{"not in enum", "exec", map[string]any{"sandbox": "m", "command": "true", "backend": "gpu"}, "backend"},
		{"below minimum", "file_read", map[string]any{"sandbox": "m", "path": "a", "start_line": 0}, "start_line"},
		{"empty string", "file_edit", map[string]any{"sandbox": "m", "path": "a", "old_string": "", "new_string": "b"}, "old_string"},
		{"bad name", "sandbox_create", map[string]any{"name": "Bad Name"}, "name"},
		{"bad network mode", "sandbox_create", map[string]any{"network": map[string]any{"mode": "wide"}}, "mode"},
		{"bad size", "sandbox_create", map[string]any{"size": "huge"}, "size"},
		{"port out of range", "wait_ready", map[string]any{"sandbox": "m", "port": 70000}, "port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := s.Fail(t, tc.tool, tc.args)
			if !strings.Contains(msg, "validating") || !strings.Contains(msg, tc.want) {
				t.Errorf("%s(%v): %s; want a schema error naming %s", tc.tool, tc.args, msg, tc.want)
			}
		})
	}
	// Checks the schema cannot express, made by the tools: the same kind
	// of error, with rung's code.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"file_read", map[string]any{"sandbox": "m", "path": "a", "start_line": 2, "byte_count": 3}},
		{"wait_ready", map[string]any{"sandbox": "m"}},
		{"fork", map[string]any{"count": 1}},
		{"process_start", map[string]any{"sandbox": "m"}},
	} {
		if msg := s.Fail(t, c.tool, c.args); !strings.HasPrefix(msg, "invalid_argument: ") {
			t.Errorf("%s(%v): %s; want invalid_argument", c.tool, c.args, msg)
		}
	}
	// The session still works.
	s.Do(t, "sandbox_get", map[string]any{"sandbox": "m"}, nil)
}

// A tenant's session reaches its own sandboxes only; a session answers
// only the token that opened it; no token, no session.
func TestTenantIsolation(t *testing.T) {
	e := newEnv(t)
	a := mcptest.ConnectHTTP(t, e.endpoint, e.acme)
	var sb sandbox
	a.Do(t, "sandbox_create", map[string]any{"name": "secret"}, &sb)
	a.Do(t, "file_write", map[string]any{"sandbox": "secret", "path": "key", "content": "42"}, nil)

	b := mcptest.ConnectHTTP(t, e.endpoint, e.beta)
	for _, ref := range []string{"secret", sb.ID} {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"sandbox_get", map[string]any{"sandbox": ref}},
			{"file_read", map[string]any{"sandbox": ref, "path": "key"}},
			{"exec", map[string]any{"sandbox": ref, "command": "cat key"}},
			{"file_edit", map[string]any{"sandbox": ref, "path": "key", "old_string": "42", "new_string": "0"}},
			{"snapshot_create", map[string]any{"sandbox": ref}},
			{"fork", map[string]any{"sandbox": ref}},
			{"journal", map[string]any{"sandbox": ref}},
			{"sandbox_delete", map[string]any{"sandbox": ref}},
		} {
			if msg := b.Fail(t, c.tool, c.args); !strings.HasPrefix(msg, "not_found: ") {
				t.Errorf("beta %s(%s): %s; want not_found", c.tool, ref, msg)
			}
		}
		if _, err := b.Read(t, "rung://sandboxes/"+ref+"/files/workspace/key"); err == nil {
			t.Errorf("beta read acme's file resource via %s", ref)
		}
	}
	var list struct {
		Sandboxes []sandbox `json:"sandboxes"`
	}
	b.Do(t, "sandbox_list", map[string]any{}, &list)
	if len(list.Sandboxes) != 0 {
		t.Errorf("beta's sandbox_list = %+v", list)
	}
	// beta may use the same name for a sandbox of its own.
	b.Do(t, "sandbox_create", map[string]any{"name": "secret"}, nil)
	var rd struct {
		Content string `json:"content"`
	}
	a.Do(t, "file_read", map[string]any{"sandbox": "secret", "path": "key"}, &rd)
	if rd.Content != "42" {
		t.Errorf("acme's file after beta's tries = %q", rd.Content)
	}

	// Acme's session id with beta's token: refused.
	req, err := http.NewRequestWithContext(t.Context(), "POST", e.endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.beta)
	req.Header.Set("Mcp-Session-Id", a.ID())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("acme's session with beta's token: HTTP %d, want 403", resp.StatusCode)
	}
	for _, tok := range []string{"", "rung_nope"} {
		if _, err := mcptest.DialHTTP(t, e.endpoint, tok); err == nil {
			t.Errorf("session with token %q: no error", tok)
		}
	}
	resp, err = http.Post(e.endpoint, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /mcp without a token: HTTP %d, want 401", resp.StatusCode)
	}
}

// preview_url gives a token-bound URL on the API's address, or a share.
func TestPreviewURL(t *testing.T) {
	e := newEnv(t)
	s := mcptest.ConnectHTTP(t, e.endpoint, e.acme)
	s.Do(t, "sandbox_create", map[string]any{"name": "web"}, nil)
	var pv struct {
		URL        string `json:"url"`
		NeedsToken bool   `json:"needs_token"`
		ShareID    string `json:"share_id"`
	}
	s.Do(t, "preview_url", map[string]any{"sandbox": "web", "port": 8080}, &pv)
	base := strings.TrimSuffix(e.endpoint, "/mcp")
	if pv.URL != base+"/v1/sandboxes/web/ports/8080/" || !pv.NeedsToken {
		t.Errorf("preview_url = %+v, want %s/v1/sandboxes/web/ports/8080/", pv, base)
	}
	s.Do(t, "preview_url", map[string]any{"sandbox": "web", "port": 8080, "share": true, "ttl_ms": 60000}, &pv)
	if !strings.HasPrefix(pv.URL, base+"/") || !strings.Contains(pv.URL, "rung_share=") || pv.NeedsToken || pv.ShareID == "" {
		t.Errorf("shared preview_url = %+v", pv)
	}
	if msg := s.Fail(t, "preview_url", map[string]any{"sandbox": "nope", "port": 8080}); !strings.HasPrefix(msg, "not_found: ") {
		t.Errorf("preview_url of a missing sandbox: %s", msg)
	}
}
