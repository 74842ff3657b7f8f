package api_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"rung.dev/rung/api"
	"rung.dev/rung/controller"
	"rung.dev/rung/controller/controllertest"
	"rung.dev/rung/tracing"
	"rung.dev/rung/tracing/tracingtest"
)

// TestRequestSpans: with Config.Tracer (and no Observe), every request is
// a span named after its route, with its status, the caller's tenant
// once the token is checked, and the path's sandbox only when it is a
// valid id or name; what a client sends (a method, a path, a traceparent
// whose flags say not sampled) never becomes a name or an attribute.
func TestRequestSpans(t *testing.T) {
	c := controllertest.New(t, controller.Config{})
	admin, _, err := c.Bootstrap(t.Context(), filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}
	recv := tracingtest.NewReceiver(t)
	tr, err := tracing.New(t.Context(), tracing.Config{Endpoint: recv.URL, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Config{Controller: c, Tracer: tr}))
	t.Cleanup(srv.Close)
	e := &env{url: srv.URL, admin: admin}
	e.must(t, e.call(t, admin, "POST", "/v1/tenants", `{"name":"acme"}`), 201)
	var tok api.TokenResponse
	e.decode(t, e.must(t, e.call(t, admin, "POST", "/v1/tokens", `{"tenant":"acme"}`), 201), &tok)
	sb := e.sandbox(t, tok.Token, `{"name":"web"}`)
	e.must(t, e.call(t, tok.Token, "GET", "/v1/sandboxes/web", ""), 200)
	e.must(t, e.call(t, "", "GET", "/v1/sandboxes/"+string(sb.ID), ""), 401)
	e.must(t, e.call(t, tok.Token, "GET", "/v1/sandboxes/no..such!", ""), 400)
	send := func(method, path string, h http.Header) int {
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send("BREW", "/v1/secret-path", http.Header{}); code != 404 {
		t.Errorf("BREW: %d, want 404", code)
	}
	if code := send("GET", "/v1/openapi.json", http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}}); code != 200 {
		t.Errorf("GET /v1/openapi.json: %d", code)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}

	spans := recv.Spans()
	byName := func(name string) tracingtest.Span {
		t.Helper()
		got := tracingtest.Named(spans, name)
		if len(got) == 0 {
			t.Fatalf("no span %q in %+v", name, spans)
		}
		return got[0]
	}
	if s := byName("POST /v1/sandboxes"); s.Attrs["http.response.status_code"] != int64(201) || s.Str(controller.AttrTenant) != "acme" || s.Error != "" {
		t.Errorf("create span = %+v; want 201 for tenant acme", s)
	}
	gets := tracingtest.Named(spans, "GET /v1/sandboxes/{id}")
	if len(gets) != 3 {
		t.Fatalf("GET /v1/sandboxes/{id} spans: %+v; want 3", gets)
	}
	named := gets[0]
	if named.Str(controller.AttrSandboxName) != "web" || named.Str(controller.AttrSandbox) != "" || named.Str(controller.AttrTenant) != "acme" {
		t.Errorf("span of a get by name = %+v; want the name and the tenant", named)
	}
	if s := gets[1]; s.Str(controller.AttrSandbox) != string(sb.ID) || s.Attrs["http.response.status_code"] != int64(401) || s.Str(controller.AttrTenant) != "" || s.Error != "" {
		t.Errorf("span of an unauthenticated get = %+v; want the id, 401, no tenant, not failed", s)
	}
	if s := gets[2]; s.Str(controller.AttrSandbox) != "" || s.Str(controller.AttrSandboxName) != "" || s.Attrs["http.response.status_code"] != int64(400) {
		t.Errorf("span of a get by an invalid ref = %+v; want neither id nor name", s)
	}
	if s := byName("HTTP unmatched"); s.Str("http.request.method") != "_OTHER" || s.Str("http.route") != "unmatched" || s.Attrs["http.response.status_code"] != int64(404) {
		t.Errorf("span of an unknown method and path = %+v", s)
	}
	for _, s := range spans {
		for k, v := range s.Attrs {
			if str, ok := v.(string); ok && (strings.Contains(str, "secret-path") || strings.Contains(str, "no..such") || strings.Contains(str, "BREW")) {
				t.Errorf("span %s: %s = %q, a client's text", s.Name, k, str)
			}
		}
		if strings.Contains(s.Name, "secret-path") || strings.Contains(s.Name, "BREW") {
			t.Errorf("span named %q, a client's text", s.Name)
		}
	}
	if got := tracingtest.Named(spans, "GET /v1/openapi.json"); len(got) != 0 {
		t.Errorf("a request whose traceparent says not sampled was exported: %+v", got)
	}
}
