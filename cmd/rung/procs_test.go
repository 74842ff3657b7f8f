package main

import (
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"rung.dev/rung/internal/procs"
)

// TestServeGovernsProcs: `rung serve` adjusts its GOMAXPROCS to its load
// (internal/procs): idle, it runs on one P, and /metrics counts the
// change.
func TestServeGovernsProcs(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("$GOMAXPROCS is set: serve keeps it")
	}
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one P by default here: nothing to take back")
	}
	p := startServe(t, rungBinary(t), t.TempDir())
	defer p.stop(t)
	deadline := time.Now().Add(time.Minute)
	for {
		m := scrape(t, p.addr, p.token)
		if m["go_sched_gomaxprocs_threads"] == 1 && m["rung_gomaxprocs_changes_total"] >= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("an idle daemon still has %v Ps after a minute (%v changes)", m["go_sched_gomaxprocs_threads"], m["rung_gomaxprocs_changes_total"])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestGovernProcsFixed: with $GOMAXPROCS set, serve starts no governor.
func TestGovernProcsFixed(t *testing.T) {
	t.Setenv("GOMAXPROCS", strconv.Itoa(runtime.GOMAXPROCS(0)))
	if g := governProcs(slog.New(slog.DiscardHandler), nil); g != nil {
		g.Stop()
		t.Fatal("a governor started")
	}
	g, err := procs.Start(procs.Config{}) // ErrRunning had one started
	if err != nil {
		t.Fatalf("a governor runs: %v", err)
	}
	g.Stop()
}

// TestGovernProcsRunning: with a governor already running in the
// process, serve starts no second one and says so, without failing.
func TestGovernProcsRunning(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("$GOMAXPROCS is set: serve keeps it")
	}
	g, err := procs.Start(procs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	var log strings.Builder
	if g2 := governProcs(slog.New(slog.NewTextHandler(&log, nil)), nil); g2 != nil {
		g2.Stop()
		t.Fatal("a second governor started")
	}
	if !strings.Contains(log.String(), "GOMAXPROCS left as it is") {
		t.Errorf("log %q: want the warning", log.String())
	}
}
