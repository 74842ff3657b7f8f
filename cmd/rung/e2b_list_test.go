package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"rung.dev/rung/client"
	"rung.dev/rung/controller"
	"rung.dev/rung/tracing"
	"rung.dev/rung/tracing/tracingtest"
)

// TestE2BListPages pages through the E2B list as the SDK's paginator
// does (limit, then nextToken from the x-next-token header): every
// sandbox once, in creation order, with the metadata filter applied
// before the page is cut; killing the sandbox a token points at between
// pages skips nothing; a malformed token is a 400.
func TestE2BListPages(t *testing.T) {
	d, addr := startDaemonWith(t, DaemonConfig{Data: t.TempDir(), NoContainers: true})
	c := client.New(addr, client.WithToken(d.Token))
	e := e2bTenant(t, c, addr, "acme")
	var ids []string // the "even" ones, in creation order
	for i := range 7 {
		status, b := e.api("POST", "/v2/sandboxes", map[string]any{"templateID": "lite", "allow_internet_access": false,
			"metadata": map[string]string{"kind": []string{"even", "odd"}[i%2]}})
		if status != http.StatusCreated {
			t.Fatalf("create: %d %s", status, b)
		}
		var sb struct{ SandboxID string }
		json.Unmarshal(b, &sb)
		if i%2 == 0 {
			ids = append(ids, sb.SandboxID)
		}
	}
	page := func(token string) ([]string, string) {
		t.Helper()
		q := url.Values{"limit": {"2"}, "metadata": {"kind=even"}, "order": {"asc"}}
		if token != "" {
			q.Set("nextToken", token)
		}
		req, _ := http.NewRequestWithContext(t.Context(), "GET", e.base+"/e2b/api/v2/sandboxes?"+q.Encode(), nil)
		req.Header.Set("X-API-KEY", e.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("list: %d %s", resp.StatusCode, b)
		}
		var list []struct{ SandboxID string }
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatalf("list: %s: %v", b, err)
		}
		var got []string
		for _, sb := range list {
			got = append(got, sb.SandboxID)
		}
		return got, resp.Header.Get("x-next-token")
	}
	first, next := page("")
	if !slices.Equal(first, ids[:2]) || next == "" {
		t.Fatalf("first page %v, token %q; want %v and a token", first, next, ids[:2])
	}
	// The sandbox the token follows is killed: the next page still
	// starts right after it.
	if status, b := e.api("DELETE", "/sandboxes/"+ids[1], nil); status != http.StatusNoContent {
		t.Fatalf("kill: %d %s", status, b)
	}
	second, next := page(next)
	if !slices.Equal(second, ids[2:4]) || next != "" {
		t.Fatalf("second page %v, token %q; want %v and no token (the end)", second, next, ids[2:4])
	}
	status, b := e.api("GET", "/v2/sandboxes?limit=2&nextToken="+url.QueryEscape(fmt.Sprint("x", ids[0])), nil)
	if status != http.StatusBadRequest {
		t.Errorf("a malformed nextToken: %d %s, want 400", status, b)
	}

	// As E2B: newest first unless asked otherwise; started after a time
	// (inclusive), and by template.
	list := func(q string) []string {
		t.Helper()
		status, b := e.api("GET", "/v2/sandboxes?metadata=kind%3Deven&"+q, nil)
		if status != http.StatusOK {
			t.Fatalf("list ?%s: %d %s", q, status, b)
		}
		var l []struct {
			SandboxID, StartedAt string
		}
		json.Unmarshal(b, &l)
		var got []string
		for _, sb := range l {
			got = append(got, sb.SandboxID)
		}
		return got
	}
	left := []string{ids[0], ids[2], ids[3]} // ids[1] was killed
	if got := list(""); !slices.Equal(got, []string{left[2], left[1], left[0]}) {
		t.Errorf("default order %v, want newest first %v", got, []string{left[2], left[1], left[0]})
	}
	if got := list("order=asc"); !slices.Equal(got, left) {
		t.Errorf("order=asc %v, want %v", got, left)
	}
	status, b = e.api("GET", "/sandboxes/"+left[1], nil)
	var info struct{ StartedAt string }
	json.Unmarshal(b, &info)
	if got := list("order=asc&startedAfter=" + url.QueryEscape(info.StartedAt)); status != http.StatusOK || !slices.Equal(got, left[1:]) {
		t.Errorf("startedAfter %s: %v, want %v", info.StartedAt, got, left[1:])
	}
	if got := list("template=lite"); len(got) != 3 {
		t.Errorf("template lite: %v, want all three", got)
	}
	if got := list("template=unknown"); len(got) != 0 {
		t.Errorf("template unknown: %v, want none", got)
	}
	if status, _ := e.api("GET", "/v2/sandboxes?order=sideways", nil); status != http.StatusBadRequest {
		t.Errorf("order=sideways: %d, want 400", status)
	}
}

// TestE2BObserved: the E2B surface's requests are counted and traced as
// the API's are, each under its route ("e2b " and the pattern or the
// procedure), a streaming RPC included, with the status the client got.
func TestE2BObserved(t *testing.T) {
	recv := tracingtest.NewReceiver(t)
	d, addr := startDaemonWith(t, DaemonConfig{Data: t.TempDir(), NoContainers: true,
		Tracing: tracing.Config{Endpoint: recv.URL, BatchTimeout: 20 * time.Millisecond}})
	c := client.New(addr, client.WithToken(d.Token))
	e := e2bTenant(t, c, addr, "acme")
	status, b := e.api("POST", "/v2/sandboxes", map[string]any{"templateID": "lite", "allow_internet_access": false})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, b)
	}
	var sb struct{ SandboxID string }
	json.Unmarshal(b, &sb)
	status, msgs, end := e.stream(sb.SandboxID, "process.Process/Start", envelope(`{"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi"],"envs":{}}}`))
	if status != http.StatusOK || len(end) != 0 || len(msgs) < 3 {
		t.Fatalf("Start: %d %v %v", status, msgs, end)
	}
	if status, _ := e.api("GET", "/sandboxes/sbx_aaaaaaaaaaaaaaaaaaaaaaaaaa", nil); status != http.StatusNotFound {
		t.Fatalf("get of a missing sandbox: %d", status)
	}

	m := scrape(t, addr, d.Token)
	for sample, want := range map[string]float64{
		`rung_api_requests_total{code="201",route="e2b POST /v2/sandboxes"}`:               1,
		`rung_api_requests_total{code="200",route="e2b POST /process.Process/Start"}`:      1,
		`rung_api_requests_total{code="404",route="e2b GET /sandboxes/{id}"}`:              1,
		`rung_api_request_duration_seconds_count{route="e2b POST /process.Process/Start"}`: 1,
	} {
		if m[sample] != want {
			t.Errorf("%s = %v, want %v", sample, m[sample], want)
		}
	}

	wctx, cancel := context.WithTimeout(t.Context(), time.Minute) // only catches spans that never come
	defer cancel()
	spans, err := recv.Wait(wctx, func(s []tracingtest.Span) bool {
		return len(tracingtest.Named(s, "e2b POST /process.Process/Start")) > 0 && len(tracingtest.Named(s, "e2b GET /sandboxes/{id}")) > 0
	})
	if err != nil {
		t.Fatalf("spans: %v (have %v)", err, recv.Spans())
	}
	for name, code := range map[string]int64{"e2b POST /v2/sandboxes": 201, "e2b POST /process.Process/Start": 200, "e2b GET /sandboxes/{id}": 404} {
		got := tracingtest.Named(spans, name)
		if len(got) != 1 || got[0].Kind != "SPAN_KIND_SERVER" || got[0].Attrs["http.response.status_code"] != code {
			t.Errorf("span %q: %+v, want one server span with status %d", name, got, code)
		}
	}
}

// TestE2BMetrics: getMetrics reads the samples of the sandbox's
// container (CPU over its CPUs, memory and disk against its size), in the
// window asked for, and before any container, a sample of now with no
// CPU or memory used; a bad bound is a 400.
func TestE2BMetrics(t *testing.T) {
	c, d, addr := startContainerDaemonWith(t, DaemonConfig{Usage: controller.UsageConfig{Interval: 50 * time.Millisecond}})
	e := e2bTenant(t, c, addr, "acme")
	before := time.Now().Add(-2 * time.Second)
	status, b := e.api("POST", "/v2/sandboxes", map[string]any{"templateID": "lite", "allow_internet_access": false})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, b)
	}
	var sb struct{ SandboxID string }
	json.Unmarshal(b, &sb)
	get := func(q string) []metricSample {
		t.Helper()
		status, b := e.api("GET", "/sandboxes/"+sb.SandboxID+"/metrics"+q, nil)
		if status != http.StatusOK {
			t.Fatalf("metrics%s: %d %s", q, status, b)
		}
		var out []metricSample
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("metrics%s: %s: %v", q, b, err)
		}
		return out
	}
	// No container yet (a create starts none): no process uses CPU or
	// memory, and the sample is taken now, its disk read from the pool.
	if fresh := get(""); len(fresh) != 1 || fresh[0].CPUUsedPct != 0 || fresh[0].MemUsed != 0 || fresh[0].MemTotal <= 0 ||
		fresh[0].DiskUsed < 0 || fresh[0].DiskTotal <= 0 || fresh[0].Timestamp.Before(before) || fresh[0].Timestamp.After(time.Now()) {
		t.Errorf("metrics of a sandbox without a container: %+v, want one sample of now", fresh)
	}
	if old := get(fmt.Sprintf("?start=%d&end=%d", before.Unix()-3600, before.Unix()-3000)); len(old) != 0 {
		t.Errorf("metrics an hour before the create, without a container: %+v", old)
	}
	// The container runs, then two sampler passes.
	tok, err := c.CreateToken(t.Context(), "acme", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(addr, client.WithToken(tok.Token)).StartContainer(t.Context(), sb.SandboxID); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case <-d.ctrl.UsageSampled():
		case <-time.After(time.Minute):
			t.Fatal("no usage sample within a minute")
		}
	}
	all := get("")
	if len(all) == 0 {
		t.Fatal("no metrics for a running sandbox")
	}
	m := all[len(all)-1]
	if m.CPUCount < 1 || m.MemTotal <= 0 || m.MemUsed <= 0 || m.MemUsed > m.MemTotal || m.DiskTotal <= 0 || m.DiskUsed < 0 ||
		m.Timestamp.Before(before) || m.TimestampUnix != m.Timestamp.Unix() {
		t.Errorf("last metric %+v", m)
	}
	if in := get(fmt.Sprintf("?start=%d&end=%d", before.Unix(), time.Now().Unix()+1)); len(in) == 0 {
		t.Errorf("no metrics in the window since the create")
	}
	if old := get(fmt.Sprintf("?start=%d&end=%d", before.Unix()-3600, before.Unix()-3000)); len(old) != 0 {
		t.Errorf("metrics an hour before the create: %+v", old)
	}
	if status, _ := e.api("GET", "/sandboxes/"+sb.SandboxID+"/metrics?start=yesterday", nil); status != http.StatusBadRequest {
		t.Errorf("start=yesterday: %d, want 400", status)
	}
}

// metricSample is the SDK's SandboxMetric as the wire carries it.
type metricSample struct {
	Timestamp               time.Time
	TimestampUnix, CPUCount int64
	CPUUsedPct              float64
	MemUsed, MemTotal       int64
	DiskUsed, DiskTotal     int64
}

// e2bTenant makes tenant on the daemon c administers at addr and returns
// an e2bWire speaking for it with a new E2B key.
func e2bTenant(t *testing.T, c *client.Client, addr, tenant string) e2bWire {
	t.Helper()
	if _, err := c.CreateTenant(t.Context(), tenant); err != nil {
		t.Fatal(err)
	}
	key, err := c.CreateE2BKey(t.Context(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	return e2bWire{t: t, base: "http://" + addr, key: key.Token}
}
