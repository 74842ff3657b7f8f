package egress

import (
	"sync"
	"time"

	"rung.dev/rung"
)

// bucket is a token bucket: rate tokens a second, holding at most burst.
// A nil *bucket has no limit. It is safe for concurrent use.
type bucket struct {
	rate  float64 // tokens per second
	burst float64
	now   func() time.Time

	mu     sync.Mutex // guards the fields below
	tokens float64    // may go negative: debt that reserve's callers wait out
	last   time.Time
}

func newBucket(rate, burst float64, now func() time.Time) *bucket {
	if rate <= 0 {
		return nil
	}
	if burst < 1 {
		burst = 1
	}
	return &bucket{rate: rate, burst: burst, now: now, tokens: burst, last: now()}
}

func (b *bucket) refillLocked() {
	now := b.now()
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.burst, b.tokens+d.Seconds()*b.rate)
		b.last = now
	}
}

// take takes n tokens if there are n, and reports whether it did.
func (b *bucket) take(n float64) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked()
	if b.tokens < n {
		return false
	}
	b.tokens -= n
	return true
}

// reserve takes n tokens now, into debt if need be, and returns how long
// the caller must wait before using them.
func (b *bucket) reserve(n float64) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked()
	b.tokens -= n
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// limiter holds one sandbox's limits, which [Proxy.SetPolicy] may change
// while connections are open. It is safe for concurrent use.
type limiter struct {
	now func() time.Time

	mu       sync.Mutex // guards the fields below
	cur      rung.NetworkLimits
	requests *bucket // new connections and HTTP requests; nil: no limit
	bytes    *bucket // bytes both ways; nil: no limit
	conns    int     // open connections
}

// set applies new limits. A rate that changes gets a new, full bucket.
func (l *limiter) set(n rung.NetworkLimits) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n.RequestsPerSecond != l.cur.RequestsPerSecond || l.requests == nil {
		r := float64(n.RequestsPerSecond)
		l.requests = newBucket(r, r, l.now)
	}
	if n.BytesPerSecond != l.cur.BytesPerSecond || l.bytes == nil {
		// A second's worth, and at least one read's worth, so that a
		// throttled copy moves whole buffers.
		r := float64(n.BytesPerSecond)
		l.bytes = newBucket(r, max(r, 64<<10), l.now)
	}
	l.cur = n
}

// acquireConn counts a new connection; false when MaxConnections are open.
func (l *limiter) acquireConn() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur.MaxConnections > 0 && l.conns >= l.cur.MaxConnections {
		return false
	}
	l.conns++
	return true
}

func (l *limiter) releaseConn() {
	l.mu.Lock()
	l.conns--
	l.mu.Unlock()
}

// request takes a token for a new connection or an HTTP request; false
// when the rate is exceeded.
func (l *limiter) request() bool {
	l.mu.Lock()
	b := l.requests
	l.mu.Unlock()
	return b.take(1)
}

// byteBucket returns the bucket for bytes, nil when there is no limit.
func (l *limiter) byteBucket() *bucket {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}

// limits returns the limits in force.
func (l *limiter) limits() rung.NetworkLimits {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur
}
