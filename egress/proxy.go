package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"rung.dev/rung"
)

// Defaults for [Config]'s zero fields.
const (
	defaultPeekTimeout = 300 * time.Millisecond
	defaultDialTimeout = 10 * time.Second
	defaultDNSTTL      = 30 * time.Second
	// helloTimeout bounds the wait for the rest of a ClientHello or request
	// line once its first byte came.
	helloTimeout = 10 * time.Second
)

// Config is one sandbox's egress. Listener, DNSConn and DNSListener are
// the caller's: [New] serves them and [Proxy.Close] closes them.
type Config struct {
	// Sandbox names the sandbox (its id), for logs.
	Sandbox string
	// Policy is the policy to start with; see [Proxy.SetPolicy]. Of its
	// Mode only none is consulted: then nothing resolves and nothing is
	// allowed (a gVisor sandbox's link, kept to switch on later);
	// otherwise the proxy serves whatever reaches it.
	Policy rung.NetworkPolicy

	// Listener accepts the sandbox's redirected TCP connections (the
	// sandbox's host address and proxy port); nil serves none.
	Listener net.Listener
	// DNSConn and DNSListener receive the sandbox's DNS queries over UDP
	// and TCP; nil serves none.
	DNSConn     net.PacketConn
	DNSListener net.Listener

	// CA intercepts HTTPS when a host needs it (header rules, secrets,
	// method or path rules, denials). Nil never intercepts: TLS that needs
	// it is reset instead.
	CA *CA
	// Secrets fills {{secret:NAME}} in header rules and secret
	// placeholders; nil has no secrets.
	Secrets SecretSource
	// Journal receives an [Event] per connection and per HTTP request. It
	// is called from the connection's goroutine, concurrently for
	// different connections, and must not block; nil drops events.
	Journal func(Event)
	// Logger gets operator diagnostics (never a secret); nil discards.
	Logger *slog.Logger

	// OriginalDst returns where a connection from Listener was going
	// before it was redirected; nil uses [OriginalDst]. Tests on loopback
	// supply their own.
	OriginalDst func(net.Conn) (netip.AddrPort, error)
	// Resolver resolves names for the DNS server and for the proxy's own
	// dials; nil is net.DefaultResolver.
	Resolver Resolver
	// Dial dials upstream; address is always IP:port, already checked.
	// Nil is a net.Dialer with a 10 s timeout.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// RootCAs verifies upstream servers of intercepted HTTPS; nil is the
	// host's roots.
	RootCAs *x509.CertPool
	// Forbidden are more addresses never dialed without a rule that allows
	// their CIDR (the daemon's, other sandboxes'); loopback, link-local,
	// private ranges and the host's own addresses always are.
	Forbidden []netip.Prefix
	// IPv6 says the sandbox has IPv6: AAAA queries get answers. Without
	// it they get empty ones, so programs do not try addresses they cannot
	// reach.
	IPv6 bool
	// DNSUpstream is a DNS server ("1.1.1.1:53") that queries of other
	// types (MX, TXT, SRV, …) for allowed names are forwarded to; "" gives
	// them empty answers.
	DNSUpstream string
	// PeekTimeout is how long a new connection may stay silent before it
	// is taken for raw TCP (a protocol whose server speaks first); 0 is
	// 300 ms.
	PeekTimeout time.Duration
	// DNSTTL is the TTL of DNS answers and how long the proxy keeps its
	// own lookups; 0 is 30 s.
	DNSTTL time.Duration
}

// Proxy serves one sandbox's egress. It is safe for concurrent use.
type Proxy struct {
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	policy atomic.Pointer[Policy]
	limits *limiter
	guard  addrGuard
	names  nameTable
	cache  *cache

	transport *http.Transport // upstream for intercepted HTTPS
	plain     *plainTransport // upstream for plain HTTP
	rp        *httputil.ReverseProxy
	httpSrv   *http.Server
	httpLn    *chanListener
	tlsConf   *tls.Config
	dns       []dnsServer
	// dnsSlots bounds the DNS queries being answered at once: each may wait
	// on the upstream resolver, and miekg/dns starts a goroutine per query.
	dnsSlots chan struct{}

	// ctx is the proxy's lifetime: Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // guards the fields below
	closed bool
	conns  map[net.Conn]struct{} // open connections, both sides, closed by Close
	wg     sync.WaitGroup        // goroutines and connections in flight; Add only under mu while !closed
}

// New starts serving cfg's listeners under cfg.Policy. It takes the
// listeners over: [Proxy.Close] closes them, and so does New when it
// fails. Errors wrap [rung.ErrInvalid] for an invalid policy. The caller
// must call Close.
func New(cfg Config) (*Proxy, error) {
	return newProxy(cfg, time.Now)
}

// newProxy is New with a clock (tests freeze it).
func newProxy(cfg Config, now func() time.Time) (*Proxy, error) {
	pol, err := Compile(cfg.Policy)
	if err != nil {
		closeListeners(cfg)
		return nil, err
	}
	if cfg.OriginalDst == nil {
		cfg.OriginalDst = originalDstConn
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: defaultDialTimeout}
		cfg.Dial = d.DialContext
	}
	if cfg.PeekTimeout <= 0 {
		cfg.PeekTimeout = defaultPeekTimeout
	}
	if cfg.DNSTTL <= 0 {
		cfg.DNSTTL = defaultDNSTTL
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{
		cfg:   cfg,
		log:   log.With("sandbox", cfg.Sandbox),
		now:   now,
		guard: newAddrGuard(cfg.Forbidden),
		conns: map[net.Conn]struct{}{},
		// 64 lookups in flight are more than a package manager's burst;
		// past them queries get SERVFAIL and are retried by the resolver.
		dnsSlots: make(chan struct{}, 64),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.cache = &cache{r: cfg.Resolver, ttl: cfg.DNSTTL, now: p.now}
	p.limits = &limiter{now: p.now}
	p.limits.set(pol.src.Limits)
	p.policy.Store(pol)
	p.initHTTP()
	if err := p.startDNS(); err != nil {
		p.Close()
		return nil, err
	}
	if cfg.Listener != nil {
		p.goTracked(func() { p.accept(cfg.Listener) })
	}
	return p, nil
}

// SetPolicy swaps the policy. Raw TCP and passed-through TLS connections
// already open finish under the policy they started with; every new
// connection, and every HTTP request from now on (on a new connection or
// one kept alive), sees the new one. Errors wrap [rung.ErrInvalid]; the
// old policy then stays.
func (p *Proxy) SetPolicy(np rung.NetworkPolicy) error {
	pol, err := Compile(np)
	if err != nil {
		return err
	}
	p.policy.Store(pol)
	p.limits.set(np.Limits)
	// Names denied now must not be answered from what was looked up
	// before, and pooled upstream connections were chosen under the old
	// rules.
	p.cache.flush()
	p.transport.CloseIdleConnections()
	p.plain.closeIdle()
	return nil
}

// Policy returns the policy in force.
func (p *Proxy) Policy() *Policy { return p.policy.Load() }

// Close stops the listeners, closes every open connection (the sandbox's
// and upstream) and waits for the proxy's goroutines and the last
// journal calls. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()

	p.cancel()
	if p.cfg.Listener != nil {
		p.cfg.Listener.Close()
	}
	for _, d := range p.dns {
		d.stop(p.ctx)
	}
	closeListeners(p.cfg) // what did not start serving
	if p.httpSrv != nil {
		p.httpSrv.Close()
	}
	for c := range conns {
		c.Close()
	}
	p.transport.CloseIdleConnections()
	p.plain.closeIdle()
	p.wg.Wait()
	return nil
}

// closeListeners closes cfg's listeners; closing one twice is harmless.
func closeListeners(cfg Config) {
	var cs []io.Closer
	if cfg.Listener != nil {
		cs = append(cs, cfg.Listener)
	}
	if cfg.DNSConn != nil {
		cs = append(cs, cfg.DNSConn)
	}
	if cfg.DNSListener != nil {
		cs = append(cs, cfg.DNSListener)
	}
	for _, c := range cs {
		c.Close()
	}
}

// goTracked runs f in a goroutine that Close waits for; false (and f not
// run) once the proxy is closed.
func (p *Proxy) goTracked(f func()) bool {
	if !p.enter() {
		return false
	}
	go func() {
		defer p.wg.Done()
		f()
	}()
	return true
}

// enter counts something Close must wait for; false once closed. The
// caller calls p.wg.Done when it is over.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

// track registers c to be closed by Close; false (c closed) once closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// journal hands e to the caller's journal.
func (p *Proxy) journal(e Event) {
	if p.cfg.Journal != nil {
		p.cfg.Journal(e)
	}
}

// accept serves l until it is closed. Each connection runs in its own
// goroutine, which ends with the connection.
func (p *Proxy) accept(l net.Listener) {
	backoff := time.Duration(0)
	for {
		c, err := l.Accept()
		if err != nil {
			select {
			case <-p.ctx.Done():
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				p.log.Warn("egress listener closed under the proxy", "err", err)
				return
			}
			// Out of descriptors or memory: wait, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			p.log.Warn("egress accept", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-p.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		if !p.goTracked(func() { p.serveConn(c) }) {
			c.Close()
			return
		}
	}
}

// dialAddr dials a checked address, tracking the connection.
func (p *Proxy) dialAddr(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	c, err := p.cfg.Dial(ctx, "tcp", ap.String())
	if err != nil {
		return nil, err
	}
	if !p.track(c) {
		return nil, fmt.Errorf("dial %s: %w", ap, net.ErrClosed)
	}
	return &trackedConn{Conn: c, p: p}, nil
}

// trackedConn is an upstream connection that leaves p's table on Close.
type trackedConn struct {
	net.Conn
	p    *Proxy
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.p.untrack(c.Conn) })
	return c.Conn.Close()
}

// CloseWrite half-closes a TCP connection.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// chanListener hands connections the proxy has classified to the HTTP
// server.
type chanListener struct {
	addr  net.Addr
	ch    chan net.Conn
	done  chan struct{}
	close sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// push hands c over; false when the listener is closed.
func (l *chanListener) push(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.close.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }
