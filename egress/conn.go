package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// sandboxConn is one connection from the sandbox, from accept to close.
// It replays the bytes sniff read, counts bytes, applies the byte rate
// and, on Close, journals the connection's event, releases its place
// under MaxConnections and lets Proxy.Close go on.
type sandboxConn struct {
	net.Conn // as accepted
	p        *Proxy
	orig     netip.AddrPort
	start    time.Time
	prefix   []byte  // sniffed bytes not yet read; touched by the reading goroutine only
	bytes    *bucket // nil: no byte limit
	counted  bool    // holds a place under MaxConnections; set before the conn is shared
	up, down atomic.Int64
	closed   chan struct{}
	once     sync.Once

	mu sync.Mutex // guards ev
	ev Event
}

func newSandboxConn(p *Proxy, c net.Conn, orig netip.AddrPort, start time.Time) *sandboxConn {
	return &sandboxConn{
		Conn:   c,
		p:      p,
		orig:   orig,
		start:  start,
		bytes:  p.limits.byteBucket(),
		closed: make(chan struct{}),
		ev: Event{
			Time: start, Kind: EventConnection, Protocol: ProtoTCP,
			IP: orig.Addr().Unmap(), Port: orig.Port(), Rule: -1, Verdict: VerdictFailed,
		},
	}
}

// note updates the connection's event.
func (c *sandboxConn) note(f func(*Event)) {
	c.mu.Lock()
	f(&c.ev)
	c.mu.Unlock()
}

// noteChoice records a policy choice in the connection's event.
func (c *sandboxConn) noteChoice(proto Protocol, ch choice) {
	c.note(func(e *Event) {
		e.Protocol = proto
		e.Host = ch.t.Host
		if ch.t.IP.IsValid() {
			e.IP = ch.t.IP
		}
		e.Rule, e.RuleText = ch.d.Rule, ch.d.RuleText
		e.Verdict, e.Message = ch.verdict, ch.msg
	})
}

func (c *sandboxConn) Read(b []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(b, c.prefix)
		c.prefix = c.prefix[n:]
		c.up.Add(int64(n))
		return n, nil
	}
	if c.bytes != nil && len(b) > 32<<10 {
		b = b[:32<<10]
	}
	n, err := c.Conn.Read(b)
	c.up.Add(int64(n))
	if n > 0 && c.bytes != nil {
		c.wait(c.bytes.reserve(float64(n)))
	}
	return n, err
}

func (c *sandboxConn) Write(b []byte) (int, error) {
	if c.bytes == nil {
		n, err := c.Conn.Write(b)
		c.down.Add(int64(n))
		return n, err
	}
	written := 0
	for len(b) > 0 {
		chunk := b[:min(len(b), 32<<10)]
		if !c.wait(c.bytes.reserve(float64(len(chunk)))) {
			return written, net.ErrClosed
		}
		n, err := c.Conn.Write(chunk)
		written += n
		c.down.Add(int64(n))
		if err != nil {
			return written, err
		}
		b = b[n:]
	}
	return written, nil
}

// wait sleeps d unless the connection closes first (then false).
func (c *sandboxConn) wait(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	c.note(func(e *Event) {
		if e.Message == "" {
			e.Message = "throttled to the sandbox's bytes_per_second"
		}
	})
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.closed:
		return false
	}
}

// Close closes the connection once and journals it.
func (c *sandboxConn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.closed)
		err = c.Conn.Close()
		c.p.untrack(c)
		if c.counted {
			c.p.limits.releaseConn()
		}
		c.mu.Lock()
		e := c.ev
		c.mu.Unlock()
		e.BytesUp, e.BytesDown = c.up.Load(), c.down.Load()
		e.Duration = c.p.now().Sub(c.start)
		c.p.journal(e)
		c.p.wg.Done()
	})
	return err
}

// reset closes the connection with a TCP RST, so that the sandbox's
// program fails at once rather than reading an orderly end.
func (c *sandboxConn) reset() {
	if tc, ok := c.Conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// serveConn handles one accepted connection to its end.
func (p *Proxy) serveConn(raw net.Conn) {
	start := p.now()
	orig, err := p.cfg.OriginalDst(raw)
	if err != nil {
		p.log.Warn("egress connection without an original destination", "err", err)
		p.journal(Event{Time: start, Kind: EventConnection, Protocol: ProtoTCP, Rule: -1, Verdict: VerdictFailed,
			Message: "rung: the connection's original destination is unknown"})
		raw.Close()
		return
	}
	if !p.enter() { // left by c.Close
		raw.Close()
		return
	}
	c := newSandboxConn(p, raw, orig, start)
	c.counted = p.limits.acquireConn()
	if !p.track(c) {
		return
	}
	if !c.counted {
		c.note(func(e *Event) {
			e.Verdict = VerdictLimited
			e.Message = fmt.Sprintf("rung: egress limit reached: %d open connections (max_connections)", p.limits.limits().MaxConnections)
		})
		c.reset()
		return
	}
	s := sniff(raw, p.cfg.PeekTimeout, helloTimeout)
	c.prefix = s.prefix
	if !p.limits.request() {
		p.refuseRate(c, s.kind)
		return
	}
	pol := p.policy.Load()
	switch {
	case s.kind == kindTLS && s.sni != "" && checkName(normalName(s.sni)) == nil:
		p.serveTLS(c, pol, normalName(s.sni))
	case s.kind == kindHTTP:
		p.handHTTP(c, &connInfo{sc: c, orig: orig, proto: ProtoHTTP})
	default:
		p.serveRaw(c, pol)
	}
}

// refuseRate refuses a connection over requests_per_second: HTTP gets a
// 429 it can read, anything else a reset.
func (p *Proxy) refuseRate(c *sandboxConn, k kind) {
	msg := fmt.Sprintf("rung: egress limit reached: %d new connections and requests per second (requests_per_second)", p.limits.limits().RequestsPerSecond)
	c.note(func(e *Event) {
		e.Protocol = ProtoTCP
		if k == kindHTTP {
			e.Protocol, e.Status = ProtoHTTP, 429
		}
		e.Verdict, e.Message = VerdictLimited, msg
	})
	if k != kindHTTP {
		c.reset()
		return
	}
	body := msg + "\n"
	fmt.Fprintf(c.Conn, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\nX-Rung-Egress: limited\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	c.Close()
}

// serveRaw handles TCP that is neither TLS with a name nor HTTP: matched
// on the original destination and the name the sandbox looked up for it,
// spliced to the original destination.
func (p *Proxy) serveRaw(c *sandboxConn, pol *Policy) {
	defer c.Close()
	t := Target{Host: p.names.lookup(c.orig.Addr()), IP: c.orig.Addr().Unmap(), Port: c.orig.Port()}
	ch := p.choose(p.ctx, pol, t)
	c.noteChoice(ProtoTCP, ch)
	if !ch.allowed {
		c.reset()
		return
	}
	p.dialAndSplice(c, ProtoTCP, ch)
}

// serveTLS handles TLS with a server name: passed through to that name
// when nothing needs to look inside, else intercepted.
func (p *Proxy) serveTLS(c *sandboxConn, pol *Policy, sni string) {
	t := Target{Host: sni, Port: c.orig.Port()}
	ch := p.choose(p.ctx, pol, t)
	why := p.interceptReason(pol, ch)
	if why == "" {
		defer c.Close()
		c.noteChoice(ProtoTLS, ch)
		p.dialAndSplice(c, ProtoTLS, ch)
		return
	}
	if p.cfg.CA == nil {
		defer c.Close()
		if ch.allowed {
			ch.verdict, ch.msg = VerdictDenied, fmt.Sprintf("rung: egress to %s needs HTTPS interception (%s) and this sandbox has no CA", sni, why)
		}
		c.noteChoice(ProtoTLS, ch)
		c.reset()
		return
	}
	c.noteChoice(ProtoHTTPS, ch)
	if ch.allowed || pol.needsRequests(ch.t) {
		c.note(func(e *Event) {
			// The connection carries requests, each with its own event and
			// verdict.
			e.Verdict, e.Message = VerdictAllowed, "intercepted: "+why
		})
	}
	p.intercept(c, sni)
}

// interceptReason says why a TLS connection must be intercepted, "" when
// it need not be.
func (p *Proxy) interceptReason(pol *Policy, ch choice) string {
	host := ch.t.Host
	switch {
	case pol.needsRequests(ch.t):
		return "method or path rules"
	case !ch.allowed:
		return "denied, to say so in HTTP"
	}
	for _, h := range pol.headers {
		if h.domain.match(host) {
			return "header rules"
		}
	}
	if p.cfg.Secrets != nil {
		bound, err := p.cfg.Secrets.Bindings(p.ctx)
		if err != nil {
			return "secrets unavailable"
		}
		for _, s := range bound {
			if s.Placeholder != "" && s.boundTo(host) {
				return "a bound secret"
			}
		}
	}
	return ""
}

// dialAndSplice dials the chosen address and copies both ways.
func (p *Proxy) dialAndSplice(c *sandboxConn, proto Protocol, ch choice) {
	ap := netip.AddrPortFrom(ch.t.IP, ch.t.Port)
	up, err := p.dialAddr(p.ctx, ap)
	if err != nil {
		c.note(func(e *Event) {
			e.Verdict, e.Message = VerdictFailed, fmt.Sprintf("rung: egress to %s failed: cannot connect", destText(ch.t))
		})
		c.reset()
		return
	}
	defer up.Close()
	p.splice(c, up)
}

// splice copies between the sandbox and upstream until both directions
// end. Without a byte limit it copies between the TCP sockets themselves,
// so the kernel splices.
func (p *Proxy) splice(c *sandboxConn, up net.Conn) {
	if len(c.prefix) > 0 {
		n, err := up.Write(c.prefix)
		c.up.Add(int64(n))
		c.prefix = nil
		if err != nil {
			return
		}
	}
	var sandbox io.ReadWriter = c
	if c.bytes == nil {
		sandbox = c.Conn
	}
	upstream := io.ReadWriter(up)
	if tc, ok := up.(*trackedConn); ok {
		upstream = tc.Conn
	}
	var wg sync.WaitGroup
	// The upload ends when the sandbox half-closes or either side fails;
	// a failure closes both so that the download ends too.
	wg.Go(func() {
		n, err := io.Copy(upstream, sandbox)
		if c.bytes == nil {
			c.up.Add(n)
		}
		if err != nil {
			c.Close()
			up.Close()
			return
		}
		closeWrite(up)
	})
	n, err := io.Copy(sandbox, upstream)
	if c.bytes == nil {
		c.down.Add(n)
	}
	if err != nil {
		c.Close()
		up.Close()
	} else {
		closeWrite(c.Conn)
	}
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// choice is the outcome of checking a target against the policy and the
// address guard.
type choice struct {
	t       Target // with the address to dial when allowed
	d       Decision
	allowed bool
	verdict Verdict
	status  int    // for HTTP: 403 denied, 502 not resolvable
	msg     string // for the sandbox, when not allowed
}

// choose decides t. A target with an address (raw TCP, an address
// literal) is decided as it is; a name is decided, resolved and decided
// again on each address (IPv4 first), and the first address the policy
// allows and the guard lets through is chosen. A name the policy denies
// on its own is never resolved, so a denied lookup leaks nothing.
func (p *Proxy) choose(ctx context.Context, pol *Policy, t Target) choice {
	t.Host = normalName(t.Host)
	if t.IP.IsValid() {
		return p.check(pol, t)
	}
	nv, nd := pol.name(t.Host)
	if nv == nameDenied {
		// The message may name the request as well as the host.
		nd.Message = pol.deniedBy(t, nd.Rule)
		return choice{t: t, d: nd, verdict: VerdictDenied, status: 403, msg: nd.Message}
	}
	addrs, err := p.lookup(ctx, t.Host)
	if err != nil || len(addrs) == 0 {
		return choice{t: t, d: nd, verdict: VerdictFailed, status: 502,
			msg: fmt.Sprintf("rung: egress to %s failed: cannot resolve %s", destText(Target{Host: t.Host, Port: t.Port}), t.Host)}
	}
	var first choice
	for i, a := range addrs {
		t.IP = a
		ch := p.check(pol, t)
		if ch.allowed {
			return ch
		}
		if i == 0 {
			first = ch
		}
	}
	return first
}

// check decides a target with an address.
func (p *Proxy) check(pol *Policy, t Target) choice {
	d := pol.Decide(t)
	ch := choice{t: t, d: d}
	if !d.Allow {
		ch.verdict, ch.status, ch.msg = VerdictDenied, 403, d.Message
		return ch
	}
	if why := p.guard.refusal(t.IP); why != "" && !pol.explicitCIDR(t) {
		ch.verdict, ch.status, ch.msg = VerdictDenied, 403, refusedMessage(t, why)
		return ch
	}
	ch.allowed, ch.verdict = true, VerdictAllowed
	return ch
}

// lookup resolves host for a dial: IPv4 addresses, else IPv6 ones.
func (p *Proxy) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	addrs, err := p.cache.lookup(ctx, "ip4", host)
	if err == nil && len(addrs) > 0 {
		return addrs, nil
	}
	return p.cache.lookup(ctx, "ip6", host)
}
