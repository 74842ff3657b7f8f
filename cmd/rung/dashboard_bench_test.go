package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"rung.dev/rung/client"
	"rung.dev/rung/internal/testenv"
)

// dashboardSandboxes is how many sandboxes BenchmarkDashboard creates
// first: $RUNG_BENCH_DASHBOARD, default 1000 (the target: the first page
// loads in at most 200 ms with 1,000).
func dashboardSandboxes() int {
	if n, err := strconv.Atoi(os.Getenv("RUNG_BENCH_DASHBOARD")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// BenchmarkDashboard measures the dashboard's first page, the sandboxes
// list, on a daemon holding dashboardSandboxes() sandboxes:
//
//   - browser: headless Chromium reloads the page with its cache
//     disabled and the metric is the page's own Performance API time from
//     the start of navigation to the "rung:list" mark, made once the
//     first page of the list is in the DOM (HTML, CSS, modules, the list
//     and usage calls, rendering);
//   - server: what the browser fetches for it, one request after another
//     over a keep-alive connection (the page, its stylesheet and modules,
//     GET /v1/sandboxes?limit=50 and GET /v1/usage).
func BenchmarkDashboard(b *testing.B) {
	bin := rungBinary(b)
	p := startServe(b, bin, b.TempDir())
	defer p.stop(b)
	c := client.New(p.addr, client.WithToken(p.token))
	n := dashboardSandboxes()
	createMany(b, c, n)
	base := "http://" + p.addr

	b.Run("server", func(b *testing.B) {
		hc := &http.Client{}
		paths := []string{"/", "/ui/style.css", "/ui/app.js", "/ui/dom.js", "/ui/api.js", "/ui/list.js",
			"/v1/sandboxes?limit=50", "/v1/usage"}
		var d []time.Duration
		for b.Loop() {
			t0 := time.Now()
			for _, path := range paths {
				req, _ := http.NewRequestWithContext(b.Context(), http.MethodGet, base+path, nil)
				req.Header.Set("Authorization", "Bearer "+p.token)
				res, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Fatalf("GET %s = %s", path, res.Status)
				}
			}
			d = append(d, time.Since(t0))
		}
		reportLatency(b, d)
	})

	b.Run("browser", func(b *testing.B) {
		testenv.Require(b, "chromium")
		br := startBrowser(b, 1400, 1000)
		ctx := b.Context()
		br.page(ctx, "Network.enable", nil, nil)
		br.page(ctx, "Network.setCacheDisabled", map[string]any{"cacheDisabled": true}, nil)
		br.navigate(ctx, base+"/")
		br.waitFor(ctx, "the login form", `document.querySelector("#token")`)
		tok, _ := json.Marshal(p.token)
		if err := br.eval(ctx, `sessionStorage.setItem("rung.token", `+string(tok)+`)`, nil); err != nil {
			b.Fatal(err)
		}
		var ms []float64
		for b.Loop() {
			// The old document is marked, so the wait below can only be
			// satisfied by the reloaded one.
			if err := br.eval(ctx, `window.rungOld = true`, nil); err != nil {
				b.Fatal(err)
			}
			br.page(ctx, "Page.reload", map[string]any{"ignoreCache": true}, nil)
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			v := br.waitFor(wctx, "the first page of sandboxes",
				`!window.rungOld && document.querySelectorAll("#sandbox-rows tr[data-id]").length === 50 && performance.getEntriesByName("rung:list")[0]?.startTime`)
			cancel()
			var t float64
			if err := json.Unmarshal(v, &t); err != nil {
				b.Fatalf("rung:list mark %s: %v", v, err)
			}
			ms = append(ms, t)
			if os.Getenv("RUNG_BENCH_DASHBOARD_TRACE") != "" {
				var tr any
				br.eval(ctx, `[performance.getEntriesByType("navigation")[0], ...performance.getEntriesByType("resource")].map((e) => [e.name.replace(location.origin, ""), Math.round(e.startTime), Math.round(e.requestStart), Math.round(e.responseStart), Math.round(e.responseEnd), Math.round(e.domInteractive || 0)])`, &tr)
				b.Logf("%v", tr)
			}
		}
		d := make([]time.Duration, len(ms))
		for i, t := range ms {
			d[i] = time.Duration(t * float64(time.Millisecond))
		}
		reportLatency(b, d)
		if f := br.pageFaults(); len(f) > 0 {
			b.Errorf("the page reported faults: %q", f)
		}
	})
}

// createMany creates n sandboxes with the server's defaults, four at a
// time.
func createMany(b *testing.B, c *client.Client, n int) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range 4 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := c.Create(b.Context(), client.CreateRequest{}); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		b.Fatalf("create: %v", first)
	}
}
