package egress

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// Resolver looks names up; *net.Resolver is one. network is "ip", "ip4"
// or "ip6". A name that does not exist returns a *net.DNSError with
// IsNotFound set.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Bounds on the per-sandbox tables.
const (
	maxNames  = 4096 // addresses remembered for raw TCP matching
	maxCached = 4096 // names resolved
)

// nameTable remembers, per address, the name the sandbox last looked up
// that resolved to it: raw TCP connections are matched on it. It keeps
// the newest maxNames addresses. It is safe for concurrent use.
type nameTable struct {
	mu    sync.Mutex // guards the fields below
	names map[netip.Addr]string
	order []netip.Addr // insertion order, oldest first
}

func (t *nameTable) record(name string, addrs []netip.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.names == nil {
		t.names = map[netip.Addr]string{}
	}
	for _, a := range addrs {
		a = a.Unmap()
		if _, ok := t.names[a]; !ok {
			if len(t.order) >= maxNames {
				delete(t.names, t.order[0])
				t.order = t.order[1:]
			}
			t.order = append(t.order, a)
		}
		t.names[a] = name
	}
}

func (t *nameTable) lookup(a netip.Addr) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.names[a.Unmap()]
}

// cache resolves names through a Resolver and keeps answers for ttl, so
// that the DNS server's answer to the sandbox and the proxy's own lookup
// for the same name agree. It is safe for concurrent use.
type cache struct {
	r   Resolver
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex // guards entries
	entries map[cacheKey]cacheEntry
}

type cacheKey struct{ network, host string }

type cacheEntry struct {
	addrs   []netip.Addr
	expires time.Time
}

func (c *cache) lookup(ctx context.Context, network, host string) ([]netip.Addr, error) {
	k := cacheKey{network, host}
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.addrs, nil
	}
	addrs, err := c.r.LookupNetIP(ctx, network, host)
	if err != nil {
		return nil, err
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[cacheKey]cacheEntry{}
	}
	if len(c.entries) >= maxCached {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < maxCached {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[k] = cacheEntry{addrs: addrs, expires: now.Add(c.ttl)}
	return addrs, nil
}

// flush forgets every answer (the policy changed).
func (c *cache) flush() {
	c.mu.Lock()
	c.entries = nil
	c.mu.Unlock()
}
