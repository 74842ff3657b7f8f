package shell

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"
)

// pipeBuf is how many bytes a pipe holds before its writer blocks, as a
// Linux pipe's default capacity.
const pipeBuf = 64 << 10

// errBrokenPipe is what a write to a pipe whose reader is gone returns.
var errBrokenPipe = syscall.EPIPE

// pipe is an in-process, buffered, blocking pipe between two goroutines
// of one exec. Closing the read end makes writes fail with EPIPE; closing
// the write end makes reads return io.EOF once drained. Cancelling the
// exec's context wakes both ends.
type pipe struct {
	mu      sync.Mutex // guards the fields below
	cond    sync.Cond
	buf     []byte // unread bytes are buf[off:]; capacity is kept across drains
	off     int
	wclosed bool
	rclosed bool
	// read is set once the reader has asked for data. When a reader
	// closes without ever reading (`echo hi | false`), writes that fit in
	// the buffer still succeed: in bash the writer almost always wins the
	// race with the reader's exit, so only a writer that would block gets
	// EPIPE.
	read   bool
	unread int  // bytes held (and dropped) after such a close
	epipe  bool // a write failed with EPIPE
	ctx    context.Context
	stop   func() bool
	x      *execSched // the exec's: a reader or writer that waits gives its run slot up
}

func newPipe(ctx context.Context, x *execSched) *pipe {
	p := &pipe{ctx: ctx, x: x}
	p.cond.L = &p.mu
	p.stop = context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	return p
}

// newPipes returns the n pipes of one pipeline, made in one allocation and
// sharing one registration with ctx: cancelling ctx wakes them all. The
// caller calls stop once the pipeline is over.
func newPipes(ctx context.Context, x *execSched, n int) (pipes []*pipe, stop func() bool) {
	ps := make([]pipe, n)
	pipes = make([]*pipe, n)
	for i := range ps {
		p := &ps[i]
		p.ctx, p.stop, p.x = ctx, noStop, x
		p.cond.L = &p.mu
		pipes[i] = p
	}
	stop = context.AfterFunc(ctx, func() {
		for _, p := range pipes {
			p.mu.Lock()
			p.cond.Broadcast()
			p.mu.Unlock()
		}
	})
	return pipes, stop
}

func noStop() bool { return false }

func (p *pipe) Read(b []byte) (int, error) {
	waited := false
	p.mu.Lock()
	defer func() {
		p.mu.Unlock()
		// The slot comes back outside the lock: the writer, which may
		// hold one, needs the lock to go on.
		p.x.unblock(p.ctx, waited)
	}()
	p.read = true
	for len(p.buf) == p.off {
		if p.wclosed || p.rclosed {
			return 0, io.EOF
		}
		if err := p.ctx.Err(); err != nil {
			return 0, err
		}
		if !waited {
			waited = p.x.block()
		}
		p.cond.Wait()
	}
	n := copy(b, p.buf[p.off:])
	p.off += n
	if p.off == len(p.buf) {
		p.buf, p.off = p.buf[:0], 0
		if p.wclosed {
			p.releaseLocked()
		}
	}
	p.cond.Broadcast()
	return n, nil
}

func (p *pipe) Write(b []byte) (int, error) {
	waited := false
	p.mu.Lock()
	defer func() {
		p.mu.Unlock()
		p.x.unblock(p.ctx, waited) // outside the lock, as in Read
	}()
	written := 0
	for len(b) > 0 {
		if p.rclosed {
			if p.read || p.unread >= pipeBuf {
				p.epipe = true
				return written, errBrokenPipe
			}
			n := min(pipeBuf-p.unread, len(b))
			p.unread += n
			b = b[n:]
			written += n
			continue
		}
		if p.wclosed {
			return written, errors.New("write to closed pipe")
		}
		if err := p.ctx.Err(); err != nil {
			return written, err
		}
		room := pipeBuf - (len(p.buf) - p.off)
		if room <= 0 {
			if !waited {
				waited = p.x.block()
			}
			p.cond.Wait()
			continue
		}
		n := min(room, len(b))
		if p.buf == nil {
			p.buf = getPipeBuf()
		}
		if p.off > 0 && len(p.buf)+n > cap(p.buf) {
			// Move the unread bytes to the front rather than grow.
			k := copy(p.buf, p.buf[p.off:])
			p.buf, p.off = p.buf[:k], 0
		}
		p.buf = append(p.buf, b[:n]...)
		b = b[n:]
		written += n
		p.cond.Broadcast()
	}
	return written, nil
}

// broken reports whether a write failed because the read end is closed.
func (p *pipe) broken() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epipe
}

func (p *pipe) closeWrite() {
	p.mu.Lock()
	p.wclosed = true
	if p.off == len(p.buf) {
		p.releaseLocked()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *pipe) closeRead() {
	p.mu.Lock()
	p.rclosed = true
	p.unread = len(p.buf) - p.off
	p.releaseLocked()
	p.cond.Broadcast()
	p.mu.Unlock()
	p.stop()
}

// releaseLocked gives the buffer back to pipeBufs once no byte in it will
// be read again. The bytes never leave the pipe (Read copies them out), so
// nothing else refers to it.
func (p *pipe) releaseLocked() {
	if p.buf != nil && cap(p.buf) <= pipeBuf {
		b := p.buf[:0]
		pipeBufs.Put(&b)
	}
	p.buf, p.off = nil, 0
}

// pipeBufs holds the buffers of finished pipes, so that a pipeline does
// not grow a new buffer for every pipe.
var pipeBufs sync.Pool

func getPipeBuf() []byte {
	if b, ok := pipeBufs.Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, 0, 4<<10)
}

// pipeReader and pipeWriter are the two ends as fd values.
type pipeReader struct{ p *pipe }
type pipeWriter struct{ p *pipe }

func (r pipeReader) Read(b []byte) (int, error)  { return r.p.Read(b) }
func (w pipeWriter) Write(b []byte) (int, error) { return w.p.Write(b) }

// idleStageWorkers holds the inboxes of parked goroutines that run
// pipeline stages. A stage runs deep in the interpreter and a tool, so a
// fresh goroutine grows its stack by copying it several times; a parked
// worker keeps its grown stack. At most cap(idleStageWorkers) wait.
var idleStageWorkers = make(chan chan func(), 8)

// goStage runs fn on a parked worker, or on a new goroutine when none is
// idle.
func goStage(fn func()) {
	select {
	case w := <-idleStageWorkers:
		w <- fn
	default:
		w := make(chan func(), 1)
		w <- fn
		go stageWorker(w)
	}
}

func stageWorker(w chan func()) {
	for fn := range w {
		fn()
		select {
		case idleStageWorkers <- w:
		default:
			return // enough workers wait already
		}
	}
}
