package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"rung.dev/rung"
)

// clock is a test clock that moves only when told.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestBucket(t *testing.T) {
	t.Parallel()
	c := &clock{now: time.Unix(1000, 0)}
	b := newBucket(2, 2, c.Now)
	if !b.take(1) || !b.take(1) || b.take(1) {
		t.Fatal("a bucket of 2 should give 2 tokens, then none")
	}
	c.advance(500 * time.Millisecond)
	if !b.take(1) || b.take(1) {
		t.Fatal("half a second at 2/s should give 1 token")
	}
	c.advance(time.Hour)
	if !b.take(2) || b.take(1) {
		t.Fatal("the bucket should hold no more than its burst")
	}
	// reserve goes into debt and says how long to wait.
	if d := b.reserve(4); d != 2*time.Second {
		t.Errorf("reserve(4) on an empty bucket at 2/s = %v, want 2s", d)
	}
	c.advance(3 * time.Second)
	if d := b.reserve(1); d != 0 {
		t.Errorf("after the debt is paid, reserve(1) = %v, want 0", d)
	}
	var none *bucket
	if !none.take(1e9) || none.reserve(1e9) != 0 {
		t.Error("a nil bucket should not limit")
	}
}

func TestMaxConnections(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	pol := rules()
	pol.Limits.MaxConnections = 1
	sb := newSandbox(t, w, pol)
	a, err := sb.connect(netip.MustParseAddrPort("203.0.113.20:7"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(a, "a\n"); err != nil {
		t.Fatal(err)
	}
	b, err := sb.connect(netip.MustParseAddrPort("203.0.113.20:7"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(b, "b\n"); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("second connection: %v, want a reset", err)
	}
	b.Close()
	ev := sb.ev.wait(t, "limited connection", func(e Event) bool { return e.Verdict == VerdictLimited })
	if !strings.Contains(ev.Message, "1 open connections (max_connections)") {
		t.Errorf("event %+v", ev)
	}
	a.Close()
	sb.ev.wait(t, "first connection's end", func(e Event) bool { return e.Kind == EventConnection && e.Verdict == VerdictAllowed })
	c, err := sb.connect(netip.MustParseAddrPort("203.0.113.20:7"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := roundTrip(c, "c\n"); err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
}

func TestRequestsPerSecond(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	clk := &clock{now: time.Unix(1000, 0)}
	pol := rules()
	pol.Limits.RequestsPerSecond = 3
	sb := newSandboxClock(t, w, pol, clk.Now)
	c, err := sb.connect(netip.MustParseAddrPort("203.0.113.10:80"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	get := func() (int, string) {
		t.Helper()
		io.WriteString(c, "GET /small HTTP/1.1\r\nHost: api.example.test\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The connection takes one token, each request one: 3 in all.
	for i := range 2 {
		if code, body := get(); code != 200 {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
	}
	code, body := get()
	if code != 429 || !strings.Contains(body, "rung: egress limit reached: 3 new connections and requests per second (requests_per_second)") {
		t.Fatalf("third request: %d %q", code, body)
	}
	// A new connection over the rate: HTTP reads a 429, other TCP a reset.
	h, err := sb.connect(netip.MustParseAddrPort("203.0.113.10:80"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	line, err := roundTrip(h, "GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n")
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 429") {
		t.Errorf("new HTTP connection: %q, %v", line, err)
	}
	raw, err := sb.connect(netip.MustParseAddrPort("203.0.113.20:7"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := roundTrip(raw, "x\n"); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("new TCP connection: %v, want a reset", err)
	}
	sb.ev.wait(t, "limited request", func(e Event) bool { return e.Kind == EventRequest && e.Verdict == VerdictLimited && e.Status == 429 })
	// A second later there are tokens again.
	clk.advance(time.Second)
	if code, body := get(); code != 200 {
		t.Fatalf("a second later: %d %q", code, body)
	}
}

// TestBytesPerSecond: a download over the byte rate is slowed, not cut,
// and its connection's event says so. (How slow is the bucket's business,
// tested above; here no time is measured.)
func TestBytesPerSecond(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	pol := rules()
	pol.Limits.BytesPerSecond = 256 << 10
	sb := newSandbox(t, w, pol)
	size := 300 << 10 // a little over the burst: one short wait
	resp, body := sb.get(fmt.Sprintf("http://api.example.test/bytes/%d", size))
	if resp.StatusCode != 200 || len(body) != size {
		t.Fatalf("got %d, %d bytes", resp.StatusCode, len(body))
	}
	ev := sb.ev.wait(t, "connection", func(e Event) bool { return e.Kind == EventConnection })
	if ev.BytesDown < int64(size) || !strings.Contains(ev.Message, "throttled") {
		t.Errorf("event %+v", ev)
	}
}

func TestSetPolicy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules())
	raw, err := sb.connect(netip.MustParseAddrPort("203.0.113.20:7"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := roundTrip(raw, "before\n"); err != nil {
		t.Fatal(err)
	}
	h, err := sb.connect(netip.MustParseAddrPort("203.0.113.11:80"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	br := bufio.NewReader(h)
	get := func() int {
		t.Helper()
		io.WriteString(h, "GET /small HTTP/1.1\r\nHost: www.example.test\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if code := get(); code != 200 {
		t.Fatalf("before: %d", code)
	}

	if err := sb.p.SetPolicy(rung.NetworkPolicy{Rules: []rung.NetworkRule{{Action: "nope"}}}); !errors.Is(err, rung.ErrInvalid) {
		t.Fatalf("SetPolicy(invalid) = %v, want ErrInvalid", err)
	}
	if err := sb.p.SetPolicy(rules(allow("api.example.test", "", ""))); err != nil {
		t.Fatal(err)
	}
	// The open raw connection finishes under the policy it started with.
	if line, err := roundTrip(raw, "after\n"); err != nil || line != "after\n" {
		t.Errorf("open connection after the swap: %q, %v", line, err)
	}
	// A new one sees the new policy.
	c, err := sb.connect(netip.MustParseAddrPort("203.0.113.20:7"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := roundTrip(c, "x\n"); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("new connection after the swap: %v, want a reset", err)
	}
	// So does the next request on a kept-alive HTTP connection.
	if code := get(); code != 403 {
		t.Errorf("request after the swap: %d, want 403", code)
	}
}
