package tools

import (
	"bufio"
	"io"
	"sync"
)

// This file pools the tools' fixed-size I/O buffers. A tool call in the
// isolate tier lasts microseconds, so allocating (and zeroing) a fresh
// 32-96 KiB buffer per call was most of the cost of a short pipeline.
// A buffer is taken at the start of a call and given back when the call
// no longer uses it; one that was not given back is simply collected.
// Sizes are unchanged, so output chunking and read sizes are as before.

// writerPool holds *bufio.Writer of one buffer size.
type writerPool struct {
	size int
	p    sync.Pool
}

var (
	writers32K = &writerPool{size: 32 << 10}
	writers64K = &writerPool{size: 64 << 10}
	readers64K = &readerPool{size: 64 << 10}
	bytes32K   = &bytePool{size: 32 << 10}
	bytes96K   = &bytePool{size: 96 << 10}
)

// get returns an empty writer onto w.
func (wp *writerPool) get(w io.Writer) *bufio.Writer {
	if bw, ok := wp.p.Get().(*bufio.Writer); ok {
		bw.Reset(w)
		return bw
	}
	return bufio.NewWriterSize(w, wp.size)
}

// put gives bw back, dropping anything still buffered; the caller must not
// use bw afterwards.
func (wp *writerPool) put(bw *bufio.Writer) {
	if bw == nil || bw.Size() != wp.size {
		return
	}
	bw.Reset(nil)
	wp.p.Put(bw)
}

// readerPool holds *bufio.Reader of one buffer size.
type readerPool struct {
	size int
	p    sync.Pool
}

// get returns a reader over r with nothing buffered.
func (rp *readerPool) get(r io.Reader) *bufio.Reader {
	if br, ok := rp.p.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return br
	}
	return bufio.NewReaderSize(r, rp.size)
}

// put gives br back; the caller must not use br, nor any slice it
// returned, afterwards.
func (rp *readerPool) put(br *bufio.Reader) {
	if br == nil || br.Size() != rp.size {
		return
	}
	br.Reset(nil)
	rp.p.Put(br)
}

// bytePool holds byte slices of exactly one capacity.
type bytePool struct {
	size int
	p    sync.Pool
}

// get returns a slice of len and cap size; its contents are arbitrary.
func (bp *bytePool) get() *[]byte {
	if b, ok := bp.p.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, bp.size)
	return &b
}

// put gives b back unless it was resized; the caller must not use it
// afterwards.
func (bp *bytePool) put(b *[]byte) {
	if b == nil || cap(*b) != bp.size {
		return
	}
	*b = (*b)[:bp.size]
	bp.p.Put(b)
}
