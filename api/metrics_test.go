package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"rung.dev/rung/api"
	"rung.dev/rung/controller"
	"rung.dev/rung/controller/controllertest"
	"rung.dev/rung/wire"
)

// TestMetricsEndpoint: GET /metrics serves Config.Metrics to admin tokens
// only, and Config.Observe hears of every request by route pattern and
// status, never by path.
func TestMetricsEndpoint(t *testing.T) {
	c := controllertest.New(t, controller.Config{})
	admin, _, err := c.Bootstrap(t.Context(), filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(api.New(api.Config{Controller: c,
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "rung_test 1") }),
		Observe: func(route string, code int, took time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("%s %d", route, code))
		}}))
	t.Cleanup(srv.Close)
	e := &env{url: srv.URL, admin: admin}
	e.must(t, e.call(t, admin, "POST", "/v1/tenants", `{"name":"acme"}`), 201)
	var tok api.TokenResponse
	e.decode(t, e.must(t, e.call(t, admin, "POST", "/v1/tokens", `{"tenant":"acme"}`), 201), &tok)

	if r := e.call(t, "", "GET", "/metrics", ""); r.status != 401 {
		t.Errorf("GET /metrics without a token: %d, want 401", r.status)
	}
	if r := e.call(t, tok.Token, "GET", "/metrics", ""); r.status != 403 || errCode(t, r) != "permission_denied" {
		t.Errorf("GET /metrics with a tenant's token: %d %s, want 403", r.status, r.body)
	}
	if r := e.must(t, e.call(t, admin, "GET", "/metrics", ""), 200); string(r.body) != "rung_test 1\n" {
		t.Errorf("GET /metrics = %q", r.body)
	}
	sb := e.sandbox(t, tok.Token, `{"name":"web"}`)
	e.must(t, e.call(t, tok.Token, "GET", "/v1/sandboxes/"+string(sb.ID), ""), 200)
	e.must(t, e.call(t, tok.Token, "GET", "/v1/sandboxes/web", ""), 200)
	e.must(t, e.call(t, tok.Token, "GET", "/v1/nothing/here", ""), 404)

	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"POST /v1/tenants 201", "POST /v1/tokens 201", "GET /metrics 401", "GET /metrics 403", "GET /metrics 200",
		"POST /v1/sandboxes 201", "GET /v1/sandboxes/{id} 200", "GET /v1/sandboxes/{id} 200", "unmatched 404",
	}
	if !slices.Equal(seen, want) {
		t.Errorf("observed\n %q\nwant\n %q", seen, want)
	}
}

// TestMetricsOff: a server without Config.Metrics answers not_found.
func TestMetricsOff(t *testing.T) {
	e := newEnv(t)
	if r := e.call(t, e.admin, "GET", "/metrics", ""); r.status != 404 || errCode(t, r) != "not_found" {
		t.Errorf("GET /metrics on a server without metrics: %d %s", r.status, r.body)
	}
}

// TestSandboxMetricsQuery checks the usage endpoints' parameters. This
// controller has no container tier, so nothing is sampled: the samples
// of a running container are cmd/rung's TestMetricsScrape.
func TestSandboxMetricsQuery(t *testing.T) {
	e := newEnv(t)
	id := string(e.sandbox(t, e.acme, `{}`).ID)
	var m wire.SandboxMetrics
	e.decode(t, e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes/"+id+"/metrics", ""), 200), &m)
	if string(m.Sandbox) != id || len(m.Samples) != 0 {
		t.Errorf("metrics of a sandbox never sampled = %+v", m)
	}
	for _, q := range []string{"?start=1700000000&end=1700000060.5", "?start=2026-01-02T03:04:05Z", "?end=2026-01-02T03:04:05.123456789%2B02:00"} {
		e.must(t, e.call(t, e.acme, "GET", "/v1/sandboxes/"+id+"/metrics"+q, ""), 200)
	}
	for _, q := range []string{"?start=yesterday", "?end=-5", "?start=2026-01-02T00:00:00Z&end=2026-01-01T00:00:00Z"} {
		if r := e.call(t, e.acme, "GET", "/v1/sandboxes/"+id+"/metrics"+q, ""); r.status != 400 || errCode(t, r) != "invalid_argument" {
			t.Errorf("metrics%s: %d %s, want 400", q, r.status, r.body)
		}
	}
	var u wire.UsageList
	e.decode(t, e.must(t, e.call(t, e.acme, "GET", "/v1/usage", ""), 200), &u)
	if len(u.Sandboxes) != 0 {
		t.Errorf("usage without a container tier = %+v", u)
	}
}
