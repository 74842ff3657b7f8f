package api_test

import (
	"bytes"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/api"
)

// TestSnapshotEndpoints drives every snapshot endpoint through HTTP: take,
// get, list (paged), pin, restore onto a new sandbox, roll back, fork (a
// live sandbox and a snapshot, with a per-fork failure), export and
// import (and a damaged import), delete, and a memory pause.
func TestSnapshotEndpoints(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox(t, e.acme, `{"name":"src"}`)
	put := func(ref, path, data string) {
		t.Helper()
		e.must(t, e.raw(t, e.acme, "PUT", "/v1/sandboxes/"+ref+"/files?path="+path, "application/octet-stream", strings.NewReader(data)), 200)
	}
	get := func(ref, path string) string {
		t.Helper()
		return string(e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes/"+ref+"/files?path="+path, ""), 200).body)
	}
	put("src", "f", "v1")
	var snap api.Snapshot
	e.decode(t, e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/src/snapshots", `{"name":"v1","labels":{"k":"v"},"ttl_ms":3600000}`), 201), &snap)
	if !snap.ID.Valid() || snap.Name != "v1" || snap.Sandbox != sb.ID || snap.TTLMS != 3600000 || snap.Pinned || snap.ExpiresAt.IsZero() {
		t.Errorf("snapshot = %+v", snap)
	}
	if r := e.call(t, e.acme, "POST", "/v1/sandboxes/src/snapshots", `{"name":"v1"}`); r.status != 409 || errCode(t, r) != rung.CodeExists {
		t.Errorf("duplicate name: %d %s", r.status, r.body)
	}
	if r := e.call(t, e.acme, "POST", "/v1/sandboxes/src/snapshots", `{"name":"Bad Name"}`); r.status != 400 {
		t.Errorf("bad name: %d %s", r.status, r.body)
	}
	put("src", "f", "v2")
	e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/src/snapshots", `{"name":"v2","freeze":true}`), 201)

	var list api.SnapshotList
	page := func(token, path string) api.SnapshotList {
		t.Helper()
		var l api.SnapshotList // fresh: decoding into a used one keeps fields the JSON omits
		e.decode(t, e.must(t, e.call(t, token, "GET", path, ""), 200), &l)
		return l
	}
	list = page(e.acme, "/v1/snapshots?limit=1")
	if len(list.Snapshots) != 1 || list.Snapshots[0].Name != "v1" || list.Next == "" {
		t.Fatalf("page 1 = %+v", list)
	}
	list = page(e.acme, "/v1/snapshots?limit=1&after="+list.Next)
	if len(list.Snapshots) != 1 || list.Snapshots[0].Name != "v2" || list.Snapshots[0].Consistency != "frozen" || list.Next != "" {
		t.Errorf("page 2 = %+v", list)
	}
	list = page(e.acme, "/v1/snapshots?label=k=v&sandbox=src")
	if len(list.Snapshots) != 1 || list.Snapshots[0].ID != snap.ID {
		t.Errorf("filtered = %+v", list)
	}
	snap = api.Snapshot{}
	e.decode(t, e.must(t, e.call(t, e.acme, "POST", "/v1/snapshots/v1/pin", ""), 200), &snap)
	if !snap.Pinned || !snap.ExpiresAt.IsZero() {
		t.Errorf("pinned = %+v", snap)
	}
	snap = api.Snapshot{}
	e.decode(t, e.must(t, e.call(t, e.acme, "POST", "/v1/snapshots/v1/pin", `{"pinned":false}`), 200), &snap)
	if snap.Pinned || snap.ExpiresAt.IsZero() {
		t.Errorf("unpinned = %+v", snap)
	}

	// Restore onto a new sandbox, and roll back in place.
	restored := e.sandbox(t, e.acme, `{"name":"copy","from_snapshot":"v1"}`)
	if got := get("copy", "f"); got != "v1" || restored.Name != "copy" {
		t.Errorf("restored sandbox %+v reads %q", restored, got)
	}
	if r := e.call(t, e.acme, "POST", "/v1/sandboxes", `{"from_snapshot":"nope"}`); r.status != 404 {
		t.Errorf("restore of a missing snapshot: %d %s", r.status, r.body)
	}
	var back api.Sandbox
	e.decode(t, e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/src/restore", `{"snapshot":"v1"}`), 200), &back)
	if back.ID != sb.ID || get("src", "f") != "v1" {
		t.Errorf("rollback: %+v, f = %q", back, get("src", "f"))
	}
	if r := e.call(t, e.acme, "POST", "/v1/sandboxes/src/restore", `{}`); r.status != 400 {
		t.Errorf("rollback without a snapshot: %d", r.status)
	}

	// Fork: a live sandbox (one name taken) and a snapshot.
	var forks struct{ Forks []api.ForkResult }
	e.decode(t, e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/src/fork", `{"count":3,"names":["a","copy"]}`), 200), &forks)
	if len(forks.Forks) != 3 || forks.Forks[0].Sandbox == nil || forks.Forks[0].Sandbox.Name != "a" ||
		forks.Forks[1].Error == nil || forks.Forks[1].Error.Code != rung.CodeExists || forks.Forks[2].Sandbox == nil {
		t.Errorf("forks = %+v", forks)
	}
	forks.Forks = nil
	e.decode(t, e.must(t, e.call(t, e.acme, "POST", "/v1/snapshots/v2/fork", ""), 200), &forks)
	if len(forks.Forks) != 1 || forks.Forks[0].Sandbox == nil || get(string(forks.Forks[0].Sandbox.ID), "f") != "v2" {
		t.Errorf("snapshot fork = %+v", forks)
	}
	if r := e.call(t, e.acme, "POST", "/v1/sandboxes/src/fork", `{"count":101}`); r.status != 400 {
		t.Errorf("101 forks: %d", r.status)
	}

	// Export, import as beta, and a damaged import.
	exp := e.must(t, e.call(t, e.acme, "GET", "/v1/snapshots/v1/export", ""), 200)
	if ct := exp.header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("export content type %q", ct)
	}
	var in api.Snapshot
	e.decode(t, e.must(t, e.raw(t, e.beta, "POST", "/v1/snapshots/import?name=mine&label=from=acme", "application/octet-stream", bytes.NewReader(exp.body)), 201), &in)
	if in.Name != "mine" || in.Labels["from"] != "acme" || in.Sandbox != "" {
		t.Errorf("imported = %+v", in)
	}
	bad := bytes.Clone(exp.body)
	bad[len(bad)/2] ^= 1
	if r := e.raw(t, e.beta, "POST", "/v1/snapshots/import", "application/octet-stream", bytes.NewReader(bad)); r.status != 400 || errCode(t, r) != rung.CodeInvalid {
		t.Errorf("damaged import: %d %s", r.status, r.body)
	}
	if list = page(e.beta, "/v1/snapshots"); len(list.Snapshots) != 1 {
		t.Errorf("beta has %d snapshots, want only its import", len(list.Snapshots))
	}
	inc := e.must(t, e.call(t, e.acme, "GET", "/v1/snapshots/v2/export?parent=v1", ""), 200)
	if len(inc.body) >= len(exp.body) {
		t.Errorf("incremental export %d bytes, whole %d", len(inc.body), len(exp.body))
	}

	// Pause: without memory it stops the container (no container tier
	// here: unavailable); with memory, unavailable and says why.
	if r := e.call(t, e.acme, "POST", "/v1/sandboxes/src/pause", `{"memory":true}`); r.status != 503 || !strings.Contains(string(r.body), "CRIU") {
		t.Errorf("memory pause: %d %s", r.status, r.body)
	}

	e.must(t, e.call(t, e.acme, "DELETE", "/v1/snapshots/v2", ""), 204)
	if r := e.call(t, e.acme, "GET", "/v1/snapshots/v2", ""); r.status != 404 {
		t.Errorf("get after delete: %d", r.status)
	}
}

// TestSnapshotTenantIsolation: every snapshot endpoint answers tenant
// beta about acme's snapshot exactly as about a missing one.
func TestSnapshotTenantIsolation(t *testing.T) {
	e := newEnv(t)
	e.sandbox(t, e.acme, `{"name":"a"}`)
	var snap api.Snapshot
	e.decode(t, e.must(t, e.call(t, e.acme, "POST", "/v1/sandboxes/a/snapshots", `{"name":"secret"}`), 201), &snap)
	e.sandbox(t, e.beta, `{"name":"b"}`)
	missing := string(rung.NewSnapshotID())
	reqs := []struct{ method, path, body string }{
		{"GET", "/v1/snapshots/%s", ""},
		{"DELETE", "/v1/snapshots/%s", ""},
		{"POST", "/v1/snapshots/%s/pin", ""},
		{"POST", "/v1/snapshots/%s/fork", `{"count":2}`},
		{"GET", "/v1/snapshots/%s/export", ""},
		{"POST", "/v1/sandboxes", `{"from_snapshot":"%s"}`},
		{"POST", "/v1/sandboxes/b/restore", `{"snapshot":"%s"}`},
	}
	for _, rq := range reqs {
		t.Run(rq.method+" "+rq.path, func(t *testing.T) {
			for _, ref := range []string{string(snap.ID), "secret"} {
				sub := func(s, r string) string { return strings.Replace(s, "%s", r, 1) }
				got := e.call(t, e.beta, rq.method, sub(rq.path, ref), sub(rq.body, ref))
				wantRef := missing
				if ref == "secret" {
					wantRef = "nosuchname"
				}
				want := e.call(t, e.beta, rq.method, sub(rq.path, wantRef), sub(rq.body, wantRef))
				if got.status != 404 || want.status != 404 {
					t.Fatalf("beta on acme's %s: status %d (missing: %d), want 404: %s", ref, got.status, want.status, got.body)
				}
				if g, w := strings.ReplaceAll(string(got.body), ref, "REF"), strings.ReplaceAll(string(want.body), wantRef, "REF"); g != w {
					t.Errorf("beta can tell acme's snapshot from a missing one:\n got %s\nwant %s", g, w)
				}
			}
		})
	}
	for _, p := range []string{"/v1/snapshots", "/v1/snapshots?name=secret", "/v1/snapshots?sandbox=" + string(snap.Sandbox)} {
		var list api.SnapshotList
		e.decode(t, e.must(t, e.call(t, e.beta, "GET", p, ""), 200), &list)
		if len(list.Snapshots) != 0 {
			t.Errorf("beta's %s lists %d snapshots", p, len(list.Snapshots))
		}
	}
	for _, p := range []string{"/v1/sandboxes/a/snapshots", "/v1/sandboxes/a/fork"} {
		if r := e.call(t, e.beta, "POST", p, `{}`); r.status != 404 {
			t.Errorf("beta POST %s: %d", p, r.status)
		}
	}
	e.must(t, e.call(t, e.acme, "GET", "/v1/snapshots/secret", ""), 200)
}
