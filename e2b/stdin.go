package e2b

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"connectrpc.com/connect"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	pb "rung.dev/rung/e2b/envdpb/process"
)

// maxStdinBuffer bounds the input SendInput has queued for a command that
// has not read it yet; past it SendInput answers resource_exhausted
// rather than holding the caller or the daemon's memory.
const maxStdinBuffer = 1 << 20

// stdinPipe is a command's standard input when Start asked for one
// (stdin: true): SendInput appends to it, the exec reads it, CloseStdin
// (or the command's end) closes it. Writes never wait for the reader, so
// a command that does not read its input never holds up an RPC.
type stdinPipe struct {
	mu      sync.Mutex // guards the fields below
	buf     []byte
	closed  bool
	changed chan struct{} // closed and replaced at each change
}

func newStdinPipe() *stdinPipe { return &stdinPipe{changed: make(chan struct{})} }

// Read waits for input or for the pipe to close (then io.EOF).
func (p *stdinPipe) Read(b []byte) (int, error) {
	for {
		p.mu.Lock()
		if len(p.buf) > 0 {
			n := copy(b, p.buf)
			p.buf = p.buf[n:]
			p.mu.Unlock()
			return n, nil
		}
		if p.closed {
			p.mu.Unlock()
			return 0, io.EOF
		}
		ch := p.changed
		p.mu.Unlock()
		<-ch
	}
}

// errStdinClosed is a write after CloseStdin or after the command ended.
var errStdinClosed = errors.New("stdin is closed")

// write queues b. Errors: errStdinClosed; ErrLimit past maxStdinBuffer.
func (p *stdinPipe) write(b []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return errStdinClosed
	case len(p.buf)+len(b) > maxStdinBuffer:
		return rung.Errorf(rung.ErrLimit, "more than %d bytes of stdin wait for the command to read them", maxStdinBuffer)
	}
	p.buf = append(p.buf, b...)
	p.signalLocked()
	return nil
}

// close ends the input: Read returns what is queued, then io.EOF. It is
// idempotent.
func (p *stdinPipe) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.signalLocked()
	}
}

func (p *stdinPipe) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// stdinOf finds the process req names and its stdin. A process started
// without stdin is failed_precondition, as envd answers.
func (p *processService) stdinOf(ctx context.Context, h http.Header, sel *pb.ProcessSelector) (*stdinPipe, error) {
	c, err := p.s.envdCaller(ctx, h)
	if err != nil {
		return nil, p.s.rpcError(ctx, err)
	}
	pr, err := p.s.procs.find(c.sandbox, sel)
	if err != nil {
		return nil, p.s.rpcError(ctx, err)
	}
	if pr.stdin == nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("the process was started without stdin"))
	}
	return pr.stdin, nil
}

func (p *processService) SendInput(ctx context.Context, req *connect.Request[pb.SendInputRequest]) (*connect.Response[pb.SendInputResponse], error) {
	var in *pb.ProcessInput_Stdin
	switch i := req.Msg.GetInput().GetInput().(type) {
	case *pb.ProcessInput_Stdin:
		in = i
	case *pb.ProcessInput_Pty:
		return p.sendPTY(ctx, req.Header(), req.Msg.GetProcess(), i.Pty)
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("input has neither stdin nor pty"))
	}
	pipe, err := p.stdinOf(ctx, req.Header(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if err := pipe.write(in.Stdin); err != nil {
		if errors.Is(err, errStdinClosed) {
			return nil, connect.NewError(connect.CodeFailedPrecondition, err)
		}
		return nil, p.s.rpcError(ctx, err)
	}
	return connect.NewResponse(&pb.SendInputResponse{}), nil
}

func (p *processService) CloseStdin(ctx context.Context, req *connect.Request[pb.CloseStdinRequest]) (*connect.Response[pb.CloseStdinResponse], error) {
	pipe, err := p.stdinOf(ctx, req.Header(), req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	pipe.close()
	return connect.NewResponse(&pb.CloseStdinResponse{}), nil
}

// sendPTY types data at a PTY process's terminal.
func (p *processService) sendPTY(ctx context.Context, h http.Header, sel *pb.ProcessSelector, data []byte) (*connect.Response[pb.SendInputResponse], error) {
	c, err := p.s.envdCaller(ctx, h)
	if err != nil {
		return nil, p.s.rpcError(ctx, err)
	}
	q, err := p.ptyOf(ctx, c.sandbox, sel)
	if err != nil {
		return nil, err
	}
	if err := q.push(controller.TermInput{Data: data}); err != nil {
		return nil, p.inputError(ctx, err)
	}
	return connect.NewResponse(&pb.SendInputResponse{}), nil
}
