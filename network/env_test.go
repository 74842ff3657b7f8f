package network_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"rung.dev/rung"
	"rung.dev/rung/internal/nettest"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/network"
)

// hangTimeout only catches a hang: every wait in these tests ends on an
// event (an answer, a reset, an ICMP error) long before it.
const hangTimeout = 10 * time.Second

// env is a manager over a leased range and table, with the servers its
// links redirect to: a stand-in for the egress proxy (it accepts and
// hands connections to the test) and a DNS stand-in (it answers every
// query, over UDP and TCP, with "answer:" and the query).
type env struct {
	m     *network.Manager
	lease nettest.Lease
	proxy *acceptor
	dns   *dnsServer
	cfg   network.Config
}

func newEnv(t testing.TB) *env {
	t.Helper()
	testenv.Require(t, "root")
	e := &env{lease: nettest.Take(t)}
	e.proxy = newAcceptor(t, "0.0.0.0:0")
	e.dns = newDNSServer(t)
	e.cfg = network.Config{
		StateDir: t.TempDir(), Range: e.lease.Range, Table: e.lease.Table,
		ProxyPort: uint16(e.proxy.port()), DNSPort: e.dns.port,
	}
	e.m = e.open(t)
	// A test process that died holding this lease may have left links
	// and rules: they are in the range, so Reconcile's sweep takes them.
	if _, err := e.m.Reconcile(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.m.Uninstall(context.Background()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		e.m.Close()
	})
	return e
}

// open opens a manager on e's configuration (a second one, after a
// simulated crash, shares it).
func (e *env) open(t testing.TB) *network.Manager {
	t.Helper()
	m, err := network.Open(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// attach attaches a new sandbox in a namespace the manager makes.
func (e *env) attach(t testing.TB, p network.Policy) network.Link {
	t.Helper()
	l, err := e.m.Attach(t.Context(), rung.NewSandboxID(), "", p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var (
	egress = network.Policy{Mode: rung.NetworkEgress}
	open   = network.Policy{Mode: rung.NetworkOpen}
)

// in runs f in the network namespace at path, as root in it (with
// CAP_NET_ADMIN and CAP_NET_RAW: more than a container's root gets).
// Sockets f makes stay in that namespace.
func in(t *testing.T, path string, f func() error) {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := network.InNamespace(fd, f); err != nil {
		t.Fatal(err)
	}
}

// acceptor hands the connections a listener accepts to the test.
type acceptor struct {
	ln    *net.TCPListener
	conns chan *net.TCPConn
}

func newAcceptor(t testing.TB, addr string) *acceptor {
	t.Helper()
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	return acceptOn(t, ln)
}

// acceptOn is newAcceptor on a listener the caller made (in another
// namespace, say).
func acceptOn(t testing.TB, ln net.Listener) *acceptor {
	// Buffered so a test that does not expect a connection does not
	// block the loop: it fails on what it finds there.
	a := &acceptor{ln: ln.(*net.TCPListener), conns: make(chan *net.TCPConn, 16)}
	done := make(chan struct{})
	go func() { // ends when the listener closes
		defer close(done)
		for {
			c, err := a.ln.AcceptTCP()
			if err != nil {
				return
			}
			a.conns <- c
		}
	}()
	t.Cleanup(func() {
		a.ln.Close()
		<-done
		close(a.conns)
		for c := range a.conns {
			c.Close()
		}
	})
	return a
}

func (a *acceptor) port() int { return a.ln.Addr().(*net.TCPAddr).Port }

// next returns the next connection accepted.
func (a *acceptor) next(t *testing.T) *net.TCPConn {
	t.Helper()
	select {
	case c := <-a.conns:
		t.Cleanup(func() { c.Close() })
		return c
	case <-time.After(hangTimeout):
		t.Fatal("no connection accepted")
		return nil
	}
}

// none fails t if a connection is waiting. Call it only after an event
// that would have come after the connection (an answer on another path).
func (a *acceptor) none(t *testing.T) {
	t.Helper()
	select {
	case c := <-a.conns:
		t.Errorf("unexpected connection from %s", c.RemoteAddr())
		c.Close()
	default:
	}
}

// expect accepts the next connection and checks that its peer dialled
// want, that it came from from (if valid), and that bytes pass both ways.
func (a *acceptor) expect(t *testing.T, want netip.AddrPort, from netip.Addr) {
	t.Helper()
	c := a.next(t)
	got, err := nettest.OriginalDst(c)
	if err != nil {
		t.Fatalf("SO_ORIGINAL_DST: %v", err)
	}
	if got != want {
		t.Errorf("original destination %s, want %s", got, want)
	}
	if peer := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap(); from.IsValid() && peer != from {
		t.Errorf("connection from %s, want %s", peer, from)
	}
}

// dnsServer answers each query with "answer:" and the query, over UDP
// and TCP on one port, and keeps the UDP queries in arrival order.
type dnsServer struct {
	port    uint16
	queries chan string
}

func newDNSServer(t testing.TB) *dnsServer {
	t.Helper()
	var udp *net.UDPConn
	var tcp net.Listener
	// UDP and TCP on one port: take a free UDP port, then TCP on it;
	// another process may hold that TCP port, so try a few.
	for range 20 {
		u, err := net.ListenUDP("udp4", &net.UDPAddr{})
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp4", fmt.Sprintf(":%d", u.LocalAddr().(*net.UDPAddr).Port))
		if err == nil {
			udp, tcp = u, l
			break
		}
		u.Close()
	}
	if udp == nil {
		t.Fatal("no port free for both UDP and TCP")
	}
	s := &dnsServer{port: uint16(udp.LocalAddr().(*net.UDPAddr).Port), queries: make(chan string, 16)}
	done := make(chan struct{}, 2)
	go func() { // ends when the socket closes
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 512)
		for {
			n, from, err := udp.ReadFromUDP(buf)
			if err != nil {
				return
			}
			select {
			case s.queries <- string(buf[:n]):
			default:
			}
			udp.WriteToUDP(append([]byte("answer:"), buf[:n]...), from)
		}
	}()
	go func() { // ends when the listener closes
		defer func() { done <- struct{}{} }()
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 512)
			n, _ := c.Read(buf)
			c.Write(append([]byte("answer:"), buf[:n]...))
			c.Close()
		}
	}()
	t.Cleanup(func() {
		udp.Close()
		tcp.Close()
		<-done
		<-done
	})
	return s
}

// Guest-side probes, run inside a sandbox's namespace (see in). Each
// returns what happened; a hang ends at hangTimeout.

func dial(addr netip.AddrPort) (*net.TCPConn, error) {
	c, err := net.DialTimeout("tcp", addr.String(), hangTimeout)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// wantErrno dials addr and wants the dial to fail with errno at once
// (not at the timeout, which would be a different error).
func wantErrno(addr netip.AddrPort, errno syscall.Errno) error {
	c, err := dial(addr)
	if err == nil {
		c.Close()
		return fmt.Errorf("dial %s: connected, want %v", addr, errno)
	}
	if !errors.Is(err, errno) {
		return fmt.Errorf("dial %s: %v, want %v", addr, err, errno)
	}
	return nil
}

// talk writes msg on c and reads the answer.
func talk(c net.Conn, msg string) (string, error) {
	c.SetDeadline(time.Now().Add(hangTimeout))
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}

// query sends msg over UDP to addr and returns the answer.
func query(addr netip.AddrPort, msg string) (string, error) {
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return "", err
	}
	defer c.Close()
	return talk(c, msg)
}

// icmpEcho sends an echo request to dst from a raw socket and returns the
// type and code of the first ICMP message that comes back.
func icmpEcho(dst netip.Addr) (typ, code byte, err error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(hangTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return 0, 0, err
	}
	echo := []byte{8, 0, 0, 0, 0x52, 0x47, 0, 1, 'r', 'u', 'n', 'g'}
	sum := checksum(echo)
	echo[2], echo[3] = byte(sum>>8), byte(sum)
	if err := unix.Sendto(fd, echo, 0, &unix.SockaddrInet4{Addr: dst.As4()}); err != nil {
		return 0, 0, err
	}
	buf := make([]byte, 1500)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, 0, err
	}
	ihl := int(buf[0]&0x0f) * 4
	if n < ihl+2 {
		return 0, 0, errors.New("short ICMP message")
	}
	return buf[ihl], buf[ihl+1], nil
}

func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}

// rawUDP sends one UDP datagram with a source address of its own choosing
// (IP_HDRINCL), as root in a sandbox could.
func rawUDP(src, dst netip.AddrPort, payload []byte) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	pkt := make([]byte, 28+len(payload))
	pkt[0], pkt[8], pkt[9] = 0x45, 64, unix.IPPROTO_UDP
	pkt[2], pkt[3] = byte(len(pkt)>>8), byte(len(pkt))
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(pkt[12:16], s[:])
	copy(pkt[16:20], d[:])
	pkt[20], pkt[21] = byte(src.Port()>>8), byte(src.Port())
	pkt[22], pkt[23] = byte(dst.Port()>>8), byte(dst.Port())
	pkt[24], pkt[25] = byte((8+len(payload))>>8), byte(8+len(payload)) // UDP checksum 0: none
	copy(pkt[28:], payload)
	return unix.Sendto(fd, pkt, 0, &unix.SockaddrInet4{Addr: d})
}

// hostAddr returns one of the host's own IPv4 addresses outside loopback
// and the test's ranges.
func hostAddr(t *testing.T, e *env) netip.Addr {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil || !p.Addr().Is4() || p.Addr().IsLoopback() {
			continue
		}
		if !e.lease.Range.Contains(p.Addr()) && !e.lease.Upstream.Contains(p.Addr()) && !e.lease.CGNAT.Contains(p.Addr()) &&
			!network.DefaultRange.Contains(p.Addr()) && !netip.MustParsePrefix("10.232.0.0/16").Contains(p.Addr()) {
			return p.Addr()
		}
	}
	t.Skip("the host has no IPv4 address of its own outside loopback")
	return netip.Addr{}
}

// readSysctl reads a /proc/sys file in the calling thread's namespace.
func readSysctl(path string) string {
	b, _ := os.ReadFile("/proc/sys/" + path)
	return string(bytes.TrimSpace(b))
}

// waitCount waits until count reports at least want. It reads a kernel
// counter, which sends no event when it moves; the wait ends as soon as
// it has.
func waitCount(t *testing.T, count func() (uint64, error), want uint64) {
	t.Helper()
	deadline := time.Now().Add(hangTimeout)
	for {
		n, err := count()
		if err != nil {
			t.Fatal(err)
		}
		if n >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("counter at %d, want %d", n, want)
		}
		time.Sleep(time.Millisecond)
	}
}
