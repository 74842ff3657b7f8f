package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"rung.dev/rung/internal/testenv"
)

// e2bWire speaks to a daemon's E2B surfaces as the E2B SDK does: REST with
// X-API-KEY under /e2b/api, Connect JSON (unary and server-streaming
// envelopes) and /files under /e2b/envd with X-Access-Token and
// E2b-Sandbox-Id.
type e2bWire struct {
	t    *testing.T
	base string // http://addr
	key  string
}

func (e e2bWire) api(method, path string, body any) (int, []byte) {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(e.t.Context(), method, e.base+"/e2b/api"+path, r)
	req.Header.Set("X-API-KEY", e.key)
	req.Header.Set("Content-Type", "application/json")
	return e.do(req)
}

func (e e2bWire) do(req *http.Request) (int, []byte) {
	e.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (e e2bWire) envdReq(method, path, sandbox string, body io.Reader) *http.Request {
	req, _ := http.NewRequestWithContext(e.t.Context(), method, e.base+"/e2b/envd"+path, body)
	req.Header.Set("X-Access-Token", e.key)
	req.Header.Set("E2b-Sandbox-Id", sandbox)
	req.Header.Set("E2b-Sandbox-Port", "49983")
	return req
}

// unary calls a Connect unary method with a JSON message.
func (e e2bWire) unary(sandbox, method string, msg string) (int, map[string]any) {
	e.t.Helper()
	req := e.envdReq("POST", "/"+method, sandbox, strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Protocol-Version", "1")
	status, b := e.do(req)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatalf("%s: answer %q is not JSON: %v", method, b, err)
	}
	return status, out
}

// stream calls a Connect server-streaming method with raw (one envelope,
// or anything for the malformed case) and returns the messages and the
// end-of-stream message.
func (e e2bWire) stream(sandbox, method string, raw []byte) (int, []map[string]any, map[string]any) {
	e.t.Helper()
	req := e.envdReq("POST", "/"+method, sandbox, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("Connect-Protocol-Version", "1")
	req.Header.Set("Connect-Timeout-Ms", "60000")
	status, b := e.do(req)
	var msgs []map[string]any
	for len(b) >= 5 {
		flags, n := b[0], binary.BigEndian.Uint32(b[1:5])
		if int(n) > len(b)-5 {
			e.t.Fatalf("%s: truncated envelope", method)
		}
		var m map[string]any
		if err := json.Unmarshal(b[5:5+n], &m); err != nil {
			e.t.Fatalf("%s: envelope %q: %v", method, b[5:5+n], err)
		}
		b = b[5+n:]
		if flags&2 != 0 {
			return status, msgs, m
		}
		msgs = append(msgs, m)
	}
	e.t.Fatalf("%s: stream without an end envelope (status %d, rest %q)", method, status, b)
	return 0, nil, nil
}

func envelope(msg string) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// TestE2BWire drives the E2B surfaces of a base daemon as the SDK does:
// create, a command through process.Start, a file through /files, stat
// and list through filesystem, kill; and the bad cases: a wrong key, another
// tenant's sandbox, a malformed envelope, an unknown RPC.
func TestE2BWire(t *testing.T) {
	ensureBase(t)
	c, _, addr := startContainerDaemonWith(t, DaemonConfig{DefaultImage: "base", ImageDir: testenv.ImageCache})
	for _, ten := range []string{"acme", "other"} {
		if _, err := c.CreateTenant(t.Context(), ten); err != nil {
			t.Fatal(err)
		}
	}
	key, err := c.CreateE2BKey(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key.Token, "e2b_") {
		t.Fatalf("E2B key %q: want e2b_ + hex", key.Token)
	}
	otherKey, err := c.CreateE2BKey(t.Context(), "other")
	if err != nil {
		t.Fatal(err)
	}
	e := e2bWire{t: t, base: "http://" + addr, key: key.Token}

	status, b := e.api("POST", "/v2/sandboxes", map[string]any{"templateID": "base", "metadata": map[string]string{"sandboxTestId": "t1"}, "timeout": 300})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, b)
	}
	var sbx struct{ SandboxID, EnvdVersion, EnvdAccessToken string }
	json.Unmarshal(b, &sbx)
	if sbx.SandboxID == "" || sbx.EnvdVersion < "0.6.4" || sbx.EnvdAccessToken == "" {
		t.Fatalf("create answered %s", b)
	}
	id := sbx.SandboxID

	t.Run("start", func(t *testing.T) {
		e := e
		e.t = t
		status, msgs, end := e.stream(id, "process.Process/Start", envelope(`{"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi; echo err >&2; pwd; id -un; exit 3"],"envs":{}},"stdin":false}`))
		if status != http.StatusOK || len(end) != 0 {
			t.Fatalf("Start: status %d, end %v", status, end)
		}
		var stdout, stderr string
		var exit map[string]any
		for i, m := range msgs {
			ev := m["event"].(map[string]any)
			switch {
			case i == 0:
				if ev["start"] == nil {
					t.Fatalf("first event %v, want start", ev)
				}
			case ev["data"] != nil:
				d := ev["data"].(map[string]any)
				if s, ok := d["stdout"].(string); ok {
					b, _ := base64.StdEncoding.DecodeString(s)
					stdout += string(b)
				}
				if s, ok := d["stderr"].(string); ok {
					b, _ := base64.StdEncoding.DecodeString(s)
					stderr += string(b)
				}
			case ev["end"] != nil:
				exit = ev["end"].(map[string]any)
			}
		}
		if stdout != "hi\n/home/user\nuser\n" || stderr != "err\n" {
			t.Errorf("stdout %q, stderr %q; want \"hi\\n/home/user\\nuser\\n\", \"err\\n\"", stdout, stderr)
		}
		if exit == nil || exit["exitCode"] != float64(3) || exit["exited"] != true {
			t.Errorf("end event %v, want exitCode 3", exit)
		}
	})

	t.Run("files", func(t *testing.T) {
		e := e
		e.t = t
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		fw, _ := mw.CreateFormFile("file", "/home/user/dir/a.txt")
		fw.Write([]byte("hello\n"))
		mw.Close()
		req := e.envdReq("POST", "/files?path=/home/user/dir/a.txt", id, &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		if status, b := e.do(req); status != http.StatusOK || !strings.Contains(string(b), `"path":"/home/user/dir/a.txt"`) {
			t.Fatalf("POST /files: %d %s", status, b)
		}
		if status, b := e.do(e.envdReq("GET", "/files?path=dir/a.txt", id, nil)); status != http.StatusOK || string(b) != "hello\n" {
			t.Fatalf("GET /files: %d %q", status, b)
		}
		if status, _ := e.do(e.envdReq("GET", "/files?path=nope.txt", id, nil)); status != http.StatusNotFound {
			t.Errorf("GET /files of a missing file: %d, want 404", status)
		}
		// The command sees the file at the same path.
		_, msgs, _ := e.stream(id, "process.Process/Start", envelope(`{"process":{"cmd":"/bin/bash","args":["-l","-c","cat /home/user/dir/a.txt"]}}`))
		if got := streamStdout(t, msgs); got != "hello\n" {
			t.Errorf("cat /home/user/dir/a.txt = %q, want \"hello\\n\"", got)
		}
		status, st := e.unary(id, "filesystem.Filesystem/Stat", `{"path":"/home/user/dir/a.txt"}`)
		ent, _ := st["entry"].(map[string]any)
		if status != http.StatusOK || ent["type"] != "FILE_TYPE_FILE" || ent["size"] != "6" || ent["mode"] != float64(0o644) || ent["owner"] != "user" {
			t.Errorf("Stat: %d %v", status, st)
		}
		status, ls := e.unary(id, "filesystem.Filesystem/ListDir", `{"path":"/home/user/dir","depth":1}`)
		ents, _ := ls["entries"].([]any)
		if status != http.StatusOK || len(ents) != 1 || ents[0].(map[string]any)["name"] != "a.txt" {
			t.Errorf("ListDir: %d %v", status, ls)
		}
		if status, out := e.unary(id, "filesystem.Filesystem/Stat", `{"path":"/home/user/nope"}`); status != http.StatusNotFound || out["code"] != "not_found" {
			t.Errorf("Stat of a missing file: %d %v, want 404 not_found", status, out)
		}
		if status, out := e.unary(id, "filesystem.Filesystem/MakeDir", `{"path":"/home/user/made"}`); status != http.StatusOK {
			t.Errorf("MakeDir: %d %v", status, out)
		}
		if status, out := e.unary(id, "filesystem.Filesystem/MakeDir", `{"path":"/home/user/made"}`); out["code"] != "already_exists" {
			t.Errorf("MakeDir again: %d %v, want already_exists", status, out)
		}
	})

	t.Run("bad", func(t *testing.T) {
		e := e
		e.t = t
		wrong := e2bWire{t: t, base: e.base, key: "e2b_" + strings.Repeat("0", 40)}
		status, b := wrong.api("GET", "/sandboxes/"+id, nil)
		var body struct {
			Code    int
			Message string
		}
		json.Unmarshal(b, &body)
		if status != http.StatusUnauthorized || body.Code != 401 {
			t.Errorf("wrong key: %d %s, want 401 with code 401", status, b)
		}
		other := e2bWire{t: t, base: e.base, key: otherKey.Token}
		status, b = other.api("GET", "/sandboxes/"+id, nil)
		json.Unmarshal(b, &body)
		if status != http.StatusNotFound || body.Code != 404 {
			t.Errorf("another tenant's sandbox: %d %s, want 404 with code 404", status, b)
		}
		if status, out := other.unary(id, "filesystem.Filesystem/Stat", `{"path":"/home/user/dir/a.txt"}`); status != http.StatusNotFound || out["code"] != "not_found" {
			t.Errorf("envd on another tenant's sandbox: %d %v, want not_found", status, out)
		}
		// A length prefix that promises more than the body holds: connect-go
		// ends the stream at once with its protocol error (code internal).
		_, msgs, end := e.stream(id, "process.Process/Start", []byte{0, 0, 0, 1, 0, '{'})
		if errv, _ := end["error"].(map[string]any); len(msgs) != 0 || errv == nil || errv["code"] != "internal" {
			t.Errorf("malformed envelope: messages %v, end %v; want none and an error", msgs, end)
		}
		// Valid framing, a message that is not JSON.
		_, msgs, end = e.stream(id, "process.Process/Start", envelope(`{"process":`))
		if errv, _ := end["error"].(map[string]any); len(msgs) != 0 || errv == nil || errv["code"] != "invalid_argument" {
			t.Errorf("malformed message: messages %v, end %v; want none and invalid_argument", msgs, end)
		}
		if _, out := e.unary(id, "process.Process/Update", `{"process":{"pid":1},"pty":{"size":{"cols":80,"rows":24}}}`); out["code"] != "not_found" {
			t.Errorf("Update of an unknown process: %v, want not_found", out)
		}
		// A PTY of a size outside 1..1000 is refused before anything runs.
		for _, size := range []string{`{"cols":0,"rows":24}`, `{"cols":80,"rows":1001}`} {
			_, msgs, end := e.stream(id, "process.Process/Start", envelope(`{"process":{"cmd":"/bin/bash","args":["-i","-l"]},"pty":{"size":`+size+`}}`))
			if errv, _ := end["error"].(map[string]any); len(msgs) != 0 || errv == nil || errv["code"] != "invalid_argument" {
				t.Errorf("pty size %s: messages %v, end %v; want none and invalid_argument", size, msgs, end)
			}
		}
		for _, m := range []string{"process.Process/Nope", "nope.Service/Call"} {
			if _, out := e.unary(id, m, `{}`); out["code"] != "unimplemented" {
				t.Errorf("%s: %v, want unimplemented", m, out)
			}
		}
	})

	status, b = e.api("GET", "/v2/sandboxes?metadata="+"sandboxTestId%3Dt1", nil)
	if status != http.StatusOK || !strings.Contains(string(b), id) || !strings.Contains(string(b), `"sandboxTestId":"t1"`) {
		t.Errorf("list by metadata: %d %s", status, b)
	}
	if status, b := e.api("DELETE", "/sandboxes/"+id, nil); status != http.StatusNoContent {
		t.Fatalf("kill: %d %s", status, b)
	}
	status, b = e.api("DELETE", "/sandboxes/"+id, nil)
	if !strings.Contains(string(b), `"code":404`) {
		t.Errorf("kill again: %d %s, want code 404", status, b)
	}
}

func streamStdout(t *testing.T, msgs []map[string]any) string {
	t.Helper()
	var out string
	for _, m := range msgs {
		ev, _ := m["event"].(map[string]any)
		d, _ := ev["data"].(map[string]any)
		if s, ok := d["stdout"].(string); ok {
			b, _ := base64.StdEncoding.DecodeString(s)
			out += string(b)
		}
	}
	return out
}
