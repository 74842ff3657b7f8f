package image

import "testing"

// The cache keeps what was put first for a digest, and starts over past
// its count or its bytes.
func TestDigestCache(t *testing.T) {
	c := digestCache[string]{maxN: 2, maxBytes: 10}
	if got := c.put("a", "first", 4); got != "first" {
		t.Fatalf("put a = %q", got)
	}
	if got := c.put("a", "second", 4); got != "first" {
		t.Errorf("put a again = %q, want the one kept", got)
	}
	c.put("b", "b", 4)
	if _, ok := c.get("a"); !ok {
		t.Fatal("a gone with two values and 8 bytes")
	}
	c.put("c", "c", 1) // a third value: starts over
	if _, ok := c.get("a"); ok {
		t.Error("a kept past maxN")
	}
	if v, ok := c.get("c"); !ok || v != "c" {
		t.Errorf("get c = %q, %v", v, ok)
	}
	c.put("d", "d", 10) // 11 bytes with c's: starts over
	if _, ok := c.get("c"); ok {
		t.Error("c kept past maxBytes")
	}
	if _, ok := c.get("d"); !ok {
		t.Error("d not kept")
	}
	n := digestCache[int]{maxN: 1} // no bound on bytes
	n.put("x", 1, 1<<40)
	if _, ok := n.get("x"); !ok {
		t.Error("x not kept without a bytes bound")
	}
}
