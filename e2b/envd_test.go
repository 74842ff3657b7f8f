package e2b

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/controller/controllertest"
	pb "rung.dev/rung/e2b/envdpb/filesystem"
	"rung.dev/rung/e2b/envdpb/filesystem/filesystemconnect"
	ppb "rung.dev/rung/e2b/envdpb/process"
	"rung.dev/rung/e2b/envdpb/process/processconnect"
	"rung.dev/rung/shell/tools"
	"rung.dev/rung/storage"
)

// envdEnv is an e2b Server over a real controller (isolate tier only)
// with one sandbox, reached as the SDK reaches envd.
type envdEnv struct {
	s       *Server
	url     string
	sandbox rung.SandboxID
	token   string
	fs      filesystemconnect.FilesystemClient
	proc    processconnect.ProcessClient
	ctrl    *controller.Controller
	key     string // the tenant's E2B API key
}

func newEnvdEnv(t testing.TB) *envdEnv {
	t.Helper()
	return newEnvdEnvWith(t, controller.Config{Tools: tools.All()})
}

// newEnvdEnvWith is newEnvdEnv over a controller of cfg.
func newEnvdEnvWith(t testing.TB, cfg controller.Config) *envdEnv {
	t.Helper()
	c := controllertest.New(t, cfg)
	if _, err := c.CreateTenant(t.Context(), "acme"); err != nil {
		t.Fatal(err)
	}
	key, err := c.CreateToken(t.Context(), controller.TokenRequest{Tenant: "acme", E2B: true})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := c.Create(t.Context(), "acme", controller.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Controller: c})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &envdEnv{s: s, url: srv.URL, sandbox: sb.ID, token: s.accessToken("acme", sb.ID), ctrl: c, key: key.Bearer,
		fs:   filesystemconnect.NewFilesystemClient(srv.Client(), srv.URL, connect.WithProtoJSON()),
		proc: processconnect.NewProcessClient(srv.Client(), srv.URL, connect.WithProtoJSON())}
}

func (e *envdEnv) auth(h http.Header) {
	h.Set("X-Access-Token", e.token)
	h.Set("E2b-Sandbox-Id", string(e.sandbox))
}

// upload posts body to /files with query q and headers h, and returns
// the status and the body.
func (e *envdEnv) upload(t testing.TB, q url.Values, h http.Header, ctype string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", e.url+"/files?"+q.Encode(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(req.Header, h)
	e.auth(req.Header)
	req.Header.Set("Content-Type", ctype)
	return do(t, req)
}

// api calls the control plane with the tenant's E2B key and returns the
// status and the body.
func (e *envdEnv) api(t testing.TB, method, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-KEY", e.key)
	return do(t, req)
}

// do sends req and returns the status and the body.
func do(t testing.TB, req *http.Request) (int, []byte) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// multipartBody is a form with one "file" part per name.
func multipartBody(t *testing.T, names ...string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, n := range names {
		w, err := mw.CreateFormFile("file", n)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, "content of "+n)
	}
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

func (e *envdEnv) stat(t *testing.T, p string) *pb.EntryInfo {
	t.Helper()
	req := connect.NewRequest(&pb.StatRequest{Path: p})
	e.auth(req.Header())
	res, err := e.fs.Stat(t.Context(), req)
	if err != nil {
		t.Fatalf("Stat(%s): %v", p, err)
	}
	return res.Msg.Entry
}

func metadataHeaders(md map[string]string) http.Header {
	h := http.Header{}
	for k, v := range md {
		h.Set("X-Metadata-"+k, v)
	}
	return h
}

func equalMetadata(got, want map[string]string) bool {
	return len(got) == len(want) && maps.Equal(got, want)
}

// TestUploadMetadata: an upload's X-Metadata-* headers become the file's
// user.e2b.* attributes, in all three body formats; the answer, Stat,
// ListDir and Move report them; an upload without them clears them; bad
// metadata is a 400 and writes nothing.
func TestUploadMetadata(t *testing.T) {
	e := newEnvdEnv(t)
	md := map[string]string{"author": "mish", "purpose": "upload"}
	ctype, form := multipartBody(t, "ignored-name")
	multiCtype, multiForm := multipartBody(t, "multi/a.txt", "/home/user/multi/b.txt")
	tests := []struct {
		name  string
		q     url.Values
		ctype string
		body  []byte
		paths []string // what the answer lists
	}{
		{"multipart with path", url.Values{"path": {"m/one.txt"}}, ctype, form, []string{"/home/user/m/one.txt"}},
		{"octet-stream", url.Values{"path": {"/home/user/m/two.txt"}}, "application/octet-stream", []byte("two"), []string{"/home/user/m/two.txt"}},
		{"multipart writeFiles", url.Values{}, multiCtype, multiForm, []string{"/home/user/multi/a.txt", "/home/user/multi/b.txt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.upload(t, tc.q, metadataHeaders(md), tc.ctype, tc.body)
			if status != 200 {
				t.Fatalf("upload: %d %s", status, body)
			}
			var got []writtenEntry
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("answer %s: %v", body, err)
			}
			if len(got) != len(tc.paths) {
				t.Fatalf("answer %s, want %d entries", body, len(tc.paths))
			}
			for i, w := range got {
				if w.Path != tc.paths[i] || !equalMetadata(w.Metadata, md) {
					t.Errorf("answer entry %d = %+v, want path %s and metadata %v", i, w, tc.paths[i], md)
				}
				if st := e.stat(t, w.Path); !equalMetadata(st.Metadata, md) {
					t.Errorf("Stat(%s).metadata = %v, want %v", w.Path, st.Metadata, md)
				}
			}
		})
	}

	// ListDir reports each entry's metadata; a directory and a file
	// without any have none.
	e.upload(t, url.Values{"path": {"m/plain.txt"}}, nil, "application/octet-stream", []byte("plain"))
	lreq := connect.NewRequest(&pb.ListDirRequest{Path: "/home/user/m", Depth: 1})
	e.auth(lreq.Header())
	list, err := e.fs.ListDir(t.Context(), lreq)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{"one.txt": md, "two.txt": md, "plain.txt": nil}
	if len(list.Msg.Entries) != len(want) {
		t.Errorf("ListDir: %d entries, want %d", len(list.Msg.Entries), len(want))
	}
	for _, ent := range list.Msg.Entries {
		if w, ok := want[ent.Name]; !ok || !equalMetadata(ent.Metadata, w) {
			t.Errorf("ListDir entry %s: metadata %v, want %v", ent.Name, ent.Metadata, w)
		}
	}

	// Move keeps them and reports them.
	mreq := connect.NewRequest(&pb.MoveRequest{Source: "m/one.txt", Destination: "m/renamed.txt"})
	e.auth(mreq.Header())
	moved, err := e.fs.Move(t.Context(), mreq)
	if err != nil {
		t.Fatal(err)
	}
	if !equalMetadata(moved.Msg.Entry.Metadata, md) {
		t.Errorf("Move: metadata %v, want %v", moved.Msg.Entry.Metadata, md)
	}

	// An upload replaces the metadata: a key left out goes, and an upload
	// with none clears it.
	status, body := e.upload(t, url.Values{"path": {"m/two.txt"}}, metadataHeaders(map[string]string{"author": "other"}), "application/octet-stream", []byte("2"))
	if status != 200 || !strings.Contains(string(body), `"metadata":{"author":"other"}`) {
		t.Errorf("replacing upload: %d %s", status, body)
	}
	if st := e.stat(t, "m/two.txt"); !equalMetadata(st.Metadata, map[string]string{"author": "other"}) {
		t.Errorf("after a replacing upload: metadata %v, want only author=other", st.Metadata)
	}
	status, body = e.upload(t, url.Values{"path": {"m/two.txt"}}, nil, "application/octet-stream", []byte("3"))
	if status != 200 || strings.Contains(string(body), "metadata") {
		t.Errorf("upload without metadata: %d %s, want no metadata in the answer", status, body)
	}
	if st := e.stat(t, "m/two.txt"); st.Metadata != nil {
		t.Errorf("after an upload without metadata: metadata %v, want none", st.Metadata)
	}
}

func TestUploadMetadataInvalid(t *testing.T) {
	e := newEnvdEnv(t)
	tests := []struct {
		name string
		h    http.Header
	}{
		{"non-ASCII value", http.Header{"X-Metadata-Good": {"caf\u00e9"}}},
		{"control byte in value", http.Header{"X-Metadata-Good": {"a\tb"}}},
		{"key too long", http.Header{"X-Metadata-" + strings.Repeat("k", maxMetadataKey+1): {"v"}}},
		{"too much in all", http.Header{"X-Metadata-A": {strings.Repeat("v", 2100)}, "X-Metadata-B": {strings.Repeat("v", 2100)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := "bad/" + strings.ReplaceAll(tc.name, " ", "_") + ".txt"
			status, body := e.upload(t, url.Values{"path": {p}}, tc.h, "application/octet-stream", []byte("x"))
			if status != http.StatusBadRequest || !strings.Contains(string(body), "invalid metadata") {
				t.Errorf("upload: %d %s, want 400 invalid metadata", status, body)
			}
			req := connect.NewRequest(&pb.StatRequest{Path: p})
			e.auth(req.Header())
			if _, err := e.fs.Stat(t.Context(), req); connect.CodeOf(err) != connect.CodeNotFound {
				t.Errorf("Stat after a refused upload: %v, want not_found", err)
			}
		})
	}
	// One attribute larger than the pool holds (btrfs, 4 KiB nodes) is
	// refused by name, though within envd's budget.
	status, body := e.upload(t, url.Values{"path": {"big.txt"}}, http.Header{"X-Metadata-Big": {strings.Repeat("v", storage.MaxXattrSize)}}, "application/octet-stream", []byte("x"))
	if status != http.StatusBadRequest || !strings.Contains(string(body), "more than the 3940") {
		t.Errorf("upload of one attribute over the pool's bound: %d %s, want 400 naming it", status, body)
	}
	// The longest key with the most the pool holds, and envd's whole
	// budget in two attributes, are fine.
	long := strings.Repeat("k", maxMetadataKey)
	half := (maxMetadataBytes - 2*len(metadataPrefix) - 2) / 2
	for _, h := range []http.Header{
		{"X-Metadata-" + long: {strings.Repeat("v", storage.MaxXattrSize-len(metadataPrefix)-len(long))}},
		{"X-Metadata-A": {strings.Repeat("v", half)}, "X-Metadata-B": {strings.Repeat("v", maxMetadataBytes-2*len(metadataPrefix)-2-half)}},
	} {
		status, body := e.upload(t, url.Values{"path": {"ok.txt"}}, h, "application/octet-stream", []byte("x"))
		if status != 200 {
			t.Errorf("upload at the bounds: %d %s", status, body)
		}
	}
}

// TestSignedFilesErrors: a signed /files URL that is expired or wrong is
// a 401 whose whole body is envd's (the SDK's tests compare it).
func TestSignedFilesErrors(t *testing.T) {
	e := newEnvdEnv(t)
	e.s.signers.add("acme", e.sandbox)
	if status, body := e.upload(t, url.Values{"path": {"hello.txt"}}, nil, "application/octet-stream", []byte("hello")); status != 200 {
		t.Fatalf("upload: %d %s", status, body)
	}
	past, future := strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10), strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)
	signed := func(op, exp string) url.Values {
		q := url.Values{"path": {"hello.txt"}, "signature": {signature("hello.txt", op, "", e.token, exp)}}
		if exp != "" {
			q.Set("signature_expiration", exp)
		}
		return q
	}
	forged := signed("read", future)
	forged.Set("path", "other.txt")
	tests := []struct {
		name   string
		method string
		q      url.Values
		status int
		body   string
	}{
		{"valid read", "GET", signed("read", future), 200, "hello"},
		{"expired read", "GET", signed("read", past), 401, `{"code":401,"message":"signature is already expired"}`},
		{"expired write", "POST", signed("write", past), 401, `{"code":401,"message":"signature is already expired"}`},
		{"read signed for write", "GET", signed("write", future), 401, `{"code":401,"message":"invalid signature"}`},
		{"forged path", "GET", forged, 401, `{"code":401,"message":"invalid signature"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tc.method, e.url+"/files?"+tc.q.Encode(), strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/octet-stream")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status || strings.TrimSpace(string(b)) != tc.body {
				t.Errorf("%s = %d %s, want %d %s", tc.name, res.StatusCode, b, tc.status, tc.body)
			}
		})
	}
}

// TestStartStreamCutOnKill: a command whose sandbox is killed (DELETE
// /sandboxes/{id}) or deleted by the controller (its TTL) has its Start
// stream cut, with no end event, as envd's goes with its VM; a command
// that exits, or that SendSignal kills, gets its end event.
func TestStartStreamCutOnKill(t *testing.T) {
	tests := []struct {
		name string
		cmd  string
		end  func(t *testing.T, e *envdEnv, pid uint32)
		cut  bool
	}{
		{"exit", "exit 3", nil, false},
		{"SendSignal", "sleep 60", func(t *testing.T, e *envdEnv, pid uint32) {
			req := connect.NewRequest(&ppb.SendSignalRequest{Process: &ppb.ProcessSelector{Selector: &ppb.ProcessSelector_Pid{Pid: pid}}, Signal: ppb.Signal_SIGNAL_SIGKILL})
			e.auth(req.Header())
			if _, err := e.proc.SendSignal(t.Context(), req); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"kill", "sleep 60", func(t *testing.T, e *envdEnv, _ uint32) {
			if status, _ := e.api(t, "DELETE", "/sandboxes/"+string(e.sandbox)); status != http.StatusNoContent {
				t.Fatalf("DELETE: %d", status)
			}
		}, true},
		{"deleted by the controller", "sleep 60", func(t *testing.T, e *envdEnv, _ uint32) {
			if err := e.ctrl.Delete(t.Context(), "acme", string(e.sandbox)); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvdEnv(t)
			req := connect.NewRequest(&ppb.StartRequest{Process: &ppb.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", tc.cmd}}})
			e.auth(req.Header())
			stream, err := e.proc.Start(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			if !stream.Receive() || stream.Msg().GetEvent().GetStart() == nil {
				t.Fatalf("no start event: %v", stream.Err())
			}
			if tc.end != nil {
				tc.end(t, e, stream.Msg().GetEvent().GetStart().GetPid())
			}
			var end *ppb.ProcessEvent_EndEvent
			for stream.Receive() {
				if ev := stream.Msg().GetEvent().GetEnd(); ev != nil {
					end = ev
				}
			}
			switch {
			case tc.cut && (end != nil || stream.Err() == nil):
				t.Errorf("stream ended with end event %v, error %v; want it cut without one", end, stream.Err())
			case !tc.cut && (end == nil || stream.Err() != nil):
				t.Errorf("stream ended with end event %v, error %v; want an end event and a clean end", end, stream.Err())
			}
			if tc.cut {
				// The SDK then asks /health, which must say the sandbox is gone.
				hreq, _ := http.NewRequestWithContext(t.Context(), "GET", e.url+"/health", nil)
				e.auth(hreq.Header)
				res, err := http.DefaultClient.Do(hreq)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusBadGateway {
					t.Errorf("/health after the cut: %d, want 502", res.StatusCode)
				}
			}
		})
	}
}
