package network_test

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"rung.dev/rung"
	"rung.dev/rung/network"
)

// guestDial dials addr from inside l's namespace and returns the
// connection, usable from any goroutine.
func guestDial(t *testing.T, l network.Link, addr netip.AddrPort) *net.TCPConn {
	t.Helper()
	var c *net.TCPConn
	in(t, l.NetNS, func() (err error) {
		c, err = dial(addr)
		return err
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip checks that bytes pass both ways between the sandbox's end
// and the server's.
func roundTrip(t *testing.T, guest, server net.Conn) {
	t.Helper()
	done := make(chan error, 1)
	go func() { // ends when the server side has echoed one message
		buf := make([]byte, 64)
		n, err := server.Read(buf)
		if err == nil {
			_, err = server.Write(append([]byte("echo:"), buf[:n]...))
		}
		done <- err
	}()
	got, err := talk(guest, "ping")
	if err != nil || got != "echo:ping" {
		t.Errorf("round trip: %q, %v", got, err)
	}
	if err := <-done; err != nil {
		t.Error(err)
	}
}

func TestEgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	l := e.attach(t, egress)
	other := e.attach(t, egress)
	host := hostAddr(t, e)
	public := netip.MustParseAddrPort("203.0.113.7:80")

	// Every TCP connection lands on the proxy, whatever it was for; the
	// proxy learns where from SO_ORIGINAL_DST.
	for _, dst := range []struct {
		name string
		addr netip.AddrPort
	}{
		{"a public address", public},
		{"the host's own address", netip.AddrPortFrom(host, 22)},
		{"the host end", netip.AddrPortFrom(l.HostIP, 8080)},
		{"another sandbox's host end", netip.AddrPortFrom(other.HostIP, 80)},
		{"another sandbox", netip.AddrPortFrom(other.GuestIP, 80)},
		{"cloud metadata", netip.MustParseAddrPort("169.254.169.254:80")},
	} {
		t.Run("TCP to "+dst.name+" reaches the proxy", func(t *testing.T) {
			guestDial(t, l, dst.addr)
			e.proxy.expect(t, dst.addr, l.GuestIP)
		})
	}
	t.Run("the proxy's connection carries bytes both ways", func(t *testing.T) {
		c := guestDial(t, l, public)
		roundTrip(t, c, e.proxy.next(t))
	})

	tests := []struct {
		name  string
		probe func() error
	}{
		{"UDP DNS to any address is answered by the daemon", func() error {
			got, err := query(netip.MustParseAddrPort("203.0.113.9:53"), "q1")
			if err != nil || got != "answer:q1" {
				return fmt.Errorf("query: %q, %v", got, err)
			}
			return nil
		}},
		{"UDP DNS to the host end is answered", func() error {
			got, err := query(netip.AddrPortFrom(l.HostIP, 53), "q2")
			if err != nil || got != "answer:q2" {
				return fmt.Errorf("query: %q, %v", got, err)
			}
			return nil
		}},
		{"TCP DNS is answered by the daemon", func() error {
			c, err := dial(netip.MustParseAddrPort("203.0.113.9:53"))
			if err != nil {
				return err
			}
			defer c.Close()
			if got, err := talk(c, "q3"); got != "answer:q3" {
				return fmt.Errorf("query: %q, %v", got, err)
			}
			return nil
		}},
		{"other UDP is refused at once", func() error {
			_, err := query(netip.MustParseAddrPort("203.0.113.9:123"), "ntp")
			if !errors.Is(err, syscall.ECONNREFUSED) {
				return fmt.Errorf("UDP: %v, want ECONNREFUSED", err)
			}
			return nil
		}},
		{"ICMP is refused at once", func() error {
			for _, dst := range []netip.Addr{netip.MustParseAddr("203.0.113.9"), l.HostIP} {
				typ, code, err := icmpEcho(dst)
				if err != nil || typ != 3 || code != 13 {
					return fmt.Errorf("echo to %s: ICMP %d/%d, %v; want 3/13 (administratively prohibited)", dst, typ, code, err)
				}
			}
			return nil
		}},
		{"IPv6 is unreachable at once", func() error {
			if err := wantErrno(netip.MustParseAddrPort("[2001:db8::1]:80"), syscall.ENETUNREACH); err != nil {
				return err
			}
			if v := readSysctl("net/ipv6/conf/eth0/disable_ipv6"); v != "1" {
				return fmt.Errorf("eth0 disable_ipv6 = %q, want 1", v)
			}
			if v := readSysctl("net/ipv6/conf/lo/disable_ipv6"); v != "0" {
				return fmt.Errorf("lo disable_ipv6 = %q, want 0: localhost may resolve to ::1", v)
			}
			return nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { in(t, l.NetNS, tc.probe) })
	}
	if got, want := string(l.ResolvConf()), "nameserver "+l.HostIP.String()+"\n"; !strings.Contains(got, want) {
		t.Errorf("resolv.conf %q, want %q in it", got, want)
	}
}

// upstream is a namespace of the test's own that stands in for the
// outside world: reached through the host's routes, it has an address in
// the benchmarking range (outside every rejected one) and one in CGNAT
// space (rejected unless allowed).
type upstream struct {
	ns              string     // its namespace
	public, private netip.Addr // its addresses
	gwPublic        netip.Addr // the host's address toward it
	gwPrivate       netip.Addr
	port            uint16
	server          *acceptor
}

func newUpstream(t *testing.T, e *env) *upstream {
	t.Helper()
	pub, priv := e.lease.Upstream.Addr().As4(), e.lease.CGNAT.Addr().As4()
	u := &upstream{
		gwPublic: netip.AddrFrom4([4]byte{pub[0], pub[1], pub[2], 1}), public: netip.AddrFrom4([4]byte{pub[0], pub[1], pub[2], 2}),
		gwPrivate: netip.AddrFrom4([4]byte{priv[0], priv[1], priv[2], 5}), private: netip.AddrFrom4([4]byte{priv[0], priv[1], priv[2], 6}),
	}
	path := filepath.Join(t.TempDir(), "upstream")
	u.ns = path
	if err := network.CreateNamespace(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { network.RemoveNamespace(path) })
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	name := fmt.Sprintf("rtu%d", e.lease.N)
	if old, err := netlink.LinkByName(name); err == nil {
		netlink.LinkDel(old) // a dead test process's
	}
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: "eth0", PeerNamespace: netlink.NsFd(fd)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(name); err == nil {
			netlink.LinkDel(l)
		}
	})
	setup := func(h *netlink.Handle, dev string, addrs ...netip.Addr) error {
		l, err := h.LinkByName(dev)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if err := h.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(30, 32)}}); err != nil {
				return err
			}
		}
		return h.LinkSetUp(l)
	}
	host, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if err := setup(host, name, u.gwPublic, u.gwPrivate); err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	in(t, path, func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		if err := setup(h, "eth0", u.public, u.private); err != nil {
			return err
		}
		ln, err = net.Listen("tcp4", "0.0.0.0:0")
		return err
	})
	u.server = acceptOn(t, ln)
	u.port = uint16(u.server.port())
	return u
}

func TestOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	up := newUpstream(t, e)
	l := e.attach(t, open)
	other := e.attach(t, egress)
	host := hostAddr(t, e)

	t.Run("TCP to an outside address is forwarded and masqueraded", func(t *testing.T) {
		dst := netip.AddrPortFrom(up.public, up.port)
		c := guestDial(t, l, dst)
		s := up.server.next(t)
		if from := s.RemoteAddr().(*net.TCPAddr).AddrPort().Addr(); from != up.gwPublic {
			t.Errorf("upstream sees %s, want the host's address %s", from, up.gwPublic)
		}
		roundTrip(t, c, s)
	})
	refused := []struct {
		name string
		addr netip.AddrPort
	}{
		// The private address comes first: it is the test's own, so a
		// broken rule sends nothing off this host.
		{"a private address", netip.AddrPortFrom(up.private, up.port)},
		{"cloud metadata", netip.MustParseAddrPort("169.254.169.254:80")},
		// The proxy listens on every address of the host.
		{"the host's own address", netip.AddrPortFrom(host, uint16(e.proxy.port()))},
		{"the host end's proxy port", netip.AddrPortFrom(l.HostIP, uint16(e.proxy.port()))},
		{"another sandbox's host end", netip.AddrPortFrom(other.HostIP, uint16(e.proxy.port()))},
		{"another sandbox", netip.AddrPortFrom(other.GuestIP, 80)},
		{"the upstream's gateway (a host address)", netip.AddrPortFrom(up.gwPublic, uint16(e.proxy.port()))},
	}
	for _, tc := range refused {
		t.Run(tc.name+" is refused at once", func(t *testing.T) {
			in(t, l.NetNS, func() error { return wantErrno(tc.addr, syscall.ECONNREFUSED) })
		})
	}
	t.Run("ICMP to a refused address is refused at once", func(t *testing.T) {
		in(t, l.NetNS, func() error {
			typ, code, err := icmpEcho(up.private)
			if err != nil || typ != 3 || code != 13 {
				return fmt.Errorf("ICMP %d/%d, %v; want 3/13 (administratively prohibited)", typ, code, err)
			}
			return nil
		})
	})
	t.Run("DNS is still answered by the daemon", func(t *testing.T) {
		in(t, l.NetNS, func() error {
			got, err := query(netip.AddrPortFrom(up.public, 53), "q")
			if err != nil || got != "answer:q" {
				return fmt.Errorf("query: %q, %v", got, err)
			}
			return nil
		})
	})
	t.Run("an allowed private prefix is reached", func(t *testing.T) {
		allow := network.Policy{Mode: rung.NetworkOpen, Allow: []netip.Prefix{netip.PrefixFrom(up.private, 30).Masked()}}
		if err := e.m.SetPolicy(t.Context(), l.Sandbox, allow); err != nil {
			t.Fatal(err)
		}
		c := guestDial(t, l, netip.AddrPortFrom(up.private, up.port))
		roundTrip(t, c, up.server.next(t))
		in(t, l.NetNS, func() error {
			return wantErrno(netip.MustParseAddrPort("169.254.169.254:80"), syscall.ECONNREFUSED)
		})
	})
	t.Run("nothing outside opens a connection into a sandbox", func(t *testing.T) {
		var ln net.Listener
		in(t, l.NetNS, func() (err error) {
			ln, err = net.Listen("tcp4", "0.0.0.0:0")
			return err
		})
		inside := acceptOn(t, ln)
		in(t, up.ns, func() error {
			h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
			if err != nil {
				return err
			}
			defer h.Close()
			// The upstream routes the sandboxes' range through the host,
			// as a machine on the host's network could.
			r := e.lease.Range
			if err := h.RouteAdd(&netlink.Route{Dst: &net.IPNet{IP: r.Addr().AsSlice(), Mask: net.CIDRMask(r.Bits(), 32)}, Gw: up.gwPublic.AsSlice()}); err != nil {
				return err
			}
			return wantErrno(netip.AddrPortFrom(l.GuestIP, uint16(inside.port())), syscall.ECONNREFUSED)
		})
		inside.none(t)
	})
	e.proxy.none(t)
}

// The sandbox's root sends to 127.0.0.2 through eth0 (it may: it owns its
// routes and route_localnet). The host's loopback listener never sees it.
func TestHostLoopback(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	loop := newAcceptor(t, "127.0.0.2:0")
	dst := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), uint16(loop.port()))
	for _, p := range []network.Policy{egress, open} {
		t.Run(string(p.Mode), func(t *testing.T) {
			l := e.attach(t, p)
			in(t, l.NetNS, func() error { return routeLoopbackOut(l) })
			if p.Mode == rung.NetworkEgress {
				guestDial(t, l, dst)
				e.proxy.expect(t, dst, l.GuestIP)
			} else {
				in(t, l.NetNS, func() error { return wantErrno(dst, syscall.ECONNREFUSED) })
			}
			loop.none(t)
		})
	}
}

// routeLoopbackOut sends 127.0.0.2 (not the sandbox's own 127.0.0.1) out
// through eth0 to the host end.
func routeLoopbackOut(l network.Link) error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	eth0, err := h.LinkByName("eth0")
	if err != nil {
		return err
	}
	local := &netlink.Route{Table: unix.RT_TABLE_LOCAL, Type: unix.RTN_LOCAL, LinkIndex: lo.Attrs().Index,
		Dst: &net.IPNet{IP: net.IPv4(127, 0, 0, 0).To4(), Mask: net.CIDRMask(8, 32)}, Scope: netlink.SCOPE_HOST}
	if err := h.RouteDel(local); err != nil {
		return fmt.Errorf("delete local 127/8: %w", err)
	}
	for _, dev := range []string{"all", "eth0"} {
		if err := network.WriteSysctl("net/ipv4/conf/"+dev+"/route_localnet", "1"); err != nil {
			return err
		}
	}
	return h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: l.HostIP.AsSlice(),
		Dst: &net.IPNet{IP: net.IPv4(127, 0, 0, 2).To4(), Mask: net.CIDRMask(32, 32)}})
}

// The daemon reaches a sandbox's ports (previews, port forwarding) in
// every mode: the sandbox's answers pass its filter.
func TestHostReachesSandbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []network.Policy{egress, open} {
		t.Run(string(p.Mode), func(t *testing.T) {
			l := e.attach(t, p)
			var ln net.Listener
			in(t, l.NetNS, func() (err error) {
				ln, err = net.Listen("tcp4", "0.0.0.0:0")
				return err
			})
			server := acceptOn(t, ln)
			c, err := net.DialTimeout("tcp4", netip.AddrPortFrom(l.GuestIP, uint16(server.port())).String(), hangTimeout)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			roundTrip(t, c, server.next(t))
		})
	}
}
