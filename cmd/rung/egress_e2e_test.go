package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/internal/nettest"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/network"
)

// upstreamNet is a server standing in for the outside world: an HTTP
// server in a network namespace of the test's own, on a veth whose host
// end is 198.18.N.1 (the benchmarking range: public as far as the egress
// proxy is concerned).
type upstreamNet struct {
	ns      string // its namespace's name (/run/netns/ns)
	addr    netip.AddrPort
	handler http.Handler
	seen    chan http.Header // each request's headers
}

func newUpstreamNet(t *testing.T, lease nettest.Lease) *upstreamNet {
	t.Helper()
	testenv.Require(t, "root", "ip")
	b := lease.Upstream.Addr().As4()
	hostIP := netip.AddrFrom4([4]byte{b[0], b[1], b[2], 1})
	upIP := netip.AddrFrom4([4]byte{b[0], b[1], b[2], 2})
	ns, hostIf := fmt.Sprintf("rungt-up%d", lease.N), fmt.Sprintf("rungu%d", lease.N)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	exec.Command("ip", "link", "del", hostIf).Run() // a dead test process's
	exec.Command("ip", "netns", "del", ns).Run()
	run("netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	run("link", "add", hostIf, "type", "veth", "peer", "name", "eth0", "netns", ns)
	t.Cleanup(func() { exec.Command("ip", "link", "del", hostIf).Run() })
	run("addr", "add", hostIP.String()+"/30", "dev", hostIf)
	run("link", "set", hostIf, "up")
	run("-n", ns, "addr", "add", upIP.String()+"/30", "dev", "eth0")
	run("-n", ns, "link", "set", "eth0", "up")
	run("-n", ns, "link", "set", "lo", "up")

	ln := listenIn(t, ns, upIP.String()+":0")
	u := &upstreamNet{ns: ns, addr: netip.MustParseAddrPort(ln.Addr().String()), seen: make(chan http.Header, 64)}
	u.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case u.seen <- r.Header.Clone():
		default:
		}
		fmt.Fprintf(w, "hello from upstream %s %s\n", r.Method, r.URL.Path)
	})
	srv := &http.Server{Handler: u.handler}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return u
}

// listenIn listens on addr in network namespace ns (/run/netns/ns).
func listenIn(t *testing.T, ns, addr string) net.Listener {
	t.Helper()
	type res struct {
		ln  net.Listener
		err error
	}
	ch := make(chan res, 1)
	go func() {
		// The thread enters the namespace and dies with this goroutine
		// (it stays locked): the listener's socket stays in it.
		runtime.LockOSThread()
		fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		if err != nil {
			ch <- res{nil, err}
			return
		}
		ln, err := net.Listen("tcp4", addr)
		ch <- res{ln, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.ln
}

// serveTLS serves the upstream's handler over HTTPS too, with a
// certificate for names from a CA of the test's own, and returns its
// address and a pool holding that CA (for the egress proxy to trust).
func (u *upstreamNet) serveTLS(t *testing.T, names ...string) (netip.AddrPort, *x509.CertPool) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "upstream test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]},
		DNSNames: names, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ln := listenIn(t, u.ns, u.addr.Addr().String()+":0")
	srv := &http.Server{Handler: u.handler, TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}}}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return netip.MustParseAddrPort(ln.Addr().String()), pool
}

// namesTo resolves every name in names to addr (the egress proxies'
// resolver in these tests); other names do not exist.
type namesTo struct {
	names    map[string]netip.Addr
	fallback bool // other names from the host's resolver
}

func (n namesTo) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := n.names[strings.TrimSuffix(host, ".")]; ok && network != "ip6" {
		return []netip.Addr{a}, nil
	}
	if n.fallback {
		return net.DefaultResolver.LookupNetIP(ctx, network, host)
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// Egress end to end, in a real container behind a real link: an allowed
// name answers, with the tenant's secret set in a header on the way out
// (the sandbox holds only a placeholder); a name no rule allows does not
// resolve; an address by itself, the host's own addresses and a program
// that ignores proxies get nowhere, at once; every attempt is journaled;
// the mode switches on the running container, to none and back.
// egressDaemon starts a daemon with the network tier on a lease of its
// own and an upstream in a namespace of the test's, which names resolve
// to.
func egressDaemon(t *testing.T, names ...string) (*client.Client, *Daemon, string, nettest.Lease, *upstreamNet) {
	t.Helper()
	return egressDaemonWith(t, DaemonConfig{}, names...)
}

// egressDaemonWith is egressDaemon with the rest of the daemon's
// configuration from cfg.
func egressDaemonWith(t *testing.T, cfg DaemonConfig, names ...string) (*client.Client, *Daemon, string, nettest.Lease, *upstreamNet) {
	t.Helper()
	lease := nettest.Take(t)
	up := newUpstreamNet(t, lease)
	resolve := map[string]netip.Addr{}
	for _, n := range names {
		resolve[n] = up.addr.Addr()
	}
	cfg.Network = &network.Config{Range: lease.Range, Table: lease.Table}
	cfg.netResolver = namesTo{names: resolve}
	c, d, addr := startContainerDaemonWith(t, cfg)
	return c, d, addr, lease, up
}

// containerRunner runs commands in sandbox id's container, failing the
// test on an API error.
func containerRunner(t *testing.T, c *client.Client, id string) func(string) client.ExecResult {
	return func(cmd string) client.ExecResult {
		t.Helper()
		res, err := c.Exec(t.Context(), id, client.ExecRequest{Command: cmd, Backend: rung.BackendContainer, TimeoutMS: 30000})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
}

func TestEgress(t *testing.T) {
	c, d, addr, lease, up := egressDaemon(t, "api.example.test", "other.example.test")
	ctx := t.Context()
	const value = "tok-3f9a-never-inside"
	sec, err := c.PutSecret(ctx, "API_TOKEN", value, []string{"api.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	policy := rung.NetworkPolicy{Mode: rung.NetworkEgress,
		Rules:   []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "api.example.test"}},
		Headers: []rung.HeaderRule{{Domain: "api.example.test", Header: "Authorization", Value: "Bearer {{secret:API_TOKEN}}"}}}
	sb, err := c.Create(ctx, client.CreateRequest{Network: policy, Env: map[string]string{"TOKEN": "{{secret:API_TOKEN}}"}})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	port := up.addr.Port()
	run := containerRunner(t, c, id)

	// The network tier's environment (its certificate authority for the
	// tools) keeps nothing from the isolate tier: a command it can run
	// runs there, in a networked sandbox and a sandbox without network
	// alike, and says what the container says.
	const caVars = `echo "$GIT_SSL_CAINFO $SSL_CERT_FILE $NODE_EXTRA_CA_CERTS"`
	plain, err := c.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sid := range []string{id, string(plain.ID)} {
		auto, err := c.Exec(ctx, sid, client.ExecRequest{Command: caVars})
		if err != nil {
			t.Fatal(err)
		}
		inC, err := c.Exec(ctx, sid, client.ExecRequest{Command: caVars, Backend: rung.BackendContainer})
		if err != nil {
			t.Fatal(err)
		}
		if auto.Backend != rung.BackendIsolate || auto.Stdout != inC.Stdout || auto.Stdout == "  \n" {
			t.Errorf("sandbox %s: auto ran on %s (%s) and printed %q; the container printed %q", sid, auto.Backend, auto.Reason, auto.Stdout, inC.Stdout)
		}
	}

	res := run(fmt.Sprintf("wget -q -O - http://api.example.test:%d/x", port))
	if res.ExitCode != 0 || res.Stdout != "hello from upstream GET /x\n" {
		t.Fatalf("allowed name: exit %d, %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	select {
	case h := <-up.seen:
		if h.Get("Authorization") != "Bearer "+value {
			t.Errorf("upstream saw Authorization %q, want the secret's value", h.Get("Authorization"))
		}
	case <-ctx.Done():
		t.Fatal("upstream saw no request")
	}
	// The placeholder in the sandbox's env goes out as the value, to the
	// secret's host only.
	res = run(fmt.Sprintf(`wget -q -O - --header "X-Key: $TOKEN" http://api.example.test:%d/p`, port))
	if h := <-up.seen; res.ExitCode != 0 || h.Get("X-Key") != value {
		t.Errorf("placeholder: exit %d, upstream saw X-Key %q", res.ExitCode, h.Get("X-Key"))
	}
	if res := run(`echo "$TOKEN"; env; cat /etc/ssl/certs/ca-certificates.crt`); strings.Contains(res.Stdout, value) || !strings.Contains(res.Stdout, sec.Placeholder) {
		t.Errorf("the sandbox's env and files: value inside %v, placeholder inside %v", strings.Contains(res.Stdout, value), strings.Contains(res.Stdout, sec.Placeholder))
	}

	// Denied: a name no rule allows does not resolve; an address by
	// itself gets rung's message; raw TCP and the host's own address
	// are refused at once.
	start := time.Now()
	if res := run(fmt.Sprintf("wget -q -O - http://other.example.test:%d/", port)); res.ExitCode == 0 {
		t.Errorf("a name no rule allows answered: %q", res.Stdout)
	}
	res = run(fmt.Sprintf("wget -S -O - http://%s/ 2>&1", up.addr))
	if res.ExitCode == 0 || !strings.Contains(res.Stdout, "403") {
		t.Errorf("an address no rule allows: exit %d, %q", res.ExitCode, res.Stdout)
	}
	if res := run(fmt.Sprintf("echo hi | nc %s %d", up.addr.Addr(), port)); strings.Contains(res.Stdout, "hello") {
		t.Errorf("raw TCP past the policy: %q", res.Stdout)
	}
	_, apiPort, _ := net.SplitHostPort(addr)
	for _, host := range append(hostAddrs(t, lease), "169.254.169.254") {
		if res := run("wget -q -T 10 -O - http://" + net.JoinHostPort(host, apiPort) + "/v1/openapi.json"); res.ExitCode == 0 || strings.Contains(res.Stdout, "openapi") {
			t.Errorf("the host's address %s reached: %q", host, res.Stdout)
		}
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the refusals took %s: something hung", took)
	}
	types := journalTypes(t, c, id)
	if !contains(types, "egress.request") || !contains(types, "egress.denied") {
		t.Errorf("journal %v: want egress.request and egress.denied", types)
	}
	evs, _ := c.Journal(ctx, id, 0)
	for _, e := range evs {
		if strings.Contains(string(e.Data), value) {
			t.Errorf("journal entry %s holds the secret's value", e.Type)
		}
	}
	// Metrics count each entry before it is journaled: at least what the
	// journal held a moment ago (later connections may have ended since).
	journaled := map[string]int{}
	for _, e := range evs {
		journaled[e.Type]++
	}
	m := scrape(t, addr, d.Token)
	denied := m[`rung_egress_requests_total{decision="denied",kind="connection"}`] + m[`rung_egress_requests_total{decision="denied",kind="dns"}`] +
		m[`rung_egress_requests_total{decision="denied",kind="request"}`]
	t.Logf("egress journaled %v; counted %v allowed requests, %v allowed connections, %v denied", journaled,
		m[`rung_egress_requests_total{decision="allowed",kind="request"}`], m[`rung_egress_requests_total{decision="allowed",kind="connection"}`], denied)
	if got := m[`rung_egress_requests_total{decision="allowed",kind="request"}`]; got < float64(journaled["egress.request"]) || got < 2 {
		t.Errorf("allowed egress requests counted %v; the journal holds %d", got, journaled["egress.request"])
	}
	if denied < float64(journaled["egress.denied"]) || denied == 0 {
		t.Errorf("denied egress counted %v; the journal holds %d", denied, journaled["egress.denied"])
	}
	if got := m[`rung_egress_requests_total{decision="allowed",kind="connection"}`]; got < float64(journaled["egress.connection"]) {
		t.Errorf("allowed egress connections counted %v; the journal holds %d", got, journaled["egress.connection"])
	}
	if journaled["egress.connection"] > 0 && (m[`rung_egress_bytes_total{decision="allowed",direction="in"}`] == 0 || m[`rung_egress_bytes_total{decision="allowed",direction="out"}`] == 0) {
		t.Errorf("egress bytes not counted: %v in, %v out", m[`rung_egress_bytes_total{decision="allowed",direction="in"}`], m[`rung_egress_bytes_total{decision="allowed",direction="out"}`])
	}

	// Mode none on the running container: no route at all; egress again:
	// back, without a restart.
	none := rung.NetworkPolicy{Mode: rung.NetworkNone}
	if _, err := c.Update(ctx, id, client.UpdateRequest{Network: &none}); err != nil {
		t.Fatal(err)
	}
	if res := run(fmt.Sprintf("wget -q -T 5 -O - http://api.example.test:%d/x", port)); res.ExitCode == 0 {
		t.Errorf("mode none still reaches out: %q", res.Stdout)
	}
	if _, err := c.Update(ctx, id, client.UpdateRequest{Network: &policy}); err != nil {
		t.Fatal(err)
	}
	if res := run(fmt.Sprintf("wget -q -O - http://api.example.test:%d/again", port)); res.ExitCode != 0 || !strings.Contains(res.Stdout, "/again") {
		t.Errorf("back to egress: exit %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if !contains(journalTypes(t, c, id), "network.updated") {
		t.Error("no network.updated entry")
	}

	// A container started in mode none (plain's, above) gets its name
	// server with its link: names resolve once it switches to egress.
	runPlain := containerRunner(t, c, string(plain.ID))
	if res := runPlain("nslookup api.example.test"); res.ExitCode == 0 {
		t.Errorf("mode none resolved a name: %q", res.Stdout)
	}
	if _, err := c.Update(ctx, string(plain.ID), client.UpdateRequest{Network: &policy}); err != nil {
		t.Fatal(err)
	}
	if res := runPlain(fmt.Sprintf("wget -q -O - http://api.example.test:%d/from-none", port)); res.ExitCode != 0 || !strings.Contains(res.Stdout, "/from-none") {
		t.Errorf("from none to egress on a running container: exit %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}

	// Bad policies are refused naming the rule; open needs the tenant's
	// permission.
	bad := rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: []rung.NetworkRule{{Action: rung.RuleAllow, CIDR: "10.0.0.1/8"}}}
	if _, err := c.Update(ctx, id, client.UpdateRequest{Network: &bad}); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("a CIDR with host bits: %v", err)
	}
	open := rung.NetworkPolicy{Mode: rung.NetworkOpen}
	if _, err := c.Create(ctx, client.CreateRequest{Network: open}); !errors.Is(err, rung.ErrPermission) {
		t.Errorf("mode open without the tenant's permission: %v", err)
	}
}

// TestEgressGVisorSwitch switches a running gVisor sandbox's network,
// which gVisor takes only as it boots: from none (where nothing resolves
// and nothing connects) to egress, back to none and to egress again, each
// on the same container, which never restarts.
func TestEgressGVisorSwitch(t *testing.T) {
	testenv.Require(t, "runsc")
	c, _, _, _, up := egressDaemon(t, "api.example.test")
	ctx := t.Context()
	sb, err := c.Create(ctx, client.CreateRequest{Isolation: rung.IsolationGVisor})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	run := containerRunner(t, c, id)
	if res := run("dmesg | head -n 1"); !strings.Contains(res.Stdout, "gVisor") {
		t.Fatalf("not under gVisor: %q", res.Stdout)
	}
	// busybox's wget with -T crashes under this runsc (SIGSEGV): the exec's
	// timeout bounds it instead. The name is looked up with nslookup, and
	// the request goes to the address with the name in Host, which the
	// proxy matches.
	resolves := func() bool { return run("nslookup api.example.test").ExitCode == 0 }
	fetch := func(path string) client.ExecResult {
		return run(fmt.Sprintf("wget -q -O - --header 'Host: api.example.test:%d' http://%s/%s 2>&1", up.addr.Port(), up.addr, path))
	}

	// Mode none: no name resolves, no address connects, at once.
	start := time.Now()
	if resolves() {
		t.Error("mode none: a name resolved")
	}
	if res := fetch("none"); res.ExitCode == 0 || strings.Contains(res.Stdout, "hello") {
		t.Errorf("mode none reached out: %q", res.Stdout)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("mode none's refusals took %s: something hung", took)
	}

	egress := rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "api.example.test"}}}
	none := rung.NetworkPolicy{Mode: rung.NetworkNone}
	for i, step := range []struct {
		policy rung.NetworkPolicy
		reach  bool
	}{{egress, true}, {none, false}, {egress, true}} {
		if _, err := c.Update(ctx, id, client.UpdateRequest{Network: &step.policy}); err != nil {
			t.Fatalf("step %d, to %s: %v", i, step.policy.Mode, err)
		}
		if got := resolves(); got != step.reach {
			t.Errorf("step %d, mode %s: the name resolved %v, want %v", i, step.policy.Mode, got, step.reach)
		}
		res := fetch(fmt.Sprintf("step%d", i))
		if got := res.ExitCode == 0 && strings.Contains(res.Stdout, "hello from upstream GET /step"); got != step.reach {
			t.Errorf("step %d, mode %s: exit %d, %q; want reached %v", i, step.policy.Mode, res.ExitCode, res.Stdout, step.reach)
		}
	}
	types := journalTypes(t, c, id)
	if n := count(types, "container.started"); n != 1 || count(types, "container.exited")+count(types, "container.stopped") != 0 {
		t.Errorf("journal %v: want one container start and no stop", types)
	}
	if !contains(types, "egress.denied") || !contains(types, "egress.request") {
		t.Errorf("journal %v: want the denials of mode none and the requests of egress", types)
	}
}

// egressServeSetup is what a test of `rung serve` with the network tier
// needs: an upstream of its own, the binary, a data directory, and the
// flags giving the daemon its own range and table.
func egressServeSetup(t *testing.T) (up *upstreamNet, bin, data string, flags []string) {
	t.Helper()
	lease := nettest.Take(t)
	return newUpstreamNet(t, lease), rungBinary(t), t.TempDir(), []string{"--network-range", lease.Range.String(), "--network-table", lease.Table}
}

// TestEgressUpdateCrash kills the daemon between a network update's row
// and its container's change ($RUNG_FAULT=network.row), both ways: after
// a restart the adopted container has the network its row says, a link
// and a name server for egress, none for none.
func TestEgressUpdateCrash(t *testing.T) {
	up, bin, data, flags := egressServeSetup(t)
	// armed starts a daemon that kills itself at network.row.
	armed := func() *serveProc {
		t.Setenv("RUNG_FAULT", "network.row")
		defer t.Setenv("RUNG_FAULT", "")
		return startServe(t, bin, data, flags...)
	}
	p := armed()
	t.Cleanup(func() {
		// The test kills daemons and leaves the container for the next
		// one; when it ends on a killed one, a last daemon stops it.
		// (startServe's own cleanup stops one still running.)
		<-p.done
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			startServe(t, bin, data, flags...).stop(t)
		}
	})
	ctx := t.Context()
	sb, err := client.New(p.addr, client.WithToken(p.token)).Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	probe := func(p *serveProc) client.ExecResult {
		t.Helper()
		res, err := client.New(p.addr, client.WithToken(p.token)).Exec(ctx, id, client.ExecRequest{
			Command: fmt.Sprintf("grep -c nameserver /etc/resolv.conf; wget -q -O - http://%s/crash", up.addr), Backend: rung.BackendContainer, TimeoutMS: 30000})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := probe(p); strings.Contains(res.Stdout, "hello") {
		t.Fatalf("mode none reached out: %q", res.Stdout)
	}
	egress := rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: []rung.NetworkRule{{Action: rung.RuleAllow, CIDR: up.addr.Addr().String() + "/32"}}}
	none := rung.NetworkPolicy{Mode: rung.NetworkNone}
	for i, step := range []struct {
		policy rung.NetworkPolicy
		want   string // the probe's output after the restart
	}{{egress, "1\nhello from upstream GET /crash\n"}, {none, "0\n"}} {
		if i > 0 {
			p.cmd.Process.Kill() // the container stays, for the armed daemon to adopt
			<-p.done
			p = armed()
		}
		if _, err := client.New(p.addr, client.WithToken(p.token)).Update(ctx, id, client.UpdateRequest{Network: &step.policy}); err == nil {
			t.Fatalf("update to %s: the daemon did not die at network.row", step.policy.Mode)
		}
		<-p.done
		p = startServe(t, bin, data, flags...)
		c := client.New(p.addr, client.WithToken(p.token))
		if got, err := c.Get(ctx, id); err != nil || got.Network.Mode != step.policy.Mode {
			t.Fatalf("after the crash the row says %+v, %v; want mode %s", got.Network, err, step.policy.Mode)
		}
		if res := probe(p); res.Stdout != step.want {
			t.Errorf("mode %s after a crash between the row and the container: %q (stderr %q), want %q\n%s", step.policy.Mode, res.Stdout, res.Stderr, step.want, p.logs)
		}
		// Adopted after each crash, and by each armed daemon after the
		// first (it started over a running container).
		if n := count(journalTypes(t, c, id), "container.adopted"); n != 2*i+1 {
			t.Errorf("journal %v: want the container adopted by every daemon after the first", journalTypes(t, c, id))
		}
	}
	p.stop(t)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// A daemon killed with -9 and started again re-adopts an egress
// sandbox's container with its network: the link stays, the proxy is
// served again with the CA the container trusts, and the policy holds.
// A sandbox whose container was gone loses its link at the restart.
func TestEgressLiveRestore(t *testing.T) {
	up, bin, data, flags := egressServeSetup(t)
	p := startServe(t, bin, data, flags...)
	c := client.New(p.addr, client.WithToken(p.token))
	ctx := t.Context()
	policy := rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: []rung.NetworkRule{{Action: rung.RuleAllow, CIDR: up.addr.Addr().String() + "/32"}}}
	sb, err := c.Create(ctx, client.CreateRequest{Network: policy})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sb.ID)
	fetch := func(c *client.Client) client.ExecResult {
		t.Helper()
		res, err := c.Exec(ctx, id, client.ExecRequest{Command: fmt.Sprintf("wget -q -O - http://%s/after; echo; cat /etc/ssl/certs/ca-certificates.crt | tail -c 200", up.addr),
			Backend: rung.BackendContainer, TimeoutMS: 30000})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	before := fetch(c)
	if !strings.Contains(before.Stdout, "hello from upstream") {
		t.Fatalf("before the restart: %q %q", before.Stdout, before.Stderr)
	}
	p.cmd.Process.Kill()
	<-p.done
	p = startServe(t, bin, data, flags...)
	defer p.stop(t)
	c = client.New(p.addr, client.WithToken(p.token))
	after := fetch(c)
	if !strings.Contains(after.Stdout, "hello from upstream") {
		t.Fatalf("after kill -9 and a restart: %q %q\n%s", after.Stdout, after.Stderr, p.logs)
	}
	// The same CA: the container's store did not change under it.
	if tail := func(s string) string { return s[strings.Index(s, "\n")+1:] }; tail(before.Stdout) != tail(after.Stdout) {
		t.Errorf("the container's CA changed across the restart")
	}
	if !contains(journalTypes(t, c, id), "container.adopted") {
		t.Errorf("journal %v: no container.adopted", journalTypes(t, c, id))
	}
	if res, _ := c.Exec(ctx, id, client.ExecRequest{Command: "echo hi | nc 1.1.1.1 80", Backend: rung.BackendContainer}); strings.Contains(res.Stdout, "hello") {
		t.Errorf("the policy did not hold after the restart: %q", res.Stdout)
	}
}

// hostAddrs are the host's own IPv4 addresses outside the test's lease:
// what a sandbox must never reach.
func hostAddrs(t *testing.T, lease nettest.Lease) []string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil || !p.Addr().Is4() || lease.Range.Contains(p.Addr()) || lease.Upstream.Contains(p.Addr()) {
			continue
		}
		out = append(out, p.Addr().String())
	}
	return out
}
