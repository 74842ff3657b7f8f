package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"rung.dev/rung"
)

// The benchmarks run each path side by side with a direct connection to
// the same loopback server, so one run gives the proxy's cost:
//
//	go test -run '^$' -bench . -benchtime 2000x ./egress
//
// Per-iteration latencies are reported as p50-µs and p99-µs.

// benchSandbox is a proxy with a policy that is evaluated on every
// request (an allow rule, a header rule for the intercepted host) and a
// journal that counts.
func benchSandbox(b *testing.B) (*world, *sandbox) {
	b.Helper()
	w := newWorld(b)
	pol := rules(allow("*.example.test", "", "80,443"), deny("", "198.51.100.0/24", ""))
	// A header rule makes HTTPS to api.example.test intercepted; www is
	// passed through.
	pol.Headers = []rung.HeaderRule{{Domain: "api.example.test", Header: "X-Bench", Value: "1"}}
	var n atomic.Int64
	sb := newSandbox(b, w, pol, func(c *Config) { c.Journal = func(Event) { n.Add(1) } })
	return w, sb
}

// direct is a client that dials the upstream servers themselves.
func directClient(w *world, keepAlive bool) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(w.upCA.Certificate())
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			real := w.httpAddr
			if _, port, _ := net.SplitHostPort(addr); port == "443" {
				real = w.tlsAddr
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", real)
		},
		TLSClientConfig:     &tls.Config{RootCAs: pool},
		DisableKeepAlives:   !keepAlive,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 64,
	}}
}

// proxiedClient is a program in the sandbox: it connects to the name's
// address (known, so no lookup is timed) and the proxy takes over.
func proxiedClient(sb *sandbox, keepAlive bool) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(sb.w.upCA.Certificate())
	pool.AppendCertsFromPEM(sb.ca.CertPEM())
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, port, _ := net.SplitHostPort(addr)
			var pn uint16
			fmt.Sscan(port, &pn)
			return sb.connect(netip.AddrPortFrom(worldNames[host][0], pn))
		},
		TLSClientConfig:     &tls.Config{RootCAs: pool},
		DisableKeepAlives:   !keepAlive,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 64,
	}}
}

func fetch(b *testing.B, c *http.Client, url string) int64 {
	resp, err := c.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
	}
	return n
}

// timed runs f b.N times and reports its p50 and p99.
func timed(b *testing.B, f func()) {
	b.ReportAllocs()
	var d []time.Duration
	for b.Loop() {
		start := time.Now()
		f()
		d = append(d, time.Since(start))
	}
	slices.Sort(d)
	if len(d) > 0 {
		b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
	}
}

// BenchmarkRequest: one small request on a kept-alive connection.
func BenchmarkRequest(b *testing.B) {
	w, sb := benchSandbox(b)
	cases := []struct {
		name string
		c    *http.Client
		url  string
	}{
		{"direct-http", directClient(w, true), "http://api.example.test/small"},
		{"proxy-http", proxiedClient(sb, true), "http://api.example.test/small"},
		{"direct-https", directClient(w, true), "https://api.example.test/small"},
		{"proxy-https-intercepted", proxiedClient(sb, true), "https://api.example.test/small"},
		{"proxy-https-passthrough", proxiedClient(sb, true), "https://www.example.test/small"},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			fetch(b, tc.c, tc.url) // connect outside the timing
			timed(b, func() { fetch(b, tc.c, tc.url) })
		})
	}
}

// BenchmarkTLSConnect: a new TLS connection and one request on it.
// "warm" keeps the proxy's upstream connections; "cold" makes the proxy
// connect upstream every time too.
func BenchmarkTLSConnect(b *testing.B) {
	w, sb := benchSandbox(b)
	cases := []struct {
		name string
		c    *http.Client
		url  string
		cold bool
	}{
		{"direct", directClient(w, false), "https://api.example.test/small", false},
		{"proxy-intercepted-warm", proxiedClient(sb, false), "https://api.example.test/small", false},
		{"proxy-intercepted-cold", proxiedClient(sb, false), "https://api.example.test/small", true},
		{"proxy-passthrough", proxiedClient(sb, false), "https://www.example.test/small", false},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			fetch(b, tc.c, tc.url)
			timed(b, func() {
				if tc.cold {
					sb.p.transport.CloseIdleConnections()
				}
				fetch(b, tc.c, tc.url)
			})
		})
	}
}

// BenchmarkBulk: a 64 MiB download; MB/s compares the paths.
func BenchmarkBulk(b *testing.B) {
	w, sb := benchSandbox(b)
	const size = 64 << 20
	path := fmt.Sprintf("/bytes/%d", size)
	cases := []struct {
		name string
		c    *http.Client
		url  string
	}{
		{"direct-http", directClient(w, true), "http://api.example.test" + path},
		{"proxy-http", proxiedClient(sb, true), "http://api.example.test" + path},
		{"direct-https", directClient(w, true), "https://www.example.test" + path},
		{"proxy-https-passthrough", proxiedClient(sb, true), "https://www.example.test" + path},
		{"proxy-https-intercepted", proxiedClient(sb, true), "https://api.example.test" + path},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				if n := fetch(b, tc.c, tc.url); n != size {
					b.Fatalf("got %d bytes", n)
				}
			}
		})
	}
}

// BenchmarkThroughput: small requests from many kept-alive connections
// at once through one sandbox's egress; req/s is the rate sustained.
func BenchmarkThroughput(b *testing.B) {
	w, sb := benchSandbox(b)
	cases := []struct {
		name string
		c    *http.Client
		url  string
	}{
		{"direct-http", directClient(w, true), "http://api.example.test/small"},
		{"proxy-http", proxiedClient(sb, true), "http://api.example.test/small"},
		{"proxy-https-intercepted", proxiedClient(sb, true), "https://api.example.test/small"},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.SetParallelism(8)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					fetch(b, tc.c, tc.url)
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}
