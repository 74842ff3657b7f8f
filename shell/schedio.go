package shell

import (
	"context"
	"io"
)

// This file connects the scheduler (sched.go) to the places where an exec
// waits or runs tools.

// blockingReader gives the run slot up around each read of a stream that
// may wait for its writer (a client streaming stdin).
type blockingReader struct {
	r   io.Reader
	x   *execSched
	ctx context.Context
}

func (b blockingReader) Read(p []byte) (int, error) {
	released := b.x.block()
	n, err := b.r.Read(p)
	b.x.unblock(b.ctx, released)
	return n, err
}

// schedCtx is the context tools run with: its Err, which tools call every
// few thousand lines or files, is also a scheduling check point, so a tool
// that runs long yields its slot like the interpreter does.
type schedCtx struct {
	context.Context
	x *execSched
}

func (c schedCtx) Err() error {
	if c.x.due() {
		c.x.checkpoint(c.Context)
	}
	return c.Context.Err()
}

// toolContext returns r.ctx as a tool gets it: the exec's context wrapped
// once per exec, or a sub-command's own (timeout's) wrapped for the call.
func (r *runner) toolContext() context.Context {
	if r.ctx == r.sh.rootCtx {
		return r.sh.toolCtx
	}
	return schedCtx{r.ctx, r.sh.cpu}
}

// Block gives the exec's run slot up while the tool waits for something
// other than CPU (a timer, as sleep does); call the function it returns
// when the tool runs again, which may wait for a slot. On a Call the
// interpreter did not make, both do nothing.
func (c *Call) Block(ctx context.Context) (unblock func()) {
	if c.cpu == nil {
		return func() {}
	}
	released := c.cpu.block()
	return func() { c.cpu.unblock(ctx, released) }
}
