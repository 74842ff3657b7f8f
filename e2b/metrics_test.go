package e2b

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"rung.dev/rung/controller"
	"rung.dev/rung/shell/tools"
	"rung.dev/rung/storage"
	"rung.dev/rung/storage/storagetest"
)

// TestMetricsWithoutContainer: a running sandbox that has no container
// gets one sample of now with no CPU or memory used; on a pool that
// keeps no quotas its disk use is -1 (unknown), not an error; a window
// that ends before now has none; a paused one has none.
func TestMetricsWithoutContainer(t *testing.T) {
	e := newEnvdEnvWith(t, controller.Config{Tools: tools.All(),
		Pool: storagetest.NewTestPoolConfig(t, storage.PoolConfig{Quotas: storage.QuotaOff})})
	get := func(q string) []metricOut {
		t.Helper()
		status, b := e.api(t, "GET", "/sandboxes/"+string(e.sandbox)+"/metrics"+q)
		if status != http.StatusOK {
			t.Fatalf("metrics%s: %d %s", q, status, b)
		}
		var out []metricOut
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("metrics%s: %s: %v", q, b, err)
		}
		return out
	}
	before := time.Now().Add(-time.Second)
	now := get("")
	if len(now) != 1 || now[0].DiskUsed != -1 || now[0].CPUUsedPct != 0 || now[0].MemUsed != 0 || now[0].MemTotal <= 0 ||
		now[0].Timestamp.Before(before) {
		t.Errorf("metrics of a sandbox without a container, on a pool without quotas: %+v, want one sample of now, disk -1", now)
	}
	if past := get(fmt.Sprintf("?start=%d&end=%d", before.Unix()-600, before.Unix()-300)); len(past) != 0 {
		t.Errorf("metrics of a window that ended before now: %+v", past)
	}
	// Marked paused as a pause marks it (its container's stop needs a
	// container tier, which this server has not).
	sb, err := e.ctrl.Get(t.Context(), "acme", string(e.sandbox))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.setPaused(t.Context(), "acme", sb, true); err != nil {
		t.Fatal(err)
	}
	if paused := get(""); len(paused) != 0 {
		t.Errorf("metrics of a paused sandbox: %+v, want none", paused)
	}
}
