package metrics_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/metrics"
	"rung.dev/rung/router"
)

// gauges is a fixed daemon state.
type gauges struct{ statesErr error }

func (g gauges) SandboxStates(context.Context) (map[rung.State]int, error) {
	return map[rung.State]int{rung.StateRunning: 3, rung.StateReady: 7, "creating": 1}, g.statesErr
}
func (gauges) ContainersLive() int { return 3 }
func (gauges) WarmReady() int      { return 2 }
func (gauges) Active() int         { return 4 }

// scrape returns the handler's exposition.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != 200 {
		t.Fatalf("scrape: %d %s", w.Code, w.Body)
	}
	return w.Body.String()
}

func wantLines(t *testing.T, body string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(body, "\n"+l+"\n") {
			t.Errorf("no line %q in the exposition", l)
		}
	}
}

func TestHooks(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	ob := m.Controller()
	ob.Exec(controller.ExecObservation{Backend: rung.BackendIsolate, Reason: router.ClassChecked, ExitReason: rung.ExitReasonExit, Duration: 40 * time.Microsecond})
	ob.Exec(controller.ExecObservation{Backend: rung.BackendContainer, Reason: router.ClassFallThrough, Error: "internal", Duration: time.Second})
	ob.ContainerStart(false, 120*time.Millisecond)
	ob.ContainerStart(true, 3*time.Millisecond)
	ob.Snapshot(controller.SnapshotObservation{Op: controller.OpFork, Duration: 10 * time.Millisecond, Forks: 3})
	ob.Snapshot(controller.SnapshotObservation{Op: controller.OpSnapshot, Duration: time.Millisecond, Err: errors.New("x")})
	ob.Egress(rung.EntryEgressConnection, controller.Egress{Protocol: "https", BytesIn: 1000, BytesOut: 200})
	ob.Egress(rung.EntryEgressRequest, controller.Egress{Protocol: "https", Method: "GET", BytesIn: 900})
	ob.Egress(rung.EntryEgressDenied, controller.Egress{Protocol: "dns"})
	ob.Egress(rung.EntryEgressDenied, controller.Egress{Protocol: "http", Method: "POST"})
	ob.Egress(rung.EntryEgressDenied, controller.Egress{Protocol: "tcp"})
	ob.UsagePass(300*time.Microsecond, 5)
	m.API("GET /v1/sandboxes/{id}", 404, time.Millisecond)
	m.Store("GetSandbox", 50*time.Microsecond)
	body := scrape(t, m)
	wantLines(t, body,
		`rung_execs_total{backend="isolate",exit_reason="exit",reason="checked"} 1`,
		`rung_execs_total{backend="container",exit_reason="error",reason="fallthrough"} 1`,
		`rung_exec_duration_seconds_bucket{backend="isolate",reason="checked",le="0.0001"} 1`,
		`rung_container_starts_total{kind="cold"} 1`,
		`rung_container_starts_total{kind="warm"} 1`,
		`rung_snapshot_operations_total{op="fork",outcome="ok"} 1`,
		`rung_snapshot_operations_total{op="snapshot",outcome="error"} 1`,
		`rung_forks_total 3`,
		`rung_egress_requests_total{decision="allowed",kind="connection"} 1`,
		`rung_egress_requests_total{decision="allowed",kind="request"} 1`,
		`rung_egress_requests_total{decision="denied",kind="dns"} 1`,
		`rung_egress_requests_total{decision="denied",kind="request"} 1`,
		`rung_egress_requests_total{decision="denied",kind="connection"} 1`,
		`rung_egress_bytes_total{decision="allowed",direction="in"} 1000`, // the request's bytes are its connection's
		`rung_egress_bytes_total{decision="allowed",direction="out"} 200`,
		`rung_usage_sampled_sandboxes 5`,
		`rung_usage_sample_duration_seconds_count 1`,
		`rung_api_requests_total{code="404",route="GET /v1/sandboxes/{id}"} 1`,
		`rung_store_operation_duration_seconds_count{op="GetSandbox"} 1`,
		// Without Watch the scrape-time gauges are 0.
		`rung_containers_running 0`,
	)
	if !strings.Contains(body, "go_goroutines ") || !strings.Contains(body, "process_") {
		t.Error("no Go runtime or process metrics")
	}
}

func TestGauges(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.Watch(gauges{})
	wantLines(t, scrape(t, m),
		`rung_sandboxes{state="running"} 3`, `rung_sandboxes{state="ready"} 7`, `rung_sandboxes{state="creating"} 1`,
		`rung_sandboxes{state="paused"} 0`,
		`rung_containers_running 3`, `rung_warm_spares_ready 2`, `rung_sandbox_actors 4`)
	// A store that fails keeps the last counts rather than dropping them.
	m.Watch(gauges{statesErr: errors.New("busy")})
	wantLines(t, scrape(t, m), `rung_sandboxes{state="running"} 3`)
}
