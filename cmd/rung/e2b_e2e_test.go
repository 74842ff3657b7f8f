package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
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
	user string // the envd requests' user, as the SDK names it; "" for none
}

func (e e2bWire) api(method, path string, body any) (int, []byte) {
	e.t.Helper()
	var r io.Reader
	if raw, ok := body.(string); ok { // sent as it is, for malformed bodies
		r = strings.NewReader(raw)
	} else if body != nil {
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
	if e.user != "" {
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(e.user+":")))
	}
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
	return e.streamFor(sandbox, method, raw, "60000")
}

// streamFor is stream with Connect-Timeout-Ms timeoutMs.
func (e e2bWire) streamFor(sandbox, method string, raw []byte, timeoutMs string) (int, []map[string]any, map[string]any) {
	e.t.Helper()
	req := e.envdReq("POST", "/"+method, sandbox, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("Connect-Protocol-Version", "1")
	req.Header.Set("Connect-Timeout-Ms", timeoutMs)
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

	t.Run("home", func(t *testing.T) {
		// The home is made the workspace at create without a container
		// (no start for it); a command in the container then sees the
		// link and the image's dotfiles, owned as the image has them.
		tok, err := c.CreateToken(t.Context(), "acme", false)
		if err != nil {
			t.Fatal(err)
		}
		acme := client.New(addr, client.WithToken(tok.Token))
		if sb, err := acme.Get(t.Context(), id); err != nil || sb.State != rung.StateReady {
			t.Fatalf("after create: state %q, %v; want ready (no container started)", sb.State, err)
		}
		e := e
		e.t = t
		_, msgs, _ := e.stream(id, "process.Process/Start", envelope(`{"process":{"cmd":"/bin/bash","args":["-l","-c","readlink /home/user; stat -c '%a %U:%G' /workspace /home /home/user/.bashrc; ls -A /home/user; cmp /etc/skel/.bashrc /home/user/.bashrc && ls -ld /home/user/. >/dev/null && echo same"]}}`))
		want := "/workspace\n755 user:user\n755 root:root\n644 user:user\n.bash_logout\n.bashrc\n.profile\nsame\n"
		if got := streamStdout(t, msgs); got != want {
			t.Errorf("home in the container:\n%s\nwant\n%s", got, want)
		}
	})

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

		// commands.run's `user`: root's command runs as root, in /root;
		// the sandbox's user named explicitly is the default; an unknown
		// user is refused, naming it.
		root := e
		root.user = "root"
		_, msgs, _ = root.stream(id, "process.Process/Start", envelope(`{"process":{"cmd":"/bin/bash","args":["-l","-c","id -un; pwd"]}}`))
		if got := streamStdout(t, msgs); got != "root\n/root\n" {
			t.Errorf("a command as root: %q, want root in /root", got)
		}
		named := e
		named.user = "user"
		_, msgs, _ = named.stream(id, "process.Process/Start", envelope(`{"process":{"cmd":"/bin/bash","args":["-l","-c","id -un; pwd"]}}`))
		if got := streamStdout(t, msgs); got != "user\n/home/user\n" {
			t.Errorf("a command as user: %q", got)
		}
		nobody := e
		nobody.user = "mallory"
		if status, msgs, end := nobody.stream(id, "process.Process/Start", envelope(`{"process":{"cmd":"/bin/bash","args":["-l","-c","true"]}}`)); !strings.Contains(fmt.Sprint(msgs, end), "mallory") {
			t.Errorf("a command as an unknown user: %d %v %v, want an error naming the user", status, msgs, end)
		}
	})

	// Paths outside /workspace and /tmp: envd (root) reaches them, and so
	// does rung, in the container, leaving what it makes to the user.
	t.Run("login shell", func(t *testing.T) {
		// The SDK runs every command as bash -l -c: /etc/profile's PATH
		// (a user's login PATH, without the sbin directories) and
		// ~/.profile's additions hold in both tiers, so a tool installed
		// in ~/.local/bin by one command runs by name in the next.
		e := e
		e.t = t
		status, b := e.api("POST", "/v2/sandboxes", map[string]any{"templateID": "base"})
		if status != http.StatusCreated {
			t.Fatalf("create: %d %s", status, b)
		}
		var lsb struct{ SandboxID string }
		json.Unmarshal(b, &lsb)
		run := func(cmd string) string {
			t.Helper()
			args, _ := json.Marshal([]string{"-l", "-c", cmd})
			_, msgs, _ := e.stream(lsb.SandboxID, "process.Process/Start", envelope(`{"process":{"cmd":"/bin/bash","args":`+string(args)+`}}`))
			return streamStdout(t, msgs)
		}
		if got, want := run(`echo "$PATH"`), "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games\n"; got != want {
			t.Errorf("PATH %q, want the login shell's %q", got, want)
		}
		run(`mkdir -p ~/.local/bin && printf '#!/bin/sh\necho hi from local\n' > ~/.local/bin/hello && chmod +x ~/.local/bin/hello && echo 'export GREETING=hello' >> ~/.profile`)
		if got := run("hello"); got != "hi from local\n" {
			t.Errorf("a tool in ~/.local/bin: %q", got)
		}
		if got, want := run(`echo "$PATH"`), "/home/user/.local/bin:/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games\n"; got != want {
			t.Errorf("PATH %q, want %q", got, want)
		}

		// The same login commands in each tier (rung's exec with login),
		// the isolate tier's run not falling through to the container.
		tok, err := c.CreateToken(t.Context(), "acme", false)
		if err != nil {
			t.Fatal(err)
		}
		acme := client.New(addr, client.WithToken(tok.Token))
		for _, cmd := range []string{
			"shopt -q login_shell && echo login || echo not",
			"echo $?",
			"printenv GREETING",
			"ls -d /workspace; tail -n 1 /workspace/.profile",
		} {
			var got [2]client.ExecResult
			for i, backend := range []rung.Backend{rung.BackendAuto, rung.BackendContainer} {
				res, err := acme.Exec(t.Context(), lsb.SandboxID, client.ExecRequest{Command: cmd, Backend: backend, Login: true})
				if err != nil {
					t.Fatalf("%s (%s): %v", cmd, backend, err)
				}
				got[i] = res
			}
			if got[0].Backend != rung.BackendIsolate {
				t.Errorf("%s: ran in %s (%s), want the isolate tier", cmd, got[0].Backend, got[0].Reason)
			}
			if string(got[0].Stdout) != string(got[1].Stdout) || string(got[0].Stderr) != string(got[1].Stderr) || got[0].ExitCode != got[1].ExitCode {
				t.Errorf("%s:\nisolate   %d %q %q\ncontainer %d %q %q", cmd, got[0].ExitCode, got[0].Stdout, got[0].Stderr, got[1].ExitCode, got[1].Stdout, got[1].Stderr)
			}
		}
		// What the login shell adds that the isolate tier does not run
		// goes to the container: a program in ~/.local/bin, profile.d's
		// gawk functions.
		for _, cmd := range []string{"hello", "gawkpath_append /x; echo $AWKPATH"} {
			res, err := acme.Exec(t.Context(), lsb.SandboxID, client.ExecRequest{Command: cmd, Login: true})
			if err != nil || res.Backend != rung.BackendContainer || res.ExitCode != 0 {
				t.Errorf("%s: %v, %s (%s) exit %d %q", cmd, err, res.Backend, res.Reason, res.ExitCode, res.Stderr)
			}
		}

		// A profile.d script the container adds, changes and removes (a
		// package's, say): login shells stay in the isolate tier, which
		// reads it from the sandbox's upper directory, and see each
		// version as the container does; none is taken for the other.
		for _, step := range []struct{ change, want string }{
			{`echo 'export RUNG_PROFILE_D=added' > /etc/profile.d/zz-rung.sh`, "added\n"},
			{`echo 'export RUNG_PROFILE_D=changed' > /etc/profile.d/zz-rung.sh`, "changed\n"},
			{`rm /etc/profile.d/zz-rung.sh`, ""},
		} {
			if res, err := acme.Exec(t.Context(), lsb.SandboxID, client.ExecRequest{Command: "sudo sh -c \"" + step.change + "\"", Backend: rung.BackendContainer}); err != nil || res.ExitCode != 0 {
				t.Fatalf("%s: %v, exit %d %q", step.change, err, res.ExitCode, res.Stderr)
			}
			var got [2]client.ExecResult
			for i, backend := range []rung.Backend{rung.BackendAuto, rung.BackendContainer} {
				res, err := acme.Exec(t.Context(), lsb.SandboxID, client.ExecRequest{Command: "printenv RUNG_PROFILE_D", Backend: backend, Login: true})
				if err != nil {
					t.Fatalf("after %s (%s): %v", step.change, backend, err)
				}
				got[i] = res
			}
			if got[0].Backend != rung.BackendIsolate {
				t.Errorf("after %s: ran in %s (%s), want the isolate tier", step.change, got[0].Backend, got[0].Reason)
			}
			if string(got[0].Stdout) != step.want || string(got[1].Stdout) != step.want || got[0].ExitCode != got[1].ExitCode {
				t.Errorf("after %s: isolate %d %q, container %d %q; want %q", step.change, got[0].ExitCode, got[0].Stdout, got[1].ExitCode, got[1].Stdout, step.want)
			}
		}
	})

	t.Run("files outside the home", func(t *testing.T) {
		e := e
		e.t = t
		upload := func(url, name, content string) (int, []byte) {
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			fw, _ := mw.CreateFormFile("file", name)
			fw.Write([]byte(content))
			mw.Close()
			req := e.envdReq("POST", url, id, &body)
			req.Header.Set("Content-Type", mw.FormDataContentType())
			return e.do(req)
		}
		if status, b := upload("/files", "/0/deep/multi.txt", "zero\n"); status != http.StatusOK || !strings.Contains(string(b), `"path":"/0/deep/multi.txt"`) {
			t.Fatalf("POST /files to /0/deep/multi.txt: %d %s", status, b)
		}
		if status, b := e.do(e.envdReq("GET", "/files?path=/0/deep/multi.txt", id, nil)); status != http.StatusOK || string(b) != "zero\n" {
			t.Errorf("GET /files of /0/deep/multi.txt: %d %q", status, b)
		}
		status, st := e.unary(id, "filesystem.Filesystem/Stat", `{"path":"/0/deep/multi.txt"}`)
		ent, _ := st["entry"].(map[string]any)
		if status != http.StatusOK || ent["type"] != "FILE_TYPE_FILE" || ent["size"] != "5" || ent["mode"] != float64(0o644) {
			t.Errorf("Stat of /0/deep/multi.txt: %d %v", status, st)
		}
		// What it made is the user's, the directories it made too; the
		// command sees it.
		_, msgs, _ := e.stream(id, "process.Process/Start", envelope(`{"process":{"cmd":"/bin/bash","args":["-l","-c","stat -c '%U %a %n' /0 /0/deep /0/deep/multi.txt"]}}`))
		if got, want := streamStdout(t, msgs), "user 755 /0\nuser 755 /0/deep\nuser 644 /0/deep/multi.txt\n"; got != want {
			t.Errorf("owners in the container: %q, want %q", got, want)
		}
		// Root's relative paths are in /root.
		if status, b := upload("/files?username=root", "hello.txt", "root's\n"); status != http.StatusOK || !strings.Contains(string(b), `"path":"/root/hello.txt"`) {
			t.Errorf("POST /files as root: %d %s", status, b)
		}
		if status, b := e.do(e.envdReq("GET", "/files?path=hello.txt&username=root", id, nil)); status != http.StatusOK || string(b) != "root's\n" {
			t.Errorf("GET /files of root's hello.txt: %d %q", status, b)
		}
		if status, _ := e.do(e.envdReq("GET", "/files?path=/opt/nope.txt", id, nil)); status != http.StatusNotFound {
			t.Errorf("GET /files of a missing file outside: %d, want 404", status)
		}
		if status, out := e.unary(id, "filesystem.Filesystem/Stat", `{"path":"/opt/nope"}`); status != http.StatusNotFound || out["code"] != "not_found" {
			t.Errorf("Stat of a missing path outside: %d %v, want 404 not_found", status, out)
		}
		if status, b := e.do(e.envdReq("GET", "/files?path=/etc", id, nil)); status != http.StatusBadRequest {
			t.Errorf("GET /files of a directory outside: %d %s, want 400", status, b)
		}
		// An upload outside goes to the container as an exec's stdin: at
		// most 16 MiB, refused whole beyond (507, as envd's full disk).
		if status, b := upload("/files", "/opt/big.bin", strings.Repeat("x", 16<<20+1)); status != http.StatusInsufficientStorage || !strings.Contains(string(b), "16777216") {
			t.Errorf("POST /files of 16 MiB + 1 outside: %d %s, want 507 naming the limit", status, b)
		}
		if status, _ := e.do(e.envdReq("GET", "/files?path=/opt/big.bin", id, nil)); status != http.StatusNotFound {
			t.Errorf("GET /files after a refused upload: %d, want 404 (nothing written)", status)
		}
		// A read outside is an exec's output: beyond its limit, refused.
		root := e
		root.user = "root"
		root.stream(id, "process.Process/Start", envelope(`{"process":{"cmd":"/bin/bash","args":["-l","-c","head -c 17M /dev/zero > /opt/huge.bin"]}}`))
		if status, b := e.do(e.envdReq("GET", "/files?path=/opt/huge.bin", id, nil)); status != http.StatusInsufficientStorage || !strings.Contains(string(b), "output limit") {
			t.Errorf("GET /files of 17 MiB outside: %d %.200s, want 507 naming the output limit", status, b)
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

	t.Run("signed and cors", func(t *testing.T) {
		e := e
		e.t = t
		sign := func(path, op, exp string) string {
			raw := path + ":" + op + "::" + sbx.EnvdAccessToken
			if exp != "" {
				raw += ":" + exp
			}
			sum := sha256.Sum256([]byte(raw))
			return "v1_" + base64.RawStdEncoding.EncodeToString(sum[:])
		}
		get := func(q url.Values) (int, string) {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", e.base+"/files?"+q.Encode(), nil)
			status, b := e.do(req)
			return status, string(b)
		}
		p := "/home/user/dir/a.txt"
		if status, b := get(url.Values{"path": {p}, "signature": {sign(p, "read", "")}}); status != http.StatusOK || b != "hello\n" {
			t.Errorf("signed GET /files: %d %q", status, b)
		}
		future, past := strconv.FormatInt(time.Now().Unix()+600, 10), strconv.FormatInt(time.Now().Unix()-1, 10)
		if status, b := get(url.Values{"path": {p}, "signature": {sign(p, "read", future)}, "signature_expiration": {future}}); status != http.StatusOK {
			t.Errorf("signed GET /files, expiring later: %d %q", status, b)
		}
		for _, tc := range []struct {
			name string
			q    url.Values
		}{
			{"no signature", url.Values{"path": {p}}},
			{"expired", url.Values{"path": {p}, "signature": {sign(p, "read", past)}, "signature_expiration": {past}}},
			{"expiration changed", url.Values{"path": {p}, "signature": {sign(p, "read", past)}, "signature_expiration": {future}}},
			{"bad expiration", url.Values{"path": {p}, "signature": {sign(p, "read", "x")}, "signature_expiration": {"x"}}},
			{"another path", url.Values{"path": {"/home/user/dir/b.txt"}, "signature": {sign(p, "read", "")}}},
			{"write signature", url.Values{"path": {p}, "signature": {sign(p, "write", "")}}},
			{"another user", url.Values{"path": {p}, "username": {"root"}, "signature": {sign(p, "read", "")}}},
			{"forged", url.Values{"path": {p}, "signature": {"v1_" + strings.Repeat("A", 43)}}},
		} {
			if status, b := get(tc.q); status != http.StatusUnauthorized {
				t.Errorf("%s: %d %q, want 401", tc.name, status, b)
			}
		}
		// The access token opens its own sandbox's envd only.
		status, b := e.api("POST", "/v2/sandboxes", map[string]any{"templateID": "base", "timeout": 60})
		var two struct{ SandboxID string }
		json.Unmarshal(b, &two)
		if status != http.StatusCreated {
			t.Fatalf("create: %d %s", status, b)
		}
		defer e.api("DELETE", "/sandboxes/"+two.SandboxID, nil)
		withTok := e2bWire{t: t, base: e.base, key: sbx.EnvdAccessToken}
		if status, out := withTok.unary(id, "filesystem.Filesystem/Stat", `{"path":"dir/a.txt"}`); status != http.StatusOK {
			t.Errorf("Stat with the access token: %d %v", status, out)
		}
		if status, out := withTok.unary(two.SandboxID, "filesystem.Filesystem/Stat", `{"path":"/home/user"}`); out["code"] != "unauthenticated" {
			t.Errorf("Stat of another sandbox with this one's access token: %d %v, want unauthenticated", status, out)
		}
		// CORS: a preflight is answered, a request carries the headers.
		req, _ := http.NewRequestWithContext(t.Context(), "OPTIONS", e.base+"/e2b/envd/process.Process/Start", nil)
		req.Header.Set("Origin", "https://app.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type,x-access-token,e2b-sandbox-id,connect-protocol-version,bad header")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
			resp.Header.Get("Access-Control-Allow-Methods") != "POST" ||
			resp.Header.Get("Access-Control-Allow-Headers") != "content-type, x-access-token, e2b-sandbox-id, connect-protocol-version" {
			t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
		}
		req = e.envdReq("GET", "/files?path=dir/a.txt", id, nil)
		req.Header.Set("Origin", "https://app.example")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Grpc-Status") {
			t.Errorf("GET /files from a browser: %d %v", resp.StatusCode, resp.Header)
		}
	})

	t.Run("watch", func(t *testing.T) {
		e := e
		e.t = t
		if status, out := e.unary(id, "filesystem.Filesystem/MakeDir", `{"path":"/home/user/wd"}`); status != http.StatusOK {
			t.Fatalf("MakeDir: %d %v", status, out)
		}
		status, out := e.unary(id, "filesystem.Filesystem/CreateWatcher", `{"path":"/home/user/wd","recursive":true}`)
		wid, _ := out["watcherId"].(string)
		if status != http.StatusOK || wid == "" {
			t.Fatalf("CreateWatcher: %d %v", status, out)
		}
		req := e.envdReq("POST", "/files?path=/home/user/wd/sub/x.txt", id, strings.NewReader("x"))
		req.Header.Set("Content-Type", "application/octet-stream")
		if status, b := e.do(req); status != http.StatusOK {
			t.Fatalf("POST /files: %d %s", status, b)
		}
		// The watcher's goroutine queues the events the write caused;
		// each poll is a round trip, and the test's timeout catches a hang.
		// sub is new: x.txt may be written before sub's watch is in place,
		// and then it is reported created rather than written.
		var seen []any
		for !strings.Contains(fmt.Sprint(seen), "name:sub/x.txt type:EVENT_TYPE_") {
			status, out := e.unary(id, "filesystem.Filesystem/GetWatcherEvents", `{"watcherId":"`+wid+`"}`)
			if status != http.StatusOK {
				t.Fatalf("GetWatcherEvents: %d %v", status, out)
			}
			evs, _ := out["events"].([]any)
			seen = append(seen, evs...)
		}
		if !strings.Contains(fmt.Sprint(seen), "name:sub type:EVENT_TYPE_CREATE") {
			t.Errorf("events %v, want sub's creation", seen)
		}
		// Watches per sandbox are bounded (streams and polling together).
		var ids []string
		for {
			status, out := e.unary(id, "filesystem.Filesystem/CreateWatcher", `{"path":"/tmp"}`)
			if status != http.StatusOK {
				if out["code"] != "resource_exhausted" || len(ids) != 15 {
					t.Errorf("watcher %d: %d %v, want resource_exhausted after 16", len(ids)+2, status, out)
				}
				break
			}
			ids = append(ids, out["watcherId"].(string))
			if len(ids) > 16 {
				t.Fatalf("%d watchers accepted", len(ids)+1)
			}
		}
		for _, w := range append(ids, wid) {
			if status, out := e.unary(id, "filesystem.Filesystem/RemoveWatcher", `{"watcherId":"`+w+`"}`); status != http.StatusOK {
				t.Errorf("RemoveWatcher: %d %v", status, out)
			}
		}
		for _, tc := range []struct{ method, msg, code string }{
			{"GetWatcherEvents", `{"watcherId":"` + wid + `"}`, "not_found"}, // removed
			{"RemoveWatcher", `{"watcherId":"nope"}`, "not_found"},
			{"GetWatcherEvents", `{"watcherId":5}`, "invalid_argument"},
			{"CreateWatcher", `{"path":"/home/user/nope"}`, "not_found"},
			{"CreateWatcher", `{"path":"/home/user/wd/sub/x.txt"}`, "invalid_argument"},
			{"CreateWatcher", `{"path":"/etc"}`, "invalid_argument"},
			{"CreateWatcher", `{"path":"/home/user/../../etc"}`, "invalid_argument"},
		} {
			if status, out := e.unary(id, "filesystem.Filesystem/"+tc.method, tc.msg); out["code"] != tc.code {
				t.Errorf("%s %s: %d %v, want %s", tc.method, tc.msg, status, out, tc.code)
			}
		}
		// A stream ends at its deadline, as envd's: start, then
		// deadline_exceeded (nothing changed meanwhile). On a loaded
		// machine the deadline may pass before the watch is in place:
		// then there is no start, and the same end.
		_, msgs, end := e.streamFor(id, "filesystem.Filesystem/WatchDir", envelope(`{"path":"/home/user/wd"}`), "1000")
		if errv, _ := end["error"].(map[string]any); len(msgs) > 1 || len(msgs) == 1 && msgs[0]["start"] == nil || errv == nil || errv["code"] != "deadline_exceeded" {
			t.Errorf("WatchDir until its deadline: messages %v, end %v; want start and deadline_exceeded", msgs, end)
		}
		_, msgs, end = e.stream(id, "filesystem.Filesystem/WatchDir", envelope(`{"path":"/home/user/nope"}`))
		if errv, _ := end["error"].(map[string]any); len(msgs) != 0 || errv == nil || errv["code"] != "not_found" {
			t.Errorf("WatchDir of a missing directory: messages %v, end %v; want not_found", msgs, end)
		}
		// A link out of the sandbox is resolved inside it.
		e.stream(id, "process.Process/Start", envelope(`{"process":{"cmd":"/bin/bash","args":["-l","-c","ln -s /etc /home/user/etclink"]}}`))
		if status, out := e.unary(id, "filesystem.Filesystem/CreateWatcher", `{"path":"/home/user/etclink"}`); out["code"] != "not_found" {
			t.Errorf("CreateWatcher through a link to /etc: %d %v, want not_found", status, out)
		}
		other := e2bWire{t: t, base: e.base, key: otherKey.Token}
		if status, out := other.unary(id, "filesystem.Filesystem/CreateWatcher", `{"path":"/home/user/wd"}`); out["code"] != "not_found" {
			t.Errorf("CreateWatcher on another tenant's sandbox: %d %v, want not_found", status, out)
		}
	})

	t.Run("snapshots", func(t *testing.T) {
		e := e
		e.t = t
		other := e2bWire{t: t, base: e.base, key: otherKey.Token}
		status, b := e.api("POST", "/sandboxes/"+id+"/snapshots", map[string]any{"name": "wire-snap"})
		var snap struct {
			SnapshotID string
			Names      []string
		}
		json.Unmarshal(b, &snap)
		if status != http.StatusCreated || snap.SnapshotID == "" || len(snap.Names) != 1 || snap.Names[0] != "wire-snap" {
			t.Fatalf("create snapshot: %d %s", status, b)
		}
		if status, b := e.api("GET", "/snapshots?sandboxID="+id, nil); status != http.StatusOK || !strings.Contains(string(b), snap.SnapshotID) {
			t.Errorf("list snapshots: %d %s", status, b)
		}
		if status, b := other.api("GET", "/snapshots", nil); status != http.StatusOK || strings.Contains(string(b), snap.SnapshotID) {
			t.Errorf("another tenant lists snapshots: %d %s", status, b)
		}
		for _, tc := range []struct {
			name   string
			w      e2bWire
			method string
			path   string
			body   any
			code   int
		}{
			{"malformed body", e, "POST", "/sandboxes/" + id + "/snapshots", `{"name":`, 400},
			{"bad name", e, "POST", "/sandboxes/" + id + "/snapshots", map[string]any{"name": "Not A Name"}, 400},
			{"name taken", e, "POST", "/sandboxes/" + id + "/snapshots", map[string]any{"name": "wire-snap"}, 409},
			{"another tenant's sandbox", other, "POST", "/sandboxes/" + id + "/snapshots", nil, 404},
			{"another tenant's snapshot deleted", other, "DELETE", "/templates/" + snap.SnapshotID, nil, 404},
			{"another tenant's snapshot as template", other, "POST", "/v2/sandboxes", map[string]any{"templateID": snap.SnapshotID}, 404},
			{"fork count 0", e, "POST", "/sandboxes/" + id + "/fork", map[string]any{"count": 0}, 400},
			{"fork count too big", e, "POST", "/sandboxes/" + id + "/fork", map[string]any{"count": 101}, 400},
			{"fork timeout negative", e, "POST", "/sandboxes/" + id + "/fork", map[string]any{"timeout": -1}, 400},
			{"fork of another tenant's sandbox", other, "POST", "/sandboxes/" + id + "/fork", nil, 404},
			{"resume of a running sandbox", e, "POST", "/sandboxes/" + id + "/resume", nil, 409},
			{"list limit", e, "GET", "/snapshots?limit=x", nil, 400},
		} {
			status, b := tc.w.api(tc.method, tc.path, tc.body)
			var body struct{ Code int }
			json.Unmarshal(b, &body)
			if status != tc.code || body.Code != tc.code {
				t.Errorf("%s: %d %s, want %d with code %d", tc.name, status, b, tc.code, tc.code)
			}
		}
		status, b = e.api("POST", "/sandboxes/"+id+"/fork", map[string]any{"count": 1, "timeout": 60})
		var forks []struct {
			Sandbox *struct{ SandboxID string }
			Error   *struct{ Code int }
		}
		json.Unmarshal(b, &forks)
		if status != http.StatusCreated || len(forks) != 1 || forks[0].Sandbox == nil || forks[0].Sandbox.SandboxID == id {
			t.Fatalf("fork: %d %s", status, b)
		}
		if status, b := e.do(e.envdReq("GET", "/files?path=dir/a.txt", forks[0].Sandbox.SandboxID, nil)); status != http.StatusOK || string(b) != "hello\n" {
			t.Errorf("the fork's copy of dir/a.txt: %d %q", status, b)
		}
		e.api("DELETE", "/sandboxes/"+forks[0].Sandbox.SandboxID, nil)
		if status, b := e.api("DELETE", "/templates/"+snap.SnapshotID, nil); status != http.StatusNoContent {
			t.Errorf("delete snapshot: %d %s", status, b)
		}
		if status, b := e.api("DELETE", "/templates/"+snap.SnapshotID, nil); status != http.StatusNotFound || !strings.Contains(string(b), `"code":404`) {
			t.Errorf("delete snapshot again: %d %s", status, b)
		}
		// Pause: memory cannot be kept, and says so; without it envd
		// refuses the sandbox (health 502) until connect.
		if status, b := e.api("POST", "/sandboxes/"+id+"/pause", map[string]any{"memory": true}); status != http.StatusServiceUnavailable || !strings.Contains(string(b), "memory") {
			t.Errorf("pause keeping memory: %d %s, want 503 saying why", status, b)
		}
		if status, b := e.api("POST", "/sandboxes/"+id+"/pause", `{"memory":`); status != http.StatusBadRequest {
			t.Errorf("pause with a malformed body: %d %s, want 400", status, b)
		}
		if status, b := e.api("POST", "/sandboxes/"+id+"/pause", map[string]any{}); status != http.StatusNoContent {
			t.Fatalf("pause: %d %s", status, b)
		}
		if status, b := e.api("POST", "/sandboxes/"+id+"/pause", map[string]any{}); status != http.StatusConflict || !strings.Contains(string(b), `"code":409`) {
			t.Errorf("pause again: %d %s, want 409", status, b)
		}
		if status, b := e.do(e.envdReq("GET", "/health", id, nil)); status != http.StatusBadGateway {
			t.Errorf("health of a paused sandbox: %d %s, want 502", status, b)
		}
		if status, out := e.unary(id, "filesystem.Filesystem/Stat", `{"path":"/home/user/dir/a.txt"}`); out["code"] != "unavailable" {
			t.Errorf("Stat on a paused sandbox: %d %v, want unavailable", status, out)
		}
		if status, b := e.api("POST", "/v2/sandboxes/"+id+"/connect", map[string]any{}); status != http.StatusCreated {
			t.Errorf("connect to a paused sandbox: %d %s, want 201", status, b)
		}
		if status, b := e.api("POST", "/v2/sandboxes/"+id+"/connect", map[string]any{}); status != http.StatusOK {
			t.Errorf("connect to a running sandbox: %d %s, want 200", status, b)
		}
		if status, b := e.do(e.envdReq("GET", "/files?path=dir/a.txt", id, nil)); status != http.StatusOK || string(b) != "hello\n" {
			t.Errorf("dir/a.txt after pause and connect: %d %q", status, b)
		}
	})

	t.Run("network", func(t *testing.T) {
		e := e
		e.t = t
		other := e2bWire{t: t, base: e.base, key: otherKey.Token}
		// This daemon has no network tier: mode none is served, egress is
		// 503, which shows each body reached the policy it maps to.
		status, b := e.api("POST", "/v2/sandboxes", map[string]any{"templateID": "base", "allow_internet_access": false, "timeout": 60})
		var sbx struct{ SandboxID string }
		json.Unmarshal(b, &sbx)
		if status != http.StatusCreated {
			t.Fatalf("create without internet: %d %s", status, b)
		}
		defer e.api("DELETE", "/sandboxes/"+sbx.SandboxID, nil)
		for _, tc := range []struct {
			name   string
			w      e2bWire
			method string
			path   string
			body   any
			code   int
		}{
			{"deny all", e, "PUT", "/sandboxes/" + sbx.SandboxID + "/network", map[string]any{"denyOut": []string{"0.0.0.0/0"}}, 204},
			{"egress needs the network tier", e, "PUT", "/sandboxes/" + sbx.SandboxID + "/network", map[string]any{"denyOut": []string{"0.0.0.0/0"}, "allowOut": []string{"example.com"}}, 503},
			{"create with egress", e, "POST", "/v2/sandboxes", map[string]any{"templateID": "base", "network": map[string]any{"denyOut": []string{"8.8.8.8"}}}, 503},
			{"domain without deny all", e, "PUT", "/sandboxes/" + sbx.SandboxID + "/network", map[string]any{"allowOut": []string{"example.com"}}, 400},
			{"domain denied", e, "PUT", "/sandboxes/" + sbx.SandboxID + "/network", map[string]any{"denyOut": []string{"example.com"}}, 400},
			{"allowed inside denied", e, "PUT", "/sandboxes/" + sbx.SandboxID + "/network", map[string]any{"allowOut": []string{"8.8.8.8"}, "denyOut": []string{"8.8.0.0/16"}}, 400},
			{"transform rules", e, "PUT", "/sandboxes/" + sbx.SandboxID + "/network", map[string]any{"rules": map[string]any{"a.com": []any{map[string]any{}}}}, 400},
			{"malformed body", e, "PUT", "/sandboxes/" + sbx.SandboxID + "/network", `{"denyOut":"x"}`, 400},
			{"create with a bad network", e, "POST", "/v2/sandboxes", map[string]any{"templateID": "base", "network": map[string]any{"denyOut": []string{"not an address"}}}, 400},
			{"another tenant's sandbox", other, "PUT", "/sandboxes/" + sbx.SandboxID + "/network", map[string]any{"denyOut": []string{"0.0.0.0/0"}}, 404},
		} {
			status, b := tc.w.api(tc.method, tc.path, tc.body)
			if status != tc.code {
				t.Errorf("%s: %d %s, want %d", tc.name, status, b, tc.code)
			}
		}
		// rung's own API, with the same key, shows the policy.
		req, _ := http.NewRequestWithContext(t.Context(), "GET", e.base+"/v1/sandboxes/"+sbx.SandboxID, nil)
		req.Header.Set("Authorization", "Bearer "+e.key)
		status, b = e.do(req)
		var sb struct{ Network struct{ Mode string } }
		json.Unmarshal(b, &sb)
		if status != http.StatusOK || sb.Network.Mode != "none" {
			t.Errorf("the sandbox after the updates: %d %s; want network mode none", status, b)
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
