package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/api"
	"rung.dev/rung/controller"
	"rung.dev/rung/controller/controllertest"
	"rung.dev/rung/wire"
)

// env is a real API server (controller, SQLite, btrfs test pool) on a
// loopback port, with an admin token and tokens of tenants "acme" and
// "beta".
type env struct {
	url   string
	admin string
	acme  string
	beta  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := controllertest.New(t, controller.Config{})
	admin, _, err := c.Bootstrap(t.Context(), filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Config{Controller: c, MaxJSONBytes: 64 << 10, MaxFileBytes: 1 << 20}))
	t.Cleanup(srv.Close)
	e := &env{url: srv.URL, admin: admin}
	for _, tn := range []string{"acme", "beta"} {
		e.must(t, e.call(t, admin, "POST", "/v1/tenants", `{"name":"`+tn+`"}`), 201)
		var tok api.TokenResponse
		e.decode(t, e.must(t, e.call(t, admin, "POST", "/v1/tokens", `{"tenant":"`+tn+`"}`), 201), &tok)
		if tn == "acme" {
			e.acme = tok.Token
		} else {
			e.beta = tok.Token
		}
	}
	return e
}

type resp struct {
	status int
	body   []byte
	header http.Header
}

func (e *env) raw(t *testing.T, token, method, path, ctype string, body io.Reader) resp {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return resp{status: r.StatusCode, body: b, header: r.Header}
}

func (e *env) call(t *testing.T, token, method, path, body string) resp {
	t.Helper()
	var r io.Reader
	ct := ""
	if body != "" {
		r, ct = strings.NewReader(body), "application/json"
	}
	return e.raw(t, token, method, path, ct, r)
}

func (e *env) must(t *testing.T, r resp, status int) resp {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	return r
}

func (e *env) decode(t *testing.T, r resp, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

func errCode(t *testing.T, r resp) string {
	t.Helper()
	var eb api.ErrorBody
	if err := json.Unmarshal(r.body, &eb); err != nil || eb.Error.Code == "" {
		t.Fatalf("not an error body (status %d): %s", r.status, r.body)
	}
	return eb.Error.Code
}

func (e *env) sandbox(t *testing.T, token, body string) api.Sandbox {
	t.Helper()
	var sb api.Sandbox
	e.decode(t, e.must(t, e.call(t, token, "POST", "/v1/sandboxes", body), 201), &sb)
	return sb
}

func TestSandboxCRUD(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox(t, e.acme, `{"name":"web","labels":{"env":"dev"},"size":{"preset":"basic"}}`)
	if !sb.ID.Valid() || sb.Name != "web" || sb.Size.Preset != "basic" || sb.State != "ready" {
		t.Fatalf("created %+v", sb)
	}
	var got api.Sandbox
	e.decode(t, e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes/web", ""), 200), &got)
	if got.ID != sb.ID {
		t.Errorf("get by name = %s, want %s", got.ID, sb.ID)
	}
	e.must(t, e.call(t, e.acme, "PATCH", "/v1/sandboxes/"+string(sb.ID), `{"labels":{"env":"prod"},"idle_timeout_ms":60000}`), 200)
	var list struct{ Sandboxes []api.Sandbox }
	e.decode(t, e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes?label=env=prod", ""), 200), &list)
	if len(list.Sandboxes) != 1 || list.Sandboxes[0].IdleTimeoutMS != 60000 {
		t.Errorf("list by label = %+v", list.Sandboxes)
	}
	if r := e.call(t, e.acme, "POST", "/v1/sandboxes", `{"name":"web"}`); r.status != 409 || errCode(t, r) != "already_exists" {
		t.Errorf("duplicate name: %d %s", r.status, r.body)
	}
	e.must(t, e.call(t, e.acme, "DELETE", "/v1/sandboxes/"+string(sb.ID), ""), 204)
	if r := e.call(t, e.acme, "GET", "/v1/sandboxes/"+string(sb.ID), ""); r.status != 404 {
		t.Errorf("get after delete: %d", r.status)
	}
}

// TestSandboxListPages pages through the list by cursor: every sandbox
// once, in creation order, the last page without a next; deleting the
// sandbox a cursor points at, and creating new ones, between pages skips
// and repeats nothing.
func TestSandboxListPages(t *testing.T) {
	e := newEnv(t)
	var ids []rung.SandboxID
	for i := range 5 {
		ids = append(ids, e.sandbox(t, e.acme, fmt.Sprintf(`{"name":"p%d"}`, i)).ID)
	}
	e.sandbox(t, e.beta, `{"name":"theirs"}`) // another tenant's: never listed
	page := func(after string) ([]rung.SandboxID, string) {
		t.Helper()
		var l wire.SandboxList
		e.decode(t, e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes?limit=2&after="+url.QueryEscape(after), ""), 200), &l)
		var got []rung.SandboxID
		for _, sb := range l.Sandboxes {
			got = append(got, sb.ID)
		}
		return got, l.Next
	}
	first, next := page("")
	if !slices.Equal(first, ids[:2]) || next == "" {
		t.Fatalf("first page %v next %q, want %v and a cursor", first, next, ids[:2])
	}
	// The sandbox at the cursor goes, and a new one comes: the next page
	// starts right after where the first ended, and the new one is last.
	e.must(t, e.call(t, e.acme, "DELETE", "/v1/sandboxes/"+string(ids[1]), ""), 204)
	ids = append(ids, e.sandbox(t, e.acme, `{"name":"late"}`).ID)
	second, next := page(next)
	if !slices.Equal(second, ids[2:4]) || next == "" {
		t.Fatalf("second page %v next %q, want %v and a cursor", second, next, ids[2:4])
	}
	third, next := page(next)
	if !slices.Equal(third, ids[4:6]) || next != "" {
		t.Fatalf("third page %v next %q, want %v and no cursor (the end)", third, next, ids[4:6])
	}
	// A list that fits its limit has no next.
	var l wire.SandboxList
	e.decode(t, e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes?limit=10", ""), 200), &l)
	if len(l.Sandboxes) != 5 || l.Next != "" {
		t.Fatalf("limit 10: %d sandboxes, next %q; want 5 and none", len(l.Sandboxes), l.Next)
	}
}

// TestSandboxExecCounts: a sandbox's execs are counted by the tier they
// ran in, in the list, in the sandbox's own GET and in what an update
// answers; an exec refused before it ran is not counted.
func TestSandboxExecCounts(t *testing.T) {
	e := newEnv(t)
	id := string(e.sandbox(t, e.acme, `{"name":"counted"}`).ID)
	other := e.sandbox(t, e.acme, `{}`).ID
	for range 2 {
		e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/"+id+"/exec", `{"command":"echo hi"}`), 200)
	}
	// No container tier here: refused before it starts.
	if r := e.call(t, e.acme, "POST", "/v1/sandboxes/"+id+"/exec", `{"command":"echo hi","backend":"container"}`); r.status == 200 {
		t.Fatalf("a container exec without a container tier: %s", r.body)
	}
	want := rung.ExecCounts{Isolate: 2}
	var sb wire.Sandbox
	e.decode(t, e.must(t, e.call(t, e.acme, "PATCH", "/v1/sandboxes/"+id, `{"labels":{"k":"v"}}`), 200), &sb)
	if sb.Execs != want {
		t.Errorf("PATCH answers execs %+v, want %+v", sb.Execs, want)
	}
	e.decode(t, e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes/counted", ""), 200), &sb)
	if sb.Execs != want {
		t.Errorf("GET execs = %+v, want %+v", sb.Execs, want)
	}
	var l wire.SandboxList
	e.decode(t, e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes", ""), 200), &l)
	got := map[rung.SandboxID]rung.ExecCounts{}
	for _, sb := range l.Sandboxes {
		got[sb.ID] = sb.Execs
	}
	if got[rung.SandboxID(id)] != want || got[other] != (rung.ExecCounts{}) {
		t.Errorf("listed execs = %+v, want %+v for %s and none for %s", got, want, id, other)
	}
	// The wire names the fields so the dashboard can read them.
	r := e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes/"+id, ""), 200)
	if !strings.Contains(string(r.body), `"execs":{"isolate":2,"container":0}`) {
		t.Errorf("GET body %s lacks the exec counts", r.body)
	}
}

func TestFilesAndJournal(t *testing.T) {
	e := newEnv(t)
	id := string(e.sandbox(t, e.acme, `{}`).ID)
	e.must(t, e.raw(t, e.acme, "PUT", "/v1/sandboxes/"+id+"/files?path=dir/a.txt&mode=0600", "application/octet-stream", strings.NewReader("hello\n")), 200)
	r := e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes/"+id+"/files?path=/workspace/dir/a.txt", ""), 200)
	if string(r.body) != "hello\n" || r.header.Get("X-Rung-Mode") != "0600" {
		t.Errorf("read = %q mode %s", r.body, r.header.Get("X-Rung-Mode"))
	}
	e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/"+id+"/files/mkdir", `{"path":"x/y","parents":true}`), 204)
	e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/"+id+"/files/move", `{"from":"dir/a.txt","to":"x/b.txt"}`), 204)
	var st controller.FileInfo
	e.decode(t, e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes/"+id+"/files/stat?path=x/b.txt", ""), 200), &st)
	if st.Size != 6 || st.Type != "file" {
		t.Errorf("stat = %+v", st)
	}
	tarball := e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes/"+id+"/files/tar?path=x", ""), 200).body
	e.must(t, e.raw(t, e.acme, "PUT", "/v1/sandboxes/"+id+"/files/tar?path=/tmp/copy", "application/x-tar", bytes.NewReader(tarball)), 200)
	var list struct{ Files []controller.FileInfo }
	e.decode(t, e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes/"+id+"/files/list?path=/tmp/copy&recursive=true", ""), 200), &list)
	if len(list.Files) != 2 || list.Files[0].Path != "/tmp/copy/b.txt" || list.Files[1].Path != "/tmp/copy/y" {
		t.Errorf("list of untarred tree = %+v", list.Files)
	}
	e.must(t, e.call(t, e.acme, "DELETE", "/v1/sandboxes/"+id+"/files?path=x&recursive=true", ""), 204)
	var j struct{ Entries []api.Event }
	e.decode(t, e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes/"+id+"/journal", ""), 200), &j)
	var types []string
	for _, en := range j.Entries {
		types = append(types, en.Type)
	}
	if got := strings.Join(types, " "); got != "sandbox.created file.written file.mkdir file.moved file.untarred file.removed" {
		t.Errorf("journal = %s", got)
	}
	var after struct{ Entries []api.Event }
	e.decode(t, e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes/"+id+"/journal?after=4", ""), 200), &after)
	if len(after.Entries) != 2 || after.Entries[0].Seq != 5 {
		t.Errorf("journal after 4 = %+v", after.Entries)
	}
}

func TestEffectsHTTP(t *testing.T) {
	e := newEnv(t)
	id := string(e.sandbox(t, e.acme, `{}`).ID)
	var first, second api.EffectResponse
	e.decode(t, e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/"+id+"/effects", `{"key":"pr-7","kind":"github.pr","result":{"url":"u1"}}`), 201), &first)
	e.decode(t, e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/"+id+"/effects", `{"key":"pr-7","result":{"url":"u2"}}`), 200), &second)
	if !first.Created || second.Created || string(second.Effect.Result) != `{"url":"u1"}` {
		t.Errorf("effects = %+v then %+v", first, second)
	}
}
