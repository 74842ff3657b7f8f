package api_test

import (
	"strings"
	"testing"
)

func TestBadInput(t *testing.T) {
	e := newEnv(t)
	id := string(e.sandbox(t, e.acme, `{}`).ID)
	sb := "/v1/sandboxes/" + id
	huge := `{"command":"` + strings.Repeat("x", 100<<10) + `"}`
	tests := []struct {
		name, method, path, ctype, body string
		token                           string
		status                          int
		code                            string
	}{
		{"no token", "GET", "/v1/sandboxes", "", "", "-", 401, "unauthenticated"},
		{"bad token", "GET", "/v1/sandboxes", "", "", "rung_nope", 401, "unauthenticated"},
		{"unknown endpoint", "GET", "/v1/nope", "", "", "", 404, "not_found"},
		{"malformed json", "POST", "/v1/sandboxes", "application/json", `{"name":`, "", 400, "invalid_argument"},
		{"unknown field", "POST", "/v1/sandboxes", "application/json", `{"nmae":"x"}`, "", 400, "invalid_argument"},
		{"two values", "POST", "/v1/sandboxes", "application/json", `{} {}`, "", 400, "invalid_argument"},
		{"empty body", "POST", "/v1/sandboxes", "application/json", ``, "", 400, "invalid_argument"},
		{"wrong type", "POST", "/v1/sandboxes", "application/json", `{"name":7}`, "", 400, "invalid_argument"},
		{"form content type", "POST", "/v1/sandboxes", "application/x-www-form-urlencoded", `name=x`, "", 400, "invalid_argument"},
		{"huge json", "POST", sb + "/exec", "application/json", huge, "", 413, "too_large"},
		{"huge file", "PUT", sb + "/files?path=big", "application/octet-stream", strings.Repeat("x", 2<<20), "", 413, "too_large"},
		{"invalid name", "POST", "/v1/sandboxes", "application/json", `{"name":"../etc"}`, "", 400, "invalid_argument"},
		{"upper name", "POST", "/v1/sandboxes", "application/json", `{"name":"Web"}`, "", 400, "invalid_argument"},
		{"invalid sandbox ref", "GET", "/v1/sandboxes/Bad%20Ref", "", "", "", 400, "invalid_argument"},
		{"unknown preset", "POST", "/v1/sandboxes", "application/json", `{"size":{"preset":"xl"}}`, "", 400, "invalid_argument"},
		{"negative ttl", "POST", "/v1/sandboxes", "application/json", `{"ttl_ms":-1}`, "", 400, "invalid_argument"},
		{"bad state filter", "GET", "/v1/sandboxes?state=zombie", "", "", "", 400, "invalid_argument"},
		{"bad label filter", "GET", "/v1/sandboxes?label=novalue", "", "", "", 400, "invalid_argument"},
		{"bad list cursor", "GET", "/v1/sandboxes?limit=2&after=notacursor", "", "", "", 400, "invalid_argument"},
		{"list cursor with a bad id", "GET", "/v1/sandboxes?after=123-../etc", "", "", "", 400, "invalid_argument"},
		{"negative list cursor", "GET", "/v1/sandboxes?after=-5-sbx_aaaaaaaaaaaaaaaaaaaaaaaaaa", "", "", "", 400, "invalid_argument"},
		{"dotdot", "GET", sb + "/files?path=../../etc/passwd", "", "", "", 400, "invalid_argument"},
		{"encoded dotdot", "GET", sb + "/files?path=%2e%2e/%2e%2e/etc/passwd", "", "", "", 400, "invalid_argument"},
		{"absolute host path", "GET", sb + "/files?path=/etc/passwd", "", "", "", 400, "invalid_argument"},
		{"nul", "GET", sb + "/files?path=a%00b", "", "", "", 400, "invalid_argument"},
		{"overlong", "GET", sb + "/files?path=" + strings.Repeat("a/", 2100), "", "", "", 400, "invalid_argument"},
		{"missing path", "GET", sb + "/files", "", "", "", 400, "invalid_argument"},
		{"bad mode", "PUT", sb + "/files?path=a&mode=9999", "application/octet-stream", "x", "", 400, "invalid_argument"},
		{"write dotdot", "PUT", sb + "/files?path=/workspace/../x", "application/octet-stream", "x", "", 400, "invalid_argument"},
		{"mkdir outside", "POST", sb + "/files/mkdir", "application/json", `{"path":"/etc/x"}`, "", 400, "invalid_argument"},
		{"move traversal", "POST", sb + "/files/move", "application/json", `{"from":"a","to":"../../x"}`, "", 400, "invalid_argument"},
		{"read missing", "GET", sb + "/files?path=nope", "", "", "", 404, "not_found"},
		{"read dir", "GET", sb + "/files?path=/workspace", "", "", "", 400, "invalid_argument"},
		{"rm workspace", "DELETE", sb + "/files?path=/workspace&recursive=true", "", "", "", 400, "invalid_argument"},
		{"bad recursive", "GET", sb + "/files/list?recursive=maybe", "", "", "", 400, "invalid_argument"},
		{"bad tar", "PUT", sb + "/files/tar?path=t", "application/x-tar", "this is not a tar stream, just text that is long enough to fill a header block" + strings.Repeat(".", 600), "", 400, "invalid_argument"},
		{"empty command", "POST", sb + "/exec", "application/json", `{"command":""}`, "", 400, "invalid_argument"},
		{"bad backend", "POST", sb + "/exec", "application/json", `{"command":"echo","backend":"gpu"}`, "", 400, "invalid_argument"},
		{"bad stream", "POST", sb + "/exec?stream=xml", "application/json", `{"command":"echo"}`, "", 400, "invalid_argument"},
		{"bad cwd", "POST", sb + "/exec", "application/json", `{"command":"echo","cwd":"/etc"}`, "", 400, "invalid_argument"},
		{"negative timeout", "POST", sb + "/exec", "application/json", `{"command":"echo","timeout_ms":-5}`, "", 400, "invalid_argument"},
		{"container unavailable", "POST", sb + "/exec", "application/json", `{"command":"echo","backend":"container"}`, "", 503, "unavailable"},
		{"ready without port or command", "GET", sb + "/ready", "", "", "", 400, "invalid_argument"},
		{"ready with port and command", "GET", sb + "/ready?port=80&command=true", "", "", "", 400, "invalid_argument"},
		{"ready bad port", "GET", sb + "/ready?port=http", "", "", "", 400, "invalid_argument"},
		{"ready bad interval", "GET", sb + "/ready?command=true&interval_ms=soon", "", "", "", 400, "invalid_argument"},
		{"ready interval below 10ms", "GET", sb + "/ready?command=true&interval_ms=9", "", "", "", 400, "invalid_argument"},
		{"ready interval above a minute", "GET", sb + "/ready?command=true&interval_ms=60001", "", "", "", 400, "invalid_argument"},
		{"ready negative timeout", "GET", sb + "/ready?command=true&timeout_ms=-1", "", "", "", 400, "invalid_argument"},
		{"ready without a container tier", "GET", sb + "/ready?command=true", "", "", "", 503, "unavailable"},
		{"bad after", "GET", sb + "/events?after=-1", "", "", "", 400, "invalid_argument"},
		{"bad follow", "GET", sb + "/events?follow=sometimes", "", "", "", 400, "invalid_argument"},
		{"empty effect key", "POST", sb + "/effects", "application/json", `{"key":""}`, "", 400, "invalid_argument"},
		{"string effect result", "POST", sb + "/effects", "application/json", `{"key":"k","result":"x"}`, "", 201, ""},
		{"bad tenant name", "POST", "/v1/tenants", "application/json", `{"name":"Bad Name"}`, "admin", 400, "invalid_argument"},
		{"token for unknown tenant", "POST", "/v1/tokens", "application/json", `{"tenant":"nobody"}`, "admin", 404, "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := e.acme
			switch tc.token {
			case "-":
				tok = ""
			case "admin":
				tok = e.admin
			case "":
			default:
				tok = tc.token
			}
			var body *strings.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			var r resp
			if body != nil {
				r = e.raw(t, tok, tc.method, tc.path, tc.ctype, body)
			} else {
				r = e.raw(t, tok, tc.method, tc.path, tc.ctype, nil)
			}
			if r.status != tc.status {
				t.Fatalf("%s %s: status %d, want %d: %s", tc.method, tc.path[:min(len(tc.path), 80)], r.status, tc.status, r.body)
			}
			if tc.code != "" {
				if got := errCode(t, r); got != tc.code {
					t.Errorf("code %s, want %s", got, tc.code)
				}
			}
		})
	}
}
