package shell

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"rung.dev/rung"
)

// An exec's memory budget (Limits.MemoryBytes) counts the bytes the
// interpreter and its tools hold for it: variable values and arrays (see
// recount), command substitution output being collected, here-document
// bodies, and what tools reserve through [Call.Reserve] while they buffer
// input (sort, tac, jq, diff, awk arrays, sed's hold space, ...). It is
// an account kept by the code that holds the bytes, not a measure of the
// Go heap, which cannot be split by exec: garbage, and small transient
// buffers (a line being read, a pipe's 64 KiB) are not counted. Past the
// budget the exec ends with limit memory_bytes, exit status 126.
//
// A [MemoryPool], shared by the execs of a daemon, caps their budgets'
// sum; an exec draws from it in grains as it grows.

// memGrain is how much an exec takes from its pool at a time, so that
// most reservations touch only the exec's own counter.
const memGrain = 1 << 20

// memBudget is one exec's account. Safe for concurrent use.
type memBudget struct {
	max   int64
	used  atomic.Int64
	lease *Lease // nil: no pool
	sh    *shared
}

// take counts n more bytes; it reports false, without counting them,
// when they do not fit in the budget or the pool. With breach set, the
// exec then ends with the limit that was hit.
func (m *memBudget) take(n int64, breach bool) bool {
	if n <= 0 {
		m.used.Add(n)
		return true
	}
	u := m.used.Add(n)
	if u > m.max {
		m.used.Add(-n)
		if breach {
			m.sh.breach("memory_bytes", m.max)
		}
		return false
	}
	if m.lease != nil && u > m.lease.n.Load() && !m.lease.cover(u) {
		m.used.Add(-n)
		if breach {
			m.sh.breach("daemon_memory_bytes", m.lease.pool.max)
		}
		return false
	}
	return true
}

// give uncounts n bytes taken before.
func (m *memBudget) give(n int64) {
	if n == 0 {
		return
	}
	u := m.used.Add(-n)
	if m.lease != nil {
		m.lease.trim(u)
	}
}

// MemoryPool caps the bytes held by all the execs that share it (the
// daemon's in-process execs): each exec's budget draws from it as the
// exec grows, and gives everything back when the exec ends. Safe for
// concurrent use.
type MemoryPool struct {
	max  int64
	wait time.Duration

	mu   sync.Mutex // guards the fields below
	used int64
	// freed is closed, and replaced, whenever bytes come back: admissions
	// waiting for room wake up and try again.
	freed chan struct{}
}

// NewMemoryPool returns a pool of max bytes. An exec that finds no room
// to start waits up to wait for another to give some back before
// [MemoryPool.Admit] refuses it.
func NewMemoryPool(max int64, wait time.Duration) *MemoryPool {
	return &MemoryPool{max: max, wait: wait, freed: make(chan struct{})}
}

// Max returns the pool's size in bytes.
func (p *MemoryPool) Max() int64 { return p.max }

// Used returns the bytes the pool has lent now.
func (p *MemoryPool) Used() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// Lease is the part of a [MemoryPool] one exec holds. [Shell.Run] takes
// over a lease passed in its request and gives it back when it returns.
type Lease struct {
	pool *MemoryPool
	n    atomic.Int64 // bytes held; changed under pool.mu
	done atomic.Bool
}

// Admit takes the first grain for an exec about to start. When the pool
// has no room it waits (up to the pool's wait, or ctx) for other execs to
// give some back; then it fails with a *rung.LimitError for
// "daemon_memory_bytes" (rung.ErrLimit). A nil pool admits everything
// with a nil lease.
func (p *MemoryPool) Admit(ctx context.Context) (*Lease, error) {
	if p == nil {
		return nil, nil
	}
	var timeout <-chan time.Time
	for {
		p.mu.Lock()
		if p.used+memGrain <= p.max {
			p.used += memGrain
			p.mu.Unlock()
			l := &Lease{pool: p}
			l.n.Store(memGrain)
			return l, nil
		}
		freed := p.freed
		p.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(p.wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return nil, &rung.LimitError{Limit: rung.LimitDaemonMemoryBytes, Max: p.max}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// cover grows the lease to at least u bytes, in whole grains; it reports
// false when the pool has no room.
func (l *Lease) cover(u int64) bool {
	p := l.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	n := l.n.Load()
	if u <= n {
		return true
	}
	more := (u - n + memGrain - 1) / memGrain * memGrain
	if p.used+more > p.max {
		return false
	}
	p.used += more
	l.n.Store(n + more)
	return true
}

// trim gives back what the lease holds beyond u bytes and a few grains of
// slack, so that an exec that held much once does not keep it.
func (l *Lease) trim(u int64) {
	const slack = 4 * memGrain
	if l.n.Load()-u <= slack {
		return
	}
	p := l.pool
	p.mu.Lock()
	n := l.n.Load()
	keep := (u + memGrain - 1) / memGrain * memGrain
	if keep < n && n-u > slack {
		p.used -= n - keep
		l.n.Store(keep)
		p.wakeLocked()
	}
	p.mu.Unlock()
}

// Release gives the lease back to its pool. It is idempotent, and a nil
// lease does nothing.
func (l *Lease) Release() {
	if l == nil || l.done.Swap(true) {
		return
	}
	p := l.pool
	p.mu.Lock()
	p.used -= l.n.Swap(0)
	p.wakeLocked()
	p.mu.Unlock()
}

func (p *MemoryPool) wakeLocked() {
	close(p.freed)
	p.freed = make(chan struct{})
}

// Reserve counts n more bytes that the tool holds (a buffered input, a
// table it builds) against the exec's memory budget, until [Call.Release]
// or until the tool returns, when the interpreter gives back whatever the
// call still holds. When the budget has no room it ends the exec (limit
// memory_bytes, exit status 126) and returns a *rung.LimitError; the
// tool should then stop and return. Safe for concurrent use. On a Call
// the interpreter did not make (a tool's own sub-call, a test), it always
// succeeds.
func (c *Call) Reserve(n int64) error {
	if c.mem == nil || c.mem.take(n, true) {
		if c.mem != nil {
			c.held.Add(n)
		}
		return nil
	}
	return &rung.LimitError{Limit: rung.LimitMemoryBytes, Max: c.mem.max}
}

// TryReserve is [Call.Reserve] for a tool that can do with less memory
// (sort writes sorted runs to temporary files): when there is no room it
// reports false and the exec goes on.
func (c *Call) TryReserve(n int64) bool {
	if c.mem == nil {
		return true
	}
	if !c.mem.take(n, false) {
		return false
	}
	c.held.Add(n)
	return true
}

// Release gives back n bytes reserved before.
func (c *Call) Release(n int64) {
	if c.mem != nil {
		c.held.Add(-n)
		c.mem.give(n)
	}
}

// MemoryFree returns how many more bytes [Call.Reserve] could count now,
// within the exec's budget (the daemon's pool may have less). A Call the
// interpreter did not make has no bound: it returns -1.
func (c *Call) MemoryFree() int64 {
	if c.mem == nil {
		return -1
	}
	return max(0, c.mem.max-c.mem.used.Load())
}

// releaseHeld gives back what a tool still holds once it has returned.
func (c *Call) releaseHeld() {
	if n := c.held.Swap(0); n != 0 {
		c.mem.give(n)
	}
}

// ReadAll reads r to the end, like io.ReadAll, counting the buffer it
// grows against the exec's memory budget (see [Call.Reserve]) until the
// tool returns. Past the budget it stops with the *rung.LimitError, and
// the exec ends with limit memory_bytes.
func (c *Call) ReadAll(r io.Reader) ([]byte, error) {
	b := make([]byte, 0, 512)
	if err := c.Reserve(int64(cap(b))); err != nil {
		return nil, err
	}
	for {
		if len(b) == cap(b) {
			old := cap(b)
			b = append(b, 0)[:len(b)]
			if err := c.Reserve(int64(cap(b) - old)); err != nil {
				return b, err
			}
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
