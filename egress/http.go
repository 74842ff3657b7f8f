package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// connInfo is what the HTTP handler knows of the connection a request
// came on.
type connInfo struct {
	sc    *sandboxConn
	orig  netip.AddrPort
	proto Protocol  // ProtoHTTP or ProtoHTTPS
	sni   string    // ProtoHTTPS: the server name the sandbox asked for
	tls   *tls.Conn // ProtoHTTPS: the sandbox's TLS, over sc
}

type connKey struct{}

// httpConn is a connection handed to the HTTP server, with its info.
type httpConn struct {
	net.Conn
	info *connInfo
}

// ReadFrom lets http.Server's response writer hand a body to the
// sandbox's socket directly: with no byte limit, a TCP source is spliced.
func (h *httpConn) ReadFrom(r io.Reader) (int64, error) {
	if sc, ok := h.Conn.(*sandboxConn); ok && sc.bytes == nil {
		if tc, ok := sc.Conn.(*net.TCPConn); ok {
			n, err := tc.ReadFrom(r)
			sc.down.Add(n)
			return n, err
		}
	}
	return io.Copy(struct{ io.Writer }{h.Conn}, r)
}

// reqState carries a request's choices from the handler to the
// ReverseProxy's hooks and the upstream dial.
type reqState struct {
	scheme    string
	authority string // host:port for the upstream URL
	target    Target // the checked address is target.IP, target.Port
	values    []string
	// spliceTo is the sandbox's response writer when a large body may be
	// spliced to it (plain HTTP, nothing to mask, no byte limit); nil
	// otherwise.
	spliceTo http.ResponseWriter

	mu      sync.Mutex // guards failure
	failure string     // the sandbox's message when upstream failed
	// up and down count an upgraded (101) stream's bytes.
	up, down atomic.Int64
	status   atomic.Int32 // the upstream's status
}

type reqKey struct{}

// bufPool gives ReverseProxy larger copy buffers than its 32 KiB, for
// bulk downloads.
type bufPool struct{ p sync.Pool }

func (b *bufPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 128<<10)
}

func (b *bufPool) Put(v []byte) { b.p.Put(&v) }

func (p *Proxy) initHTTP() {
	p.transport = &http.Transport{
		DialContext:         p.dialForHTTP,
		TLSClientConfig:     &tls.Config{RootCAs: p.cfg.RootCAs},
		TLSHandshakeTimeout: 10 * time.Second,
		// The sandbox's own Accept-Encoding goes upstream as it is; the
		// body comes back as it was sent.
		DisableCompression:    true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	p.plain = &plainTransport{p: p}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      transports{plain: p.plain, tls: p.transport},
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.proxyError,
		BufferPool:     &bufPool{},
		ErrorLog:       log.New(io.Discard, "", 0),
	}
	if p.cfg.CA != nil {
		p.tlsConf = &tls.Config{
			GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
				return p.cfg.CA.Leaf(h.ServerName)
			},
			// Requests are proxied as HTTP/1.1; a client that offers h2
			// falls back to it.
			NextProtos: []string{"http/1.1"},
			MinVersion: tls.VersionTLS12,
		}
	}
	addr := net.Addr(&net.TCPAddr{})
	if p.cfg.Listener != nil {
		addr = p.cfg.Listener.Addr()
	}
	p.httpLn = newChanListener(addr)
	p.httpSrv = &http.Server{
		Handler: http.HandlerFunc(p.serveHTTP),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if hc, ok := c.(*httpConn); ok {
				return context.WithValue(ctx, connKey{}, hc.info)
			}
			return ctx
		},
		ReadHeaderTimeout: time.Minute,
		IdleTimeout:       5 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	p.goTracked(func() { p.httpSrv.Serve(p.httpLn) })
}

// handHTTP gives a connection to the HTTP server, which closes it.
func (p *Proxy) handHTTP(c *sandboxConn, info *connInfo) {
	c.note(func(e *Event) {
		e.Protocol = info.proto
		if e.Verdict == VerdictFailed {
			e.Verdict = VerdictAllowed
		}
		if info.sni != "" {
			e.Host = info.sni
		}
	})
	var nc net.Conn = c
	if info.proto == ProtoHTTPS {
		nc = info.tls
	}
	if !p.httpLn.push(&httpConn{Conn: nc, info: info}) {
		nc.Close()
	}
}

// intercept terminates the sandbox's TLS with a certificate for sni from
// the sandbox's CA and hands the connection to the HTTP server.
func (p *Proxy) intercept(c *sandboxConn, sni string) {
	tc := tls.Server(c, p.tlsConf)
	c.SetDeadline(time.Now().Add(helloTimeout))
	err := tc.HandshakeContext(p.ctx)
	c.SetDeadline(time.Time{})
	if err != nil {
		c.note(func(e *Event) {
			e.Verdict = VerdictFailed
			e.Message = "rung: TLS handshake with the sandbox failed (does the program trust the sandbox's CA?)"
		})
		c.Close()
		return
	}
	p.handHTTP(c, &connInfo{sc: c, orig: c.orig, proto: ProtoHTTPS, sni: sni, tls: tc})
}

// serveHTTP checks and proxies one request from the sandbox.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		refuse(w, http.StatusServiceUnavailable, "unavailable", "rung: egress is shutting down")
		return
	}
	defer p.wg.Done()
	ci, _ := r.Context().Value(connKey{}).(*connInfo)
	if ci == nil {
		refuse(w, http.StatusInternalServerError, "error", "rung: internal error")
		return
	}
	ev := Event{Time: p.now(), Kind: EventRequest, Protocol: ci.proto, IP: ci.orig.Addr().Unmap(), Port: ci.orig.Port(),
		Method: r.Method, Path: r.URL.Path, Rule: -1, Verdict: VerdictAllowed}
	cw := &countWriter{ResponseWriter: w}
	body := &countReader{r: r.Body}
	r.Body = body
	st := &reqState{scheme: "http"}
	defer func() {
		ev.Status, ev.BytesDown, ev.BytesUp = cw.status, cw.n+st.down.Load(), body.n.Load()+st.up.Load()
		if ev.Status == 0 {
			ev.Status = int(st.status.Load()) // an upgrade, answered on the hijacked connection
		}
		ev.Duration = p.now().Sub(ev.Time)
		p.journal(ev)
	}()
	deny := func(status int, verdict Verdict, msg string) {
		ev.Verdict, ev.Message = verdict, msg
		tag := "denied"
		if verdict != VerdictDenied {
			tag = string(verdict)
		}
		refuse(cw, status, tag, msg)
	}
	t, refusal := p.admit(ci, r)
	ev.Host = t.Host
	if refusal != nil {
		deny(refusal.status, refusal.verdict, refusal.msg)
		return
	}
	pol := p.policy.Load()
	ch := p.choose(r.Context(), pol, t)
	ev.Host, ev.Rule, ev.RuleText = ch.t.Host, ch.d.Rule, ch.d.RuleText
	if ch.t.IP.IsValid() {
		ev.IP = ch.t.IP
	}
	if !ch.allowed {
		deny(ch.status, ch.verdict, ch.msg)
		return
	}
	f, err := p.broker(r.Context(), pol, ch.t.Host, r)
	ev.Secrets = f.names
	if err != nil {
		msg := "rung: secrets are unavailable"
		if be, ok := errors.AsType[*errBroker](err); ok {
			msg = be.msg
		}
		deny(http.StatusForbidden, VerdictDenied, msg)
		return
	}
	st.target, st.values = ch.t, f.values
	if ci.proto == ProtoHTTPS {
		st.scheme = "https"
	} else if len(f.values) == 0 && ci.sc.bytes == nil {
		st.spliceTo = w
	}
	name := ch.t.Host
	if name == "" || t.IP.IsValid() {
		name = ch.t.IP.String()
	}
	st.authority = net.JoinHostPort(name, strconv.Itoa(int(ch.t.Port)))
	p.rp.ServeHTTP(cw, r.WithContext(context.WithValue(r.Context(), reqKey{}, st)))
	st.mu.Lock()
	if st.failure != "" {
		ev.Verdict, ev.Message = VerdictFailed, st.failure
	}
	st.mu.Unlock()
}

// refusal is an answer the proxy gives itself instead of proxying.
type refusal struct {
	status  int
	verdict Verdict
	msg     string
}

// admit checks what comes before the policy: the request rate, the Host
// (a name or an address; on intercepted TLS the server name itself) and
// the method. It returns the request's target, with the name or address
// but no address resolved.
func (p *Proxy) admit(ci *connInfo, r *http.Request) (Target, *refusal) {
	if !p.limits.request() {
		return Target{}, &refusal{http.StatusTooManyRequests, VerdictLimited,
			fmt.Sprintf("rung: egress limit reached: %d new connections and requests per second (requests_per_second)", p.limits.limits().RequestsPerSecond)}
	}
	host, lit, ok := requestHost(r.Host)
	t := Target{Host: host, IP: lit, Port: ci.orig.Port(), Method: r.Method, Path: r.URL.Path}
	switch {
	case !ok:
		return t, &refusal{http.StatusBadRequest, VerdictDenied, "rung: the request's Host is not a host name or an address"}
	case ci.proto == ProtoHTTPS && host != ci.sni:
		t.Host = ci.sni
		return t, &refusal{http.StatusMisdirectedRequest, VerdictDenied,
			fmt.Sprintf("rung: egress denied: Host %q does not match the TLS server name %q", r.Host, ci.sni)}
	case r.Method == http.MethodConnect:
		return t, &refusal{http.StatusMethodNotAllowed, VerdictDenied,
			"rung: CONNECT is not served; egress is transparent, so connect directly (no proxy settings are needed)"}
	}
	if host == "" && !lit.IsValid() {
		// HTTP/1.0 without a Host: the name looked up for the address.
		t.Host, t.IP = p.names.lookup(ci.orig.Addr()), ci.orig.Addr().Unmap()
	}
	return t, nil
}

// requestHost parses a Host header: a lower-case name, or an address
// literal (then name is ""). ok is false for anything else. An empty Host
// (HTTP/1.0) is ok with neither.
func requestHost(h string) (name string, lit netip.Addr, ok bool) {
	if h == "" {
		return "", netip.Addr{}, true
	}
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		return "", a.Unmap(), a.Zone() == ""
	}
	h = normalName(h)
	return h, netip.Addr{}, checkName(h) == nil
}

// rewrite aims the outgoing request at the checked upstream.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	st := pr.In.Context().Value(reqKey{}).(*reqState)
	pr.Out.URL.Scheme = st.scheme
	pr.Out.URL.Host = st.authority
	pr.Out.Host = pr.In.Host
	// The sandbox's own forwarding headers pass as they were: the proxy is
	// transparent and adds none.
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v, ok := pr.In.Header[k]; ok {
			pr.Out.Header[k] = v
		}
	}
}

// dialForHTTP dials the address the handler checked for this request.
func (p *Proxy) dialForHTTP(ctx context.Context, network, address string) (net.Conn, error) {
	st, ok := ctx.Value(reqKey{}).(*reqState)
	if !ok {
		return nil, fmt.Errorf("dial %s: no checked address", address)
	}
	return p.dialAddr(ctx, netip.AddrPortFrom(st.target.IP, st.target.Port))
}

// modifyResponse masks injected secrets in what comes back and counts an
// upgraded stream.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	st := resp.Request.Context().Value(reqKey{}).(*reqState)
	st.status.Store(int32(resp.StatusCode))
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if rwc, ok := resp.Body.(io.ReadWriteCloser); ok {
			resp.Body = &countRWC{ReadWriteCloser: rwc, st: st}
		}
	}
	if len(st.values) == 0 {
		return nil
	}
	maskHeader(resp.Header, st.values)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		switch resp.Header.Get("Content-Encoding") {
		case "", "identity":
			resp.Body = newMaskReader(resp.Body, st.values)
		}
	}
	return nil
}

// proxyError answers a request whose upstream failed, in rung's words
// (never the error's text, which may hold a URL with a secret in it).
func (p *Proxy) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	st := r.Context().Value(reqKey{}).(*reqState)
	if r.Context().Err() != nil {
		// The sandbox went away; nobody reads an answer.
		st.mu.Lock()
		st.failure = "rung: the sandbox closed the request"
		st.mu.Unlock()
		return
	}
	what := "cannot connect"
	_, untrusted := errors.AsType[*tls.CertificateVerificationError](err)
	switch {
	case untrusted:
		what = "the server's certificate is not trusted"
	case errors.Is(err, context.DeadlineExceeded):
		what = "timed out"
	}
	msg := fmt.Sprintf("rung: egress to %s failed: %s", destText(Target{Host: st.target.Host, IP: st.target.IP, Port: st.target.Port}), what)
	st.mu.Lock()
	st.failure = msg
	st.mu.Unlock()
	refuse(w, http.StatusBadGateway, "error", msg)
}

// refuse writes rung's own answer: a status, a header naming rung and a
// one-line message.
func refuse(w http.ResponseWriter, status int, tag, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Rung-Egress", tag)
	h.Set("Cache-Control", "no-store")
	if status == http.StatusTooManyRequests {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	io.WriteString(w, msg+"\n")
}

// countWriter counts the response body and keeps the final status.
type countWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (w *countWriter) WriteHeader(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush and Hijack.
func (w *countWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countReader counts a request body.
type countReader struct {
	r io.ReadCloser
	n atomic.Int64
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countReader) Close() error { return c.r.Close() }

// countRWC counts an upgraded stream's bytes.
type countRWC struct {
	io.ReadWriteCloser
	st *reqState
}

func (c *countRWC) Read(b []byte) (int, error) {
	n, err := c.ReadWriteCloser.Read(b)
	c.st.down.Add(int64(n))
	return n, err
}

func (c *countRWC) Write(b []byte) (int, error) {
	n, err := c.ReadWriteCloser.Write(b)
	c.st.up.Add(int64(n))
	return n, err
}
