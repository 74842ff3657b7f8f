package e2b

import (
	"context"
	"errors"
	"sync"

	"connectrpc.com/connect"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	pb "rung.dev/rung/e2b/envdpb/process"
)

// termQueue is a PTY process's input: SendInput's bytes and Update's
// sizes, in the order the RPCs came, until the exec takes them. Like
// stdinPipe, a push never waits for the command, and at most
// maxStdinBuffer bytes wait.
type termQueue struct {
	mu      sync.Mutex // guards the fields below
	items   []controller.TermInput
	bytes   int
	closed  bool
	changed chan struct{} // closed and replaced at each change
}

func newTermQueue() *termQueue { return &termQueue{changed: make(chan struct{})} }

// push queues m. Errors: errStdinClosed once the process has ended;
// ErrLimit past maxStdinBuffer.
func (q *termQueue) push(m controller.TermInput) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return errStdinClosed
	case q.bytes+len(m.Data) > maxStdinBuffer:
		return rung.Errorf(rung.ErrLimit, "more than %d bytes of input wait for the terminal to take them", maxStdinBuffer)
	}
	q.items = append(q.items, m)
	q.bytes += len(m.Data)
	close(q.changed)
	q.changed = make(chan struct{})
	return nil
}

// close refuses further input; it is idempotent.
func (q *termQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.changed)
		q.changed = make(chan struct{})
	}
}

// feed sends the queued messages to out, in order, until ctx ends.
func (q *termQueue) feed(ctx context.Context, out chan<- controller.TermInput) {
	for {
		q.mu.Lock()
		var m controller.TermInput
		have := len(q.items) > 0
		if have {
			m = q.items[0]
			q.items = q.items[1:]
			q.bytes -= len(m.Data)
		}
		changed := q.changed
		q.mu.Unlock()
		if !have {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return
			}
		}
		select {
		case out <- m:
		case <-ctx.Done():
			return
		}
	}
}

// termSize is a PTY message's size, checked as rung's terminals are
// (1..1000 each side).
func termSize(p *pb.PTY) (rung.TermSize, error) {
	s := p.GetSize()
	if s == nil {
		return rung.TermSize{}, rung.Errorf(rung.ErrInvalid, "pty has no size")
	}
	// uint32 to int: values above MaxTermSide fail the check either way.
	size := rung.TermSize{Cols: int(min(s.GetCols(), rung.MaxTermSide+1)), Rows: int(min(s.GetRows(), rung.MaxTermSide+1))}
	return size, size.Check()
}

// ptyOf finds the PTY process sel names: a process without a terminal is
// failed_precondition, as envd answers.
func (p *processService) ptyOf(ctx context.Context, sandbox string, sel *pb.ProcessSelector) (*termQueue, error) {
	pr, err := p.s.procs.find(sandbox, sel)
	if err != nil {
		return nil, p.s.rpcError(ctx, err)
	}
	if pr.term == nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("the process has no PTY"))
	}
	return pr.term, nil
}

// Update resizes a PTY; the command gets SIGWINCH, after the input sent
// before the resize and before the input sent after it.
func (p *processService) Update(ctx context.Context, req *connect.Request[pb.UpdateRequest]) (*connect.Response[pb.UpdateResponse], error) {
	c, err := p.s.envdCaller(ctx, req.Header())
	if err != nil {
		return nil, p.s.rpcError(ctx, err)
	}
	q, err := p.ptyOf(ctx, c.sandbox, req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if req.Msg.Pty == nil {
		return connect.NewResponse(&pb.UpdateResponse{}), nil // nothing to change
	}
	size, err := termSize(req.Msg.Pty)
	if err != nil {
		return nil, p.s.rpcError(ctx, err)
	}
	if err := q.push(controller.TermInput{Resize: &size}); err != nil {
		return nil, p.inputError(ctx, err)
	}
	return connect.NewResponse(&pb.UpdateResponse{}), nil
}

// inputError is an RPC's answer to a refused push or write.
func (p *processService) inputError(ctx context.Context, err error) error {
	if errors.Is(err, errStdinClosed) {
		return connect.NewError(connect.CodeFailedPrecondition, err)
	}
	return p.s.rpcError(ctx, err)
}
