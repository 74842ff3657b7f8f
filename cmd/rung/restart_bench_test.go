package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// BenchmarkRestartAdopt is a daemon restart after kill -9 with N sandboxes
// whose containers run (RUNG_BENCH_ADOPT, default 100; issue 12's target:
// serving again within 1 s with all of them adopted). Each round kills the
// daemon outright and times a new `rung serve` from its start until it
// accepts connections; adoption happens before it listens. It reports the
// median and worst restart and how many containers the last round adopted.
func BenchmarkRestartAdopt(b *testing.B) {
	n := 100
	if v, err := strconv.Atoi(os.Getenv("RUNG_BENCH_ADOPT")); err == nil && v > 0 {
		n = v
	}
	bin := rungBinary(b)
	data := b.TempDir()
	p := startServe(b, bin, data)
	defer func() { p.stop(b) }() // the last daemon started
	c := client.New(p.addr, client.WithToken(p.token))
	ids := make(chan string, n)
	for range n {
		sb, err := c.Create(b.Context(), client.CreateRequest{Size: rung.Size{Preset: "lite"}})
		if err != nil {
			b.Fatal(err)
		}
		ids <- string(sb.ID)
	}
	close(ids)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for id := range ids {
				if _, err := c.StartContainer(b.Context(), id); err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	var lat []time.Duration
	adopted := 0
	for b.Loop() {
		p.cmd.Process.Kill()
		<-p.done
		t0 := time.Now()
		p = startServeFast(b, bin, data)
		lat = append(lat, time.Since(t0))
		adopted = strings.Count(reportLine(p.logs.String()), "sbx_")
	}
	reportLatency(b, lat)
	if os.Getenv("RUNG_BENCH_LOGS") != "" {
		b.Log(p.logs)
	}
	b.ReportMetric(float64(adopted), "adopted")
	if adopted != n {
		b.Errorf("adopted %d containers of %d; logs:\n%s", adopted, n, p.logs)
	}
}

// reportLine is the start-up reconciliation's log line: the sandboxes it
// names are the adopted ones when nothing else needed fixing.
func reportLine(logs string) string {
	for l := range strings.SplitSeq(logs, "\n") {
		if strings.Contains(l, "start-up reconciliation fixed things") {
			return l
		}
	}
	return ""
}

// startServeFast is startServe polling every millisecond, for timing a
// start: it returns once the daemon accepts connections.
func startServeFast(b *testing.B, bin, data string) *serveProc {
	p := &serveProc{addr: freeAddr(b), logs: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, "serve", "--addr", p.addr, "--data", data, "--default-image", "lite", "--no-network")
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }() // ends when the process exits
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			b.Fatalf("rung serve exited early: %s", p.logs)
		default:
		}
		if c, err := net.Dial("tcp", p.addr); err == nil {
			c.Close()
			tok, _ := os.ReadFile(filepath.Join(data, "token"))
			p.token = strings.TrimSpace(string(tok))
			return p
		}
		time.Sleep(time.Millisecond) // polling a subprocess's start-up; nothing to wait on
	}
	p.cmd.Process.Kill()
	b.Fatalf("rung serve did not come up: %s", p.logs)
	return nil
}
