package egress

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// Plain HTTP upstream connections.
const (
	maxIdle        = 256
	maxIdlePerAddr = 16
	plainIdleTime  = 90 * time.Second
	// spliceMin is the smallest body copied socket to socket: below it the
	// two extra system calls cost more than the copy.
	spliceMin = 256 << 10
)

// plainTransport carries plain HTTP requests upstream over HTTP/1.1,
// keeping connections alive per checked address. It exists, beside
// http.Transport (which serves intercepted HTTPS), so that a large
// Content-Length body can go from the upstream socket to the sandbox's
// with splice(2) instead of through user space. It is safe for
// concurrent use.
type plainTransport struct {
	p *Proxy

	mu    sync.Mutex // guards idle and nIdle
	idle  map[netip.AddrPort][]*upConn
	nIdle int
}

// upConn is one upstream connection.
type upConn struct {
	c     net.Conn     // tracked by the proxy
	raw   *net.TCPConn // c's socket; nil when it is not TCP
	br    *bufio.Reader
	since time.Time // idle since
}

// transports routes a request by scheme: http to plain, https to
// http.Transport.
type transports struct {
	plain *plainTransport
	tls   *http.Transport
}

func (t transports) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" {
		return t.plain.RoundTrip(req)
	}
	return t.tls.RoundTrip(req)
}

// RoundTrip sends req to the address the handler checked (in its
// reqState). A kept-alive connection the server has closed meanwhile is
// noticed before use and replaced.
func (t *plainTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	st := req.Context().Value(reqKey{}).(*reqState)
	ap := netip.AddrPortFrom(st.target.IP, st.target.Port)
	uc := t.get(ap)
	if uc != nil {
		resp, err := t.exchange(uc, req, st)
		if err == nil {
			return resp, nil
		}
		uc.c.Close()
		// The server closed the kept-alive connection as the request went
		// out; a request without a body can be sent again on a new one.
		if !stale(err) || req.Body != nil && req.Body != http.NoBody {
			return nil, err
		}
	}
	c, err := t.p.dialAddr(req.Context(), ap)
	if err != nil {
		return nil, err
	}
	uc = &upConn{c: c, br: bufio.NewReaderSize(c, 32<<10)}
	if tc, ok := c.(*trackedConn); ok {
		uc.raw, _ = tc.Conn.(*net.TCPConn)
	}
	resp, err := t.exchange(uc, req, st)
	if err != nil {
		uc.c.Close()
		return nil, err
	}
	return resp, nil
}

// stale reports whether err is a kept-alive connection's end, met before
// any of the response.
func stale(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// exchange writes req and reads its response, skipping interim (1xx)
// responses other than 101. Until the response's body is done, the
// request's end (the sandbox gone) closes the connection, which unblocks
// whatever waits on it.
func (t *plainTransport) exchange(uc *upConn, req *http.Request, st *reqState) (*http.Response, error) {
	stop := context.AfterFunc(req.Context(), func() { uc.c.Close() })
	if err := req.Write(uc.c); err != nil {
		stop()
		return nil, err
	}
	for {
		resp, err := http.ReadResponse(uc.br, req)
		if err != nil {
			stop()
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			// The request's end (ServeHTTP returning) closes it.
			resp.Body = &upgraded{uc: uc}
			return resp, nil
		case resp.StatusCode < 200:
			continue
		}
		resp.Body = &upBody{t: t, uc: uc, st: st, body: resp.Body, resp: resp, stop: stop,
			reuse: !resp.Close && !req.Close, addr: netip.AddrPortFrom(st.target.IP, st.target.Port)}
		return resp, nil
	}
}

// get returns a live idle connection to ap, or nil.
func (t *plainTransport) get(ap netip.AddrPort) *upConn {
	for {
		t.mu.Lock()
		list := t.idle[ap]
		if len(list) == 0 {
			t.mu.Unlock()
			return nil
		}
		uc := list[len(list)-1]
		t.idle[ap] = list[:len(list)-1]
		t.nIdle--
		t.mu.Unlock()
		if time.Since(uc.since) < plainIdleTime && uc.alive() {
			return uc
		}
		uc.c.Close()
	}
}

// put keeps uc for the next request to ap, and lets go of connections
// idle too long.
func (t *plainTransport) put(ap netip.AddrPort, uc *upConn) {
	now := time.Now()
	uc.since = now
	var drop []*upConn
	t.mu.Lock()
	if t.idle == nil {
		t.idle = map[netip.AddrPort][]*upConn{}
	}
	if t.nIdle >= maxIdle {
		for a, list := range t.idle {
			keep := list[:0]
			for _, x := range list {
				if now.Sub(x.since) < plainIdleTime {
					keep = append(keep, x)
				} else {
					drop = append(drop, x)
				}
			}
			t.nIdle -= len(list) - len(keep)
			if len(keep) == 0 {
				delete(t.idle, a)
			} else {
				t.idle[a] = keep
			}
		}
	}
	if len(t.idle[ap]) < maxIdlePerAddr && t.nIdle < maxIdle {
		t.idle[ap] = append(t.idle[ap], uc)
		t.nIdle++
	} else {
		drop = append(drop, uc)
	}
	t.mu.Unlock()
	for _, x := range drop {
		x.c.Close()
	}
}

// closeIdle closes every idle connection.
func (t *plainTransport) closeIdle() {
	t.mu.Lock()
	idle := t.idle
	t.idle, t.nIdle = nil, 0
	t.mu.Unlock()
	for _, list := range idle {
		for _, uc := range list {
			uc.c.Close()
		}
	}
}

// alive reports whether an idle connection is still open and silent: the
// server may have closed it (its keep-alive timeout) while it waited.
func (uc *upConn) alive() bool {
	if uc.br.Buffered() > 0 {
		return false // the server said something unasked
	}
	if uc.raw == nil {
		return true
	}
	rc, err := uc.raw.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = n < 0 && errors.Is(err, syscall.EAGAIN)
		return true
	})
	return err == nil && ok
}

// upBody is a response body from upstream. Read to its end, it gives the
// connection back for the next request; closed early, it closes it.
type upBody struct {
	t     *plainTransport
	uc    *upConn
	st    *reqState
	body  io.ReadCloser
	resp  *http.Response
	addr  netip.AddrPort
	stop  func() bool // stops closing the connection when the request ends
	reuse bool
	tried bool // spliced, or found not to qualify
	done  bool // the connection is given back or closed
}

func (b *upBody) Read(p []byte) (int, error) {
	if !b.tried {
		b.tried = true
		if n, ok, err := b.splice(); ok {
			b.st.down.Add(n)
			if err != nil {
				b.finish(false)
				return 0, err
			}
			b.finish(true)
			return 0, io.EOF
		}
	}
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.finish(true)
	}
	return n, err
}

// splice copies a large Content-Length body straight to the sandbox's
// socket when nothing needs to see it: what the reader holds first, then
// the rest with splice(2) through http.Server's own ReaderFrom, which
// keeps its byte count (and so keep-alive) right. ok is false when the
// body does not qualify; then nothing was read.
func (b *upBody) splice() (n int64, ok bool, err error) {
	w := b.st.spliceTo
	cl := b.resp.ContentLength
	if w == nil || b.uc.raw == nil || cl < spliceMin || b.resp.Request.Method == http.MethodHead {
		return 0, false, nil
	}
	if _, isRF := w.(io.ReaderFrom); !isRF {
		return 0, false, nil
	}
	k := min(int64(b.uc.br.Buffered()), cl)
	head, _ := b.uc.br.Peek(int(k))
	m, err := w.Write(head)
	n += int64(m)
	b.uc.br.Discard(m)
	if err != nil {
		return n, true, err
	}
	m64, err := io.Copy(w, &io.LimitedReader{R: b.uc.raw, N: cl - k})
	n += m64
	if err == nil && n < cl {
		err = io.ErrUnexpectedEOF
	}
	return n, true, err
}

// finish gives the connection back (ok, at a message boundary) or closes
// it.
func (b *upBody) finish(ok bool) {
	if b.done {
		return
	}
	b.done = true
	// stop is false when the request ended and closed the connection.
	if b.stop() && ok && b.reuse {
		b.t.put(b.addr, b.uc)
		return
	}
	b.uc.c.Close()
}

func (b *upBody) Close() error {
	if b.tried && b.done {
		return nil // spliced: the body's own reader must not read again
	}
	// Closed before its end: the connection is mid-message.
	b.finish(false)
	return b.body.Close()
}

// upgraded is a 101 response's connection, now the protocol it switched
// to.
type upgraded struct{ uc *upConn }

func (u *upgraded) Read(p []byte) (int, error)  { return u.uc.br.Read(p) }
func (u *upgraded) Write(p []byte) (int, error) { return u.uc.c.Write(p) }
func (u *upgraded) Close() error                { return u.uc.c.Close() }
