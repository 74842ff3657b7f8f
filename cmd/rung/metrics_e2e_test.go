package main

import (
	"bufio"
	"errors"
	"log/slog"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/controller"
)

// scrape fetches addr's /metrics with token and returns each sample line
// as "name{labels}" -> value (labels as Prometheus's text format prints
// them: sorted by name).
func scrape(t *testing.T, addr, token string) map[string]float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMetricsScrape runs a known workload on a daemon with the container
// tier (isolate execs, container execs, a snapshot) and checks /metrics
// counts it exactly; then that the usage sampler (its interval made
// short) has samples of the running container, which another tenant
// cannot see, and `rung top` shows it.
func TestMetricsScrape(t *testing.T) {
	c, d, addr := startContainerDaemonWith(t, DaemonConfig{Usage: controller.UsageConfig{Interval: 50 * time.Millisecond}})
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{Name: "metered"})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	execs := []struct {
		req     client.ExecRequest
		backend rung.Backend
		code    int
	}{
		{client.ExecRequest{Command: "echo hi"}, rung.BackendIsolate, 0},
		{client.ExecRequest{Command: "echo a > f.txt"}, rung.BackendIsolate, 0},
		{client.ExecRequest{Command: "cat f.txt"}, rung.BackendIsolate, 0},
		{client.ExecRequest{Command: "exit 3", Backend: rung.BackendIsolate}, rung.BackendIsolate, 3},
		{client.ExecRequest{Command: "true", Backend: rung.BackendIsolate}, rung.BackendIsolate, 0},
		{client.ExecRequest{Command: "uname -s"}, rung.BackendContainer, 0},                                  // auto: not an isolate command
		{client.ExecRequest{Command: "cat f.txt", Backend: rung.BackendContainer}, rung.BackendContainer, 0}, // requested
	}
	for _, x := range execs {
		res, err := c.Exec(ctx, id, x.req)
		if err != nil {
			t.Fatalf("exec %q: %v", x.req.Command, err)
		}
		if res.Backend != x.backend || res.ExitCode != x.code {
			t.Fatalf("exec %q: backend %s exit %d, want %s %d", x.req.Command, res.Backend, res.ExitCode, x.backend, x.code)
		}
	}
	if _, err := c.Checkpoint(ctx, id); err != nil {
		t.Fatal(err)
	}

	if resp, err := http.Get("http://" + addr + "/metrics"); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != 401 {
		t.Errorf("GET /metrics without a token: %s, want 401", resp.Status)
	}
	m := scrape(t, addr, d.Token)
	want := map[string]float64{
		`rung_execs_total{backend="isolate",exit_reason="exit",reason="checked"}`:       3,
		`rung_execs_total{backend="isolate",exit_reason="exit",reason="requested"}`:     2,
		`rung_execs_total{backend="container",exit_reason="exit",reason="unsupported"}`: 1,
		`rung_execs_total{backend="container",exit_reason="exit",reason="requested"}`:   1,
		`rung_exec_duration_seconds_count{backend="isolate",reason="checked"}`:          3,
		`rung_exec_duration_seconds_count{backend="container",reason="unsupported"}`:    1,
		`rung_container_starts_total{kind="cold"}`:                                      1,
		`rung_container_start_duration_seconds_count{kind="cold"}`:                      1,
		`rung_containers_running`:                                                       1,
		`rung_sandboxes{state="running"}`:                                               1,
		`rung_sandboxes{state="ready"}`:                                                 0,
		`rung_snapshot_operations_total{op="snapshot",outcome="ok"}`:                    1,
		`rung_snapshot_operation_duration_seconds_count{op="snapshot"}`:                 1,
		`rung_api_requests_total{code="201",route="POST /v1/sandboxes"}`:                1,
		`rung_api_requests_total{code="200",route="POST /v1/sandboxes/{id}/exec"}`:      7,
		`rung_api_requests_total{code="201",route="POST /v1/sandboxes/{id}/snapshots"}`: 1,
		`rung_store_operation_duration_seconds_count{op="EndExec"}`:                     7,
		`rung_store_operation_duration_seconds_count{op="CreateSnapshot"}`:              1,
		`rung_forks_total`:       0,
		`rung_warm_spares_ready`: 0,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	// A start is a store operation of its own when it is waited for: a
	// container exec's always (2 here), an isolate exec's only when it
	// changes a file or runs long; a read-only one that ends first is
	// recorded whole with its end (EndExec, 7 above).
	if got := m[`rung_store_operation_duration_seconds_count{op="StartExec"}`]; got < 2 || got > 7 {
		t.Errorf(`rung_store_operation_duration_seconds_count{op="StartExec"} = %v, want 2 to 7`, got)
	}
	for k := range m {
		if strings.Contains(k, id) || strings.Contains(k, "metered") {
			t.Errorf("a metric names the sandbox: %s", k)
		}
	}
	// rung serve --metrics-addr: the same metrics, without a token.
	maddr, stop, err := serveMetrics(d, "127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if m2 := scrape(t, maddr, ""); m2[`rung_execs_total{backend="isolate",exit_reason="exit",reason="checked"}`] != 3 {
		t.Errorf("--metrics-addr serves different counts: %v", m2)
	}
	stop()

	// The sampler: two passes after the container runs, so that the
	// second began after it started (a bounded wait on its signal, never
	// a sleep).
	for range 2 {
		select {
		case <-d.ctrl.UsageSampled():
		case <-time.After(time.Minute):
			t.Fatal("no usage sample within a minute")
		}
	}
	u, err := c.SandboxMetrics(ctx, id, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Samples) == 0 || u.IntervalMS != 50 {
		t.Fatalf("metrics of a running sandbox: %+v", u)
	}
	last := u.Samples[len(u.Samples)-1]
	if last.CPUSeconds <= 0 || last.MemoryBytes <= 0 || last.MemoryPeakBytes < last.MemoryBytes || last.DiskBytes < 0 {
		t.Errorf("last sample %+v: want CPU time, memory, a peak at least that, disk bytes", last)
	}
	if since, err := c.SandboxMetrics(ctx, id, last.Time, time.Time{}); err != nil || len(since.Samples) == 0 || !since.Samples[0].Time.Equal(last.Time) {
		t.Errorf("samples from the last one's time: %+v, %v", since, err)
	}
	if m := scrape(t, addr, d.Token); m["rung_usage_sample_duration_seconds_count"] < 2 || m["rung_usage_sampled_sandboxes"] != 1 {
		t.Errorf("sampler metrics: %v passes, %v sandboxes", m["rung_usage_sample_duration_seconds_count"], m["rung_usage_sampled_sandboxes"])
	}
	list, err := c.Usage(ctx)
	if err != nil || len(list.Sandboxes) != 1 || string(list.Sandboxes[0].Sandbox) != id || list.Sandboxes[0].Name != "metered" {
		t.Errorf("usage list = %+v, %v", list, err)
	}

	// Another tenant sees neither the samples nor the sandbox in its list.
	other := tenantClient(t, c, addr, "other")
	if _, err := other.SandboxMetrics(ctx, id, time.Time{}, time.Time{}); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("other tenant's metrics of the sandbox: %v, want not_found", err)
	}
	if list, err := other.Usage(ctx); err != nil || len(list.Sandboxes) != 0 {
		t.Errorf("other tenant's usage list = %+v, %v", list, err)
	}

	// rung top, once, through the CLI.
	out, err := exec.CommandContext(ctx, rungBinary(t), "top", "--once", "--addr", addr, "--token", d.Token).CombinedOutput()
	if err != nil || !strings.Contains(string(out), id) || !strings.Contains(string(out), "metered") {
		t.Errorf("rung top --once: %v\n%s", err, out)
	}
}
