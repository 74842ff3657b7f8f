// Package metrics is rung's Prometheus metrics: it counts what the
// controller, the API and the store report through their hooks
// ([controller.Observer], api.Config.Observe, store.Observe), reads a few
// gauges from the controller at each scrape, and serves them all in
// Prometheus's text format. It is the one package that imports
// github.com/prometheus/client_golang; no Prometheus type leaves it.
//
// Every label value comes from a small fixed set (backends, the router's
// reason classes, exit reasons, operations, route patterns, status
// codes, store methods): never a sandbox, tenant, path or command.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// Gauges is what a scrape reads from the daemon as it is now.
// *controller.Controller implements it.
type Gauges interface {
	// SandboxStates counts the sandboxes of every tenant by state.
	SandboxStates(ctx context.Context) (map[rung.State]int, error)
	// ContainersLive counts the containers that serve sandboxes.
	ContainersLive() int
	// WarmReady counts the warm spares ready to be claimed.
	WarmReady() int
	// Active counts the sandboxes with an actor (in use lately).
	Active() int
}

var _ Gauges = (*controller.Controller)(nil)

// Buckets, in seconds. Execs span the isolate tier's tens of
// microseconds to the container's minutes; container starts and snapshot
// operations are milliseconds to seconds; the store's calls tens of
// microseconds to (a queued commit) seconds.
var (
	execBuckets  = prometheus.ExponentialBuckets(25e-6, 4, 12) // 25 µs .. 105 s
	opBuckets    = prometheus.ExponentialBuckets(1e-3, 2, 14)  // 1 ms .. 8 s
	apiBuckets   = prometheus.ExponentialBuckets(1e-4, 4, 10)  // 100 µs .. 26 s
	storeBuckets = prometheus.ExponentialBuckets(2e-5, 4, 10)  // 20 µs .. 5 s
)

// Metrics holds rung's metrics. Its hooks and Handler are safe for
// concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	execs          *prometheus.CounterVec
	execSeconds    *prometheus.HistogramVec
	starts         *prometheus.CounterVec
	startSeconds   *prometheus.HistogramVec
	snapOps        *prometheus.CounterVec
	snapSeconds    *prometheus.HistogramVec
	forks          prometheus.Counter
	egress         *prometheus.CounterVec
	egressBytes    *prometheus.CounterVec
	requests       *prometheus.CounterVec
	requestSeconds *prometheus.HistogramVec
	storeSeconds   *prometheus.HistogramVec
	passSeconds    prometheus.Histogram
	sampled        prometheus.Gauge

	sandboxes  *prometheus.GaugeVec
	containers prometheus.Gauge
	spares     prometheus.Gauge
	actors     prometheus.Gauge

	mu     sync.Mutex // serializes scrapes (their refresh of the gauges, then the gather); guards gauges
	gauges Gauges     // nil until Watch: the scrape-time gauges stay 0
	prom   http.Handler
}

// New returns the metrics, all at zero, with Go's runtime and the
// process's collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.execs = m.counterVec("rung_execs_total", "Execs that ran, by the tier that ran them (backend), the class of why (reason: checked, unsupported, requested, user, fallthrough) and how they ended (exit_reason; error when they ended without a result).", "backend", "reason", "exit_reason")
	m.execSeconds = m.histogramVec("rung_exec_duration_seconds", "Wall time of execs that ran, by backend and reason class.", execBuckets, "backend", "reason")
	m.starts = m.counterVec("rung_container_starts_total", "Sandbox containers started: cold (started for the sandbox) or warm (a spare claimed by a create).", "kind")
	m.startSeconds = m.histogramVec("rung_container_start_duration_seconds", "Container start time: cold, the start itself; warm, from the claim until the container serves the sandbox.", opBuckets, "kind")
	m.snapOps = m.counterVec("rung_snapshot_operations_total", "Snapshot operations (snapshot, fork, restore, rollback) by outcome (ok, error).", "op", "outcome")
	m.snapSeconds = m.histogramVec("rung_snapshot_operation_duration_seconds", "Snapshot operations' time, by operation.", opBuckets, "op")
	m.forks = prometheus.NewCounter(prometheus.CounterOpts{Name: "rung_forks_total", Help: "Sandboxes made by forks."})
	m.egress = m.counterVec("rung_egress_requests_total", "Egress connections, HTTP requests and DNS denials of sandboxes, by kind (connection, request, dns) and decision (allowed, denied).", "kind", "decision")
	m.egressBytes = m.counterVec("rung_egress_bytes_total", "Bytes of sandboxes' egress connections, by direction (out: sent by the sandbox, in: received) and decision.", "direction", "decision")
	m.requests = m.counterVec("rung_api_requests_total", "API requests by route pattern and status code.", "route", "code")
	m.requestSeconds = m.histogramVec("rung_api_request_duration_seconds", "API requests' time by route pattern (streams and WebSockets: their whole life).", apiBuckets, "route")
	m.storeSeconds = m.histogramVec("rung_store_operation_duration_seconds", "Metadata store calls' time by method.", storeBuckets, "op")
	m.passSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rung_usage_sample_duration_seconds", Help: "Time of one pass of the per-sandbox usage sampler.", Buckets: storeBuckets})
	m.sampled = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rung_usage_sampled_sandboxes", Help: "Sandboxes the usage sampler's last pass read."})
	m.sandboxes = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rung_sandboxes", Help: "Sandboxes of every tenant by state."}, []string{"state"})
	m.containers = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rung_containers_running", Help: "Containers serving sandboxes now (warm spares not included)."})
	m.spares = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rung_warm_spares_ready", Help: "Warm spares ready to be claimed."})
	m.actors = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rung_sandbox_actors", Help: "Sandboxes with an actor goroutine (used in the last seconds)."})
	m.reg.MustRegister(m.forks, m.passSeconds, m.sampled, m.sandboxes, m.containers, m.spares, m.actors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.prom = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

func (m *Metrics) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	m.reg.MustRegister(v)
	return v
}

func (m *Metrics) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	m.reg.MustRegister(v)
	return v
}

// Watch makes each scrape read g's gauges. Call it once, when the
// controller is open.
func (m *Metrics) Watch(g Gauges) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gauges = g
}

// WatchProcs counts the changes of GOMAXPROCS by the daemon's load
// (go_sched_gomaxprocs_threads, from Go's collector, is the count now):
// changes is read at each scrape. Call it once.
func (m *Metrics) WatchProcs(changes func() uint64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rung_gomaxprocs_changes_total",
		Help: "Changes of GOMAXPROCS the daemon made by its load: one P while lightly loaded, every P when busy."},
		func() float64 { return float64(changes()) }))
}

// Handler serves the metrics in Prometheus's text format (or
// OpenMetrics, if asked). It reads the scrape-time gauges first, under
// the request's context: a store that cannot count the sandboxes in time
// leaves their gauge as it was.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if g := m.gauges; g != nil {
			if states, err := g.SandboxStates(r.Context()); err == nil {
				m.sandboxes.Reset()
				for _, st := range []rung.State{rung.StateReady, rung.StateRunning, rung.StatePaused} {
					m.sandboxes.WithLabelValues(string(st)).Set(0) // present at 0, so rates and alerts see them
				}
				for st, n := range states {
					m.sandboxes.WithLabelValues(string(st)).Set(float64(n))
				}
			}
			m.containers.Set(float64(g.ContainersLive()))
			m.spares.Set(float64(g.WarmReady()))
			m.actors.Set(float64(g.Active()))
		}
		m.prom.ServeHTTP(w, r)
	})
}

// Controller returns the hooks the controller calls ([controller.Config].Observer).
func (m *Metrics) Controller() controller.Observer {
	return controller.Observer{Exec: m.exec, ContainerStart: m.containerStart, Snapshot: m.snapshot, Egress: m.egressEntry,
		UsagePass: m.usagePass}
}

func (m *Metrics) exec(o controller.ExecObservation) {
	exit := string(o.ExitReason)
	if exit == "" {
		exit = "error"
	}
	m.execs.WithLabelValues(string(o.Backend), o.Reason, exit).Inc()
	m.execSeconds.WithLabelValues(string(o.Backend), o.Reason).Observe(o.Duration.Seconds())
}

func (m *Metrics) containerStart(warm bool, took time.Duration) {
	kind := "cold"
	if warm {
		kind = "warm"
	}
	m.starts.WithLabelValues(kind).Inc()
	m.startSeconds.WithLabelValues(kind).Observe(took.Seconds())
}

func (m *Metrics) snapshot(o controller.SnapshotObservation) {
	outcome := "ok"
	if o.Err != nil {
		outcome = "error"
	}
	m.snapOps.WithLabelValues(o.Op, outcome).Inc()
	m.snapSeconds.WithLabelValues(o.Op).Observe(o.Duration.Seconds())
	m.forks.Add(float64(o.Forks))
}

// egressEntry counts one egress journal entry. Bytes are counted from
// connection entries only: a proxied request's bytes are part of its
// connection's, which has its own entry.
func (m *Metrics) egressEntry(typ rung.EntryType, e controller.Egress) {
	kind, decision := "connection", "allowed"
	switch {
	case typ == rung.EntryEgressRequest:
		kind = "request"
	case typ == rung.EntryEgressDenied && e.Protocol == "dns":
		kind, decision = "dns", "denied"
	case typ == rung.EntryEgressDenied && e.Method != "":
		kind, decision = "request", "denied"
	case typ == rung.EntryEgressDenied:
		decision = "denied"
	}
	m.egress.WithLabelValues(kind, decision).Inc()
	if kind == "connection" {
		m.egressBytes.WithLabelValues("out", decision).Add(float64(e.BytesOut))
		m.egressBytes.WithLabelValues("in", decision).Add(float64(e.BytesIn))
	}
}

func (m *Metrics) usagePass(took time.Duration, sandboxes int) {
	m.passSeconds.Observe(took.Seconds())
	m.sampled.Set(float64(sandboxes))
}

// API counts one API request: its route pattern ("GET
// /v1/sandboxes/{id}", never the path), status code and time (api.Config.Observe).
func (m *Metrics) API(route string, code int, took time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.requestSeconds.WithLabelValues(route).Observe(took.Seconds())
}

// Store times one store call (store.Observe).
func (m *Metrics) Store(op string, took time.Duration) {
	m.storeSeconds.WithLabelValues(op).Observe(took.Seconds())
}
