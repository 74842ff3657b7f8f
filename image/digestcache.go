package image

import "sync"

// digestCache keeps what was read from an image's layers by the image's
// digest: a digest's layers never change, so neither does what they
// hold. Past maxN values, or maxBytes of them by the sizes put gives, it
// starts over. It is safe for concurrent use.
type digestCache[T any] struct {
	maxN, maxBytes int // 0: no bound on bytes

	mu    sync.Mutex // guards the fields below
	byDig map[string]T
	bytes int
}

// get returns the value kept for digest.
func (c *digestCache[T]) get(digest string) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.byDig[digest]
	return v, ok
}

// put keeps v, of size bytes, for digest and returns it; when another
// caller put one for digest meanwhile, that one is kept and returned.
func (c *digestCache[T]) put(digest string, v T, size int) T {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.byDig[digest]; ok {
		return kept
	}
	if c.byDig == nil || len(c.byDig) >= c.maxN || (c.maxBytes > 0 && c.bytes+size > c.maxBytes) {
		c.byDig, c.bytes = map[string]T{}, 0
	}
	c.byDig[digest] = v
	c.bytes += size
	return v
}
