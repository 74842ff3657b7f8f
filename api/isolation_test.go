package api_test

import (
	"strings"
	"testing"

	"rung.dev/rung"
)

// TestTenantIsolation checks, endpoint by endpoint, that tenant beta can
// neither read, list, change nor infer tenant acme's sandbox: every
// request answers exactly as for a sandbox that does not exist.
func TestTenantIsolation(t *testing.T) {
	e := newEnv(t)
	a := e.sandbox(t, e.acme, `{"name":"secret"}`)
	e.must(t, e.raw(t, e.acme, "PUT", "/v1/sandboxes/"+string(a.ID)+"/files?path=f", "application/octet-stream", strings.NewReader("x")), 200)
	missing := string(rung.NewSandboxID())
	reqs := []struct{ method, path, body string }{
		{"GET", "/v1/sandboxes/%s", ""},
		{"PATCH", "/v1/sandboxes/%s", `{"labels":{"x":"y"}}`},
		{"DELETE", "/v1/sandboxes/%s", ""},
		{"POST", "/v1/sandboxes/%s/exec", `{"command":"echo hi","backend":"isolate"}`},
		{"POST", "/v1/sandboxes/%s/exec?stream=ndjson", `{"command":"echo hi","backend":"isolate"}`},
		{"GET", "/v1/sandboxes/%s/files?path=f", ""},
		{"PUT", "/v1/sandboxes/%s/files?path=f", "y"},
		{"DELETE", "/v1/sandboxes/%s/files?path=f", ""},
		{"GET", "/v1/sandboxes/%s/files/stat?path=f", ""},
		{"GET", "/v1/sandboxes/%s/files/list", ""},
		{"POST", "/v1/sandboxes/%s/files/mkdir", `{"path":"d"}`},
		{"POST", "/v1/sandboxes/%s/files/move", `{"from":"f","to":"g"}`},
		{"GET", "/v1/sandboxes/%s/files/tar?path=/workspace", ""},
		{"GET", "/v1/sandboxes/%s/journal", ""},
		{"GET", "/v1/sandboxes/%s/events", ""},
		{"POST", "/v1/sandboxes/%s/effects", `{"key":"k"}`},
		{"GET", "/v1/sandboxes/%s/effects", ""},
		{"GET", "/v1/sandboxes/%s/metrics", ""},
		{"GET", "/v1/sandboxes/%s/metrics?start=2026-01-01T00:00:00Z", ""},
	}
	for _, rq := range reqs {
		t.Run(rq.method+" "+rq.path, func(t *testing.T) {
			for _, ref := range []string{string(a.ID), "secret"} {
				got := e.call(t, e.beta, rq.method, strings.Replace(rq.path, "%s", ref, 1), rq.body)
				wantRef := missing
				if ref == "secret" {
					wantRef = "nosuchname"
				}
				want := e.call(t, e.beta, rq.method, strings.Replace(rq.path, "%s", wantRef, 1), rq.body)
				if got.status != 404 || want.status != 404 {
					t.Fatalf("beta on acme's %s: status %d (missing: %d), want 404: %s", ref, got.status, want.status, got.body)
				}
				if g, w := strings.ReplaceAll(string(got.body), ref, "REF"), strings.ReplaceAll(string(want.body), wantRef, "REF"); g != w {
					t.Errorf("beta can tell acme's sandbox from a missing one:\n got %s\nwant %s", g, w)
				}
			}
		})
	}
	var list struct{ Sandboxes []struct{ ID string } }
	e.decode(t, e.must(t, e.call(t, e.beta, "GET", "/v1/sandboxes", ""), 200), &list)
	if len(list.Sandboxes) != 0 {
		t.Errorf("beta lists %d sandboxes, want 0", len(list.Sandboxes))
	}
	// The name "secret" is free for beta: names are per tenant and
	// creating one says nothing about acme's.
	e.sandbox(t, e.beta, `{"name":"secret"}`)
	// acme's sandbox and file are untouched by all of the above.
	r := e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes/"+string(a.ID)+"/files?path=f", ""), 200)
	if string(r.body) != "x" {
		t.Errorf("acme's file = %q after beta's attempts", r.body)
	}
	// Tenant tokens cannot administer.
	for _, p := range []struct{ method, path, body string }{{"POST", "/v1/tenants", `{"name":"x"}`}, {"GET", "/v1/tenants", ""}, {"POST", "/v1/tokens", `{"tenant":"acme"}`}, {"GET", "/metrics", ""}} {
		if r := e.call(t, e.beta, p.method, p.path, p.body); r.status != 403 {
			t.Errorf("%s %s as tenant: %d, want 403", p.method, p.path, r.status)
		}
	}
}
