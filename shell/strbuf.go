package shell

import (
	"sync/atomic"
	"unsafe"
)

// strBuf is room after a string variable's value, so that s+=x appends in
// place instead of copying s: a loop of appends is linear, not quadratic
// (20,000 appends of 16 bytes took 2.4 s as new strings, bash 0.09 s).
//
// A Go string must never change, and none does: bytes are only ever
// written past used, the end of the longest value built in the buffer so
// far, where no string reaches. A variable copied into a subshell shares
// the buffer; whichever copy appends first moves used (compare-and-swap),
// and the other one, whose value now ends before used, copies.
type strBuf struct {
	b    []byte       // the value's bytes, then room; never resliced
	used atomic.Int64 // bytes of b in some value
}

// minStrBuf is the smallest value given room to grow: short values are
// cheaper to copy than to track.
const minStrBuf = 256

// appendStr returns v.str+add, in v's buffer when v owns its end.
func (v *variable) appendStr(add string) string {
	s := v.str
	n := len(s) + len(add)
	if b := v.sbuf; b != nil && len(s) > 0 && n <= cap(b.b) &&
		unsafe.StringData(s) == unsafe.SliceData(b.b) &&
		b.used.CompareAndSwap(int64(len(s)), int64(n)) {
		copy(b.b[len(s):n], add)
		return unsafe.String(unsafe.SliceData(b.b), n)
	}
	if n < minStrBuf {
		v.sbuf = nil
		return s + add
	}
	// b.b is never resliced: copies of v in other goroutines read it.
	b := &strBuf{b: make([]byte, 2*n)}
	copy(b.b, s)
	copy(b.b[len(s):], add)
	b.used.Store(int64(n))
	v.sbuf = b
	return unsafe.String(unsafe.SliceData(b.b), n)
}

// strBytes is what v's string value holds, for the memory budget: its
// buffer's room when it has one.
func (v *variable) strBytes() int64 {
	if v.sbuf != nil && len(v.str) > 0 && unsafe.StringData(v.str) == unsafe.SliceData(v.sbuf.b) {
		return int64(cap(v.sbuf.b))
	}
	return int64(len(v.str))
}
