package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"rung.dev/rung"
)

// waitTimeout only catches hangs: every wait in these tests is for an
// event that is expected to happen.
const waitTimeout = 20 * time.Second

// The test world. Names resolve (through the upstream resolver) to
// documentation addresses, which the proxy's injected dialer maps to
// servers on loopback; the guard sees the documentation addresses, so
// they count as public.
var worldNames = map[string][]netip.Addr{
	"api.example.test":    {netip.MustParseAddr("203.0.113.10")},
	"www.example.test":    {netip.MustParseAddr("203.0.113.11")},
	"other.test":          {netip.MustParseAddr("203.0.113.12")},
	"echo.example.test":   {netip.MustParseAddr("203.0.113.20")},
	"rebind.example.test": {netip.MustParseAddr("127.0.0.1")},
	"meta.example.test":   {netip.MustParseAddr("169.254.169.254")},
	"db.internal.test":    {netip.MustParseAddr("10.1.2.3")},
	"mixed.example.test":  {netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("203.0.113.30")},
	"v6.example.test":     {netip.MustParseAddr("2001:db8::10")},
}

// resolver is the upstream resolver: worldNames, and NXDOMAIN for the rest.
type resolver struct {
	mu      sync.Mutex
	lookups []string // names looked up, in order
}

func (r *resolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.lookups = append(r.lookups, host)
	r.mu.Unlock()
	addrs, ok := worldNames[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		if network == "ip" || network == "ip4" && a.Is4() || network == "ip6" && a.Is6() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

func (r *resolver) lookedUp(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lookups {
		if l == name {
			return true
		}
	}
	return false
}

// world holds the upstream servers and the proxy's view of the network.
type world struct {
	t        testing.TB
	upCA     *CA // signs the upstream HTTPS servers' certificates
	httpAddr string
	tlsAddr  string
	echoAddr string
	greeter  string // a server that speaks first
	oneShot  string // an HTTP server that closes each connection after one response, unannounced
	silent   string // a server that reads and never answers
	dnsAddr  string // an upstream DNS server answering TXT
	res      *resolver

	mu     sync.Mutex
	dialed []string      // addresses the proxy dialed (documentation addresses)
	dialCh chan struct{} // closed and replaced on each dial
	got    []echoInfo    // requests the upstream servers got
}

// received returns the last request upstream got for host and path.
func (w *world) received(t testing.TB, scheme, host, path string) echoInfo {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.got) - 1; i >= 0; i-- {
		if g := w.got[i]; g.Scheme == scheme && g.Host == host && g.Path == path {
			return g
		}
	}
	t.Fatalf("upstream got no %s request for %s%s", scheme, host, path)
	return echoInfo{}
}

// echoInfo is what the upstream HTTP handler reports about a request.
type echoInfo struct {
	Scheme string      `json:"scheme"`
	Host   string      `json:"host"`
	SNI    string      `json:"sni"`
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Query  string      `json:"query"`
	Header http.Header `json:"header"`
}

// handle is every upstream HTTP server's handler. It records what it
// got, and echoes it as JSON on most paths.
func (wd *world) handle(w http.ResponseWriter, r *http.Request) {
	info := echoInfo{Scheme: "http", Host: r.Host, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone()}
	if r.TLS != nil {
		info.Scheme, info.SNI = "https", r.TLS.ServerName
	}
	wd.mu.Lock()
	wd.got = append(wd.got, info)
	wd.mu.Unlock()
	switch {
	case r.URL.Path == "/ws":
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "want upgrade", 400)
			return
		}
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		rw.Flush()
		// Echo lines until the client closes.
		for {
			line, err := rw.ReadString('\n')
			if err != nil {
				return
			}
			rw.WriteString("echo: " + line)
			rw.Flush()
		}
	case strings.HasPrefix(r.URL.Path, "/bytes/"):
		var n int
		fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/bytes/"), &n)
		w.Header().Set("Content-Length", fmt.Sprint(n))
		buf := make([]byte, 256<<10)
		for off := 0; off < n; {
			k := min(n-off, len(buf))
			for i := range k {
				buf[i] = pattern(off + i)
			}
			if _, err := w.Write(buf[:k]); err != nil {
				return
			}
			off += k
		}
	case r.URL.Path == "/small":
		w.Write([]byte("ok"))
	case r.URL.Path == "/echo-auth":
		// Echo the Authorization header, as some services do.
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		io.WriteString(w, "you sent: "+r.Header.Get("Authorization"))
	default:
		io.Copy(io.Discard, r.Body)
		json.NewEncoder(w).Encode(info)
	}
}

func newWorld(t testing.TB) *world {
	t.Helper()
	upCA, err := NewCA("upstream")
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, upCA: upCA, res: &resolver{}, dialCh: make(chan struct{})}
	w.httpAddr = serveHTTP(t, w.handle, nil)
	w.tlsAddr = serveHTTP(t, w.handle, &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
		return upCA.Leaf(h.ServerName)
	}})
	w.echoAddr = serveTCP(t, func(c net.Conn) { io.Copy(c, c) })
	w.greeter = serveTCP(t, func(c net.Conn) {
		io.WriteString(c, "220 greetings\r\n")
		io.Copy(c, c)
	})
	w.oneShot = serveTCP(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	w.silent = serveTCP(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	w.dnsAddr = serveDNSUpstream(t)
	return w
}

func serveHTTP(t testing.TB, h http.HandlerFunc, tc *tls.Config) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, TLSConfig: tc, ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if tc != nil {
			srv.ServeTLS(l, "", "")
		} else {
			srv.Serve(l)
		}
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return l.Addr().String()
}

func serveTCP(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				handle(c)
			})
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// serveDNSUpstream answers TXT queries with "upstream".
func serveDNSUpstream(t testing.TB) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(started) }, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		if q.Qtype == dns.TypeTXT {
			m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: []string{"upstream"}})
		}
		w.WriteMsg(m)
	})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ActivateAndServe()
	}()
	<-started
	t.Cleanup(func() {
		srv.Shutdown()
		<-done
	})
	return pc.LocalAddr().String()
}

// dial is the proxy's upstream dialer: documentation addresses map, by
// port, to the loopback servers; loopback itself is never dialed by a
// correct proxy, and dialing it fails the test.
func (w *world) dial(ctx context.Context, network, address string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		w.t.Errorf("proxy dialed %q, not an address", address)
		return nil, err
	}
	w.mu.Lock()
	w.dialed = append(w.dialed, address)
	close(w.dialCh)
	w.dialCh = make(chan struct{})
	w.mu.Unlock()
	if ap.Addr().IsLoopback() || ap.Addr().IsLinkLocalUnicast() {
		w.t.Errorf("proxy dialed %s", address)
		return nil, fmt.Errorf("refused by the test")
	}
	var real string
	switch ap.Port() {
	case 80:
		real = w.httpAddr
	case 443:
		real = w.tlsAddr
	case 7, 22, 5432:
		real = w.echoAddr
	case 25:
		real = w.greeter
	case 81:
		real = w.oneShot
	case 82:
		real = w.silent
	default:
		return nil, fmt.Errorf("nothing listens on %s", address)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", real)
}

// waitDial waits until the proxy has dialed address.
func (w *world) waitDial(t testing.TB, address string) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		w.mu.Lock()
		ch := w.dialCh
		w.mu.Unlock()
		if w.dials(address) > 0 {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("proxy never dialed %s", address)
		}
	}
}

// dials counts the proxy's dials to address.
func (w *world) dials(address string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, d := range w.dialed {
		if d == address {
			n++
		}
	}
	return n
}

func (w *world) dialedAny(prefix string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.dialed {
		if strings.HasPrefix(d, prefix) {
			return true
		}
	}
	return false
}

// events collects the proxy's journal.
type events struct {
	mu   sync.Mutex
	all  []Event
	more chan struct{} // closed and replaced on each event
}

func newEvents() *events { return &events{more: make(chan struct{})} }

func (e *events) add(ev Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	close(e.more)
	e.more = make(chan struct{})
	e.mu.Unlock()
}

// wait returns the first event that match accepts, waiting for it.
func (e *events) wait(t testing.TB, what string, match func(Event) bool) Event {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		e.mu.Lock()
		for _, ev := range e.all {
			if match(ev) {
				e.mu.Unlock()
				return ev
			}
		}
		more := e.more
		e.mu.Unlock()
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("no event: %s; have %s", what, e.dump())
		}
	}
}

func (e *events) dump() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	b, _ := json.MarshalIndent(e.all, "", "  ")
	return string(b)
}

// sandbox is the proxy as a sandbox sees it: a DNS server and, for every
// TCP connection, the proxy's listener with the original destination the
// kernel would have recorded.
type sandbox struct {
	t      testing.TB
	w      *world
	p      *Proxy
	ca     *CA
	ev     *events
	proxy  string // the proxy listener's address
	dnsUDP string
	dnsTCP string

	mu    sync.Mutex
	origs map[string]netip.AddrPort // by the client's local address
	added chan struct{}             // closed and replaced on each registration
}

type sandboxOpt func(*Config)

func newSandbox(t testing.TB, w *world, pol rung.NetworkPolicy, opts ...sandboxOpt) *sandbox {
	return newSandboxClock(t, w, pol, time.Now, opts...)
}

func newSandboxClock(t testing.TB, w *world, pol rung.NetworkPolicy, now func() time.Time, opts ...sandboxOpt) *sandbox {
	t.Helper()
	ca, err := NewCA("sbx_test")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sb := &sandbox{t: t, w: w, ca: ca, ev: newEvents(), proxy: l.Addr().String(),
		dnsUDP: pc.LocalAddr().String(), dnsTCP: dl.Addr().String(),
		origs: map[string]netip.AddrPort{}, added: make(chan struct{})}
	pool := x509.NewCertPool()
	pool.AddCert(w.upCA.Certificate())
	if pol.Mode == "" {
		pol.Mode = rung.NetworkEgress
	}
	cfg := Config{
		Sandbox: "sbx_test", Policy: pol, Listener: l, DNSConn: pc, DNSListener: dl,
		CA: ca, Journal: sb.ev.add, OriginalDst: sb.originalDst, Resolver: w.res, Dial: w.dial,
		RootCAs: pool, DNSUpstream: w.dnsAddr,
		// Long enough that a loaded machine never takes a slow client for
		// a server-first protocol; the test of those sets its own.
		PeekTimeout: 10 * time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := newProxy(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	sb.p = p
	t.Cleanup(func() { p.Close() })
	return sb
}

// originalDst waits for the test's client to register the connection.
func (sb *sandbox) originalDst(c net.Conn) (netip.AddrPort, error) {
	key := c.RemoteAddr().String()
	deadline := time.After(waitTimeout)
	for {
		sb.mu.Lock()
		ap, ok := sb.origs[key]
		delete(sb.origs, key)
		added := sb.added
		sb.mu.Unlock()
		if ok {
			return ap, nil
		}
		select {
		case <-added:
		case <-deadline:
			return netip.AddrPort{}, fmt.Errorf("no original destination for %s", key)
		}
	}
}

// connect is what a program in the sandbox does: a plain TCP connect to
// an address, which the kernel redirects to the proxy.
func (sb *sandbox) connect(orig netip.AddrPort) (*net.TCPConn, error) {
	c, err := net.Dial("tcp", sb.proxy)
	if err != nil {
		return nil, err
	}
	sb.mu.Lock()
	sb.origs[c.LocalAddr().String()] = orig
	close(sb.added)
	sb.added = make(chan struct{})
	sb.mu.Unlock()
	return c.(*net.TCPConn), nil
}

// resolver is the sandbox's resolver: the proxy's DNS server.
func (sb *sandbox) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		if strings.HasPrefix(network, "tcp") {
			return d.DialContext(ctx, network, sb.dnsTCP)
		}
		return d.DialContext(ctx, network, sb.dnsUDP)
	}}
}

// dialContext resolves through the proxy's DNS and connects: a program
// that knows nothing of proxies.
func (sb *sandbox) dialContext(ctx context.Context, _, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		addrs, err := sb.resolver().LookupNetIP(ctx, "ip4", host)
		if de, ok := errors.AsType[*net.DNSError](err); ok && de.IsNotFound && len(worldNames[host]) > 0 {
			// The proxy's DNS denies the name; the program has the address
			// anyway (from /etc/hosts, a cache, or written in), and the
			// proxy must still refuse it, readably.
			addrs, err = worldNames[host], nil
		}
		if err != nil {
			return nil, err
		}
		addr = addrs[0]
	}
	var pn uint16
	fmt.Sscan(port, &pn)
	return sb.connect(netip.AddrPortFrom(addr, pn))
}

// client is an HTTP client in the sandbox: it trusts the system's roots
// (here: the upstream CA) and the sandbox's CA, and ignores proxy
// variables.
func (sb *sandbox) client() *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(sb.w.upCA.Certificate())
	pool.AppendCertsFromPEM(sb.ca.CertPEM())
	return &http.Client{Transport: &http.Transport{
		DialContext:       sb.dialContext,
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
		Proxy:             nil,
	}, Timeout: waitTimeout}
}

// get fetches url and returns the response with its body read.
func (sb *sandbox) do(req *http.Request) (*http.Response, string) {
	sb.t.Helper()
	c := sb.client()
	// Closing the client's connections ends them at the proxy, which
	// journals them.
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		sb.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		sb.t.Fatalf("%s %s: body: %v", req.Method, req.URL, err)
	}
	return resp, string(b)
}

func (sb *sandbox) get(url string) (*http.Response, string) {
	sb.t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		sb.t.Fatal(err)
	}
	return sb.do(req)
}

// echo decodes an upstream echo body.
func echoOf(t testing.TB, body string) echoInfo {
	t.Helper()
	var info echoInfo
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		t.Fatalf("upstream body %q: %v", body, err)
	}
	return info
}

// roundTrip writes msg on c and reads a line back.
func roundTrip(c net.Conn, msg string) (string, error) {
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// query asks the proxy's DNS server one question over UDP.
func (sb *sandbox) query(name string, qtype uint16, edns bool) *dns.Msg {
	sb.t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	if edns {
		m.SetEdns0(1232, false)
	}
	c := &dns.Client{Timeout: waitTimeout}
	r, _, err := c.Exchange(m, sb.dnsUDP)
	if err != nil {
		sb.t.Fatalf("query %s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return r
}

// tlsClient starts TLS over c as the sandbox's programs do.
func tlsClient(sb *sandbox, c net.Conn, name string) *tls.Conn {
	pool := x509.NewCertPool()
	pool.AddCert(sb.w.upCA.Certificate())
	pool.AppendCertsFromPEM(sb.ca.CertPEM())
	return tls.Client(c, &tls.Config{ServerName: name, RootCAs: pool})
}

// pattern is byte i of a /bytes/ body: a lost or repeated chunk shows.
func pattern(i int) byte { return byte(i % 251) }

// checkPattern reports the first byte of b that is not pattern's.
func checkPattern(b []byte) int {
	for i, c := range b {
		if c != pattern(i) {
			return i
		}
	}
	return -1
}
