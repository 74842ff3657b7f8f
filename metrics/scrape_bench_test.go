package metrics_test

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/controller/controllertest"
	"rung.dev/rung/metrics"
	"rung.dev/rung/store"
	"rung.dev/rung/store/sqlite"
)

// BenchmarkScrape is one GET /metrics of a daemon whose store holds
// 10,000 sandboxes (rows only: a scrape counts them by state in the
// store and touches no subvolume), after some traffic on every series
// family (issue 16's target: <= 50 ms).
func BenchmarkScrape(b *testing.B) {
	ctx := b.Context()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "rung.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	m := metrics.New()
	c := controllertest.New(b, controller.Config{Store: store.Observe(st, m.Store), Observer: m.Controller()})
	m.Watch(c)
	if err := st.CreateTenant(ctx, store.Tenant{ID: "acme"}); err != nil {
		b.Fatal(err)
	}
	states := []rung.State{rung.StateReady, rung.StateRunning, rung.StatePaused}
	now := time.Now().UTC()
	for i := range 10000 {
		sb := store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Tenant: "acme", State: states[i%3], CreatedAt: now, UpdatedAt: now}}
		if err := st.CreateSandbox(ctx, sb, 0); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 50 {
		m.API(fmt.Sprintf("GET /v1/route%d", i), 200, time.Millisecond)
	}
	h := m.Handler()
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}
