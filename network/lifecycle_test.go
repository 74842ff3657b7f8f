package network_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"rung.dev/rung"
	"rung.dev/rung/network"
)

// A policy change reaches a live namespace at once, connections already
// open included.
func TestSetPolicyOnLiveNamespace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	up := newUpstream(t, e)
	l := e.attach(t, egress)
	outside := netip.AddrPortFrom(up.public, up.port)

	// Egress: the outside address is the proxy's to serve.
	proxied := guestDial(t, l, outside)
	e.proxy.expect(t, outside, l.GuestIP)

	if err := e.m.SetPolicy(t.Context(), l.Sandbox, open); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.m.Link(l.Sandbox); got.Policy.Mode != rung.NetworkOpen {
		t.Errorf("Link after SetPolicy: mode %q", got.Policy.Mode)
	}
	// The connection to the proxy is no longer allowed: its next packet
	// is answered with a reset.
	if _, err := talk(proxied, "late"); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("proxied connection after the switch to open: %v, want ECONNRESET", err)
	}
	direct := guestDial(t, l, outside)
	roundTrip(t, direct, up.server.next(t))

	if err := e.m.SetPolicy(t.Context(), l.Sandbox, egress); err != nil {
		t.Fatal(err)
	}
	if _, err := talk(direct, "late"); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("direct connection after the switch to egress: %v, want ECONNRESET", err)
	}
	guestDial(t, l, outside)
	e.proxy.expect(t, outside, l.GuestIP)
	up.server.none(t)
}

// Root in the sandbox forges its source address, by a second address on
// eth0 and by raw packets: the host end drops all of it, whatever the
// mode's rules would have done with the packets.
func TestForgedSource(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	l := e.attach(t, egress)
	other := e.attach(t, egress)
	host := hostAddr(t, e)
	drops := func() (uint64, error) { return network.SpoofDrops(e.m, l.Sandbox) }
	before, err := drops()
	if err != nil {
		t.Fatal(err)
	}
	var spoofed int // a socket bound to the other sandbox's address, its SYN sent
	in(t, l.NetNS, func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return err
		}
		defer h.Close()
		eth0, err := h.LinkByName("eth0")
		if err != nil {
			return err
		}
		forged := &net.IPNet{IP: other.GuestIP.AsSlice(), Mask: net.CIDRMask(32, 32)}
		if err := h.AddrAdd(eth0, &netlink.Addr{IPNet: forged}); err != nil {
			return err
		}
		if spoofed, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		if err := unix.Bind(spoofed, &unix.SockaddrInet4{Addr: other.GuestIP.As4()}); err != nil {
			return err
		}
		if err := unix.Connect(spoofed, &unix.SockaddrInet4{Addr: [4]byte{203, 0, 113, 7}, Port: 80}); err != unix.EINPROGRESS {
			return err
		}
		// The host's own address as the source of a DNS query: an
		// answer would go to the host itself.
		return rawUDP(netip.AddrPortFrom(host, 5353), netip.AddrPortFrom(l.HostIP, 53), []byte("forged"))
	})
	defer unix.Close(spoofed)
	waitCount(t, drops, before+2)

	// Both were dropped where the counter counted them: the first query
	// and the first connection the servers see are the honest ones sent
	// after.
	in(t, l.NetNS, func() error {
		if got, err := query(netip.AddrPortFrom(l.HostIP, 53), "honest"); err != nil || got != "answer:honest" {
			return err
		}
		return nil
	})
	if q := <-e.dns.queries; q != "honest" {
		t.Errorf("DNS server's first query %q, want the honest one", q)
	}
	honest := netip.MustParseAddrPort("203.0.113.7:81")
	guestDial(t, l, honest)
	e.proxy.expect(t, honest, l.GuestIP)
}

// Attach takes a running process's namespace as well; Detach leaves it
// with loopback only.
func TestAttachProcessNamespace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := processNamespace(t)
	l, err := e.m.Attach(t.Context(), rung.NewSandboxID(), ns, egress)
	if err != nil {
		t.Fatal(err)
	}
	if l.NetNS != ns {
		t.Errorf("NetNS = %q, want %q", l.NetNS, ns)
	}
	dst := netip.MustParseAddrPort("203.0.113.7:443")
	guestDial(t, l, dst)
	e.proxy.expect(t, dst, l.GuestIP)
	if err := e.m.Detach(t.Context(), l.Sandbox); err != nil {
		t.Fatal(err)
	}
	network.Settle(e.m)
	if got := linksIn(t, ns); !slices.Equal(got, []string{"lo"}) {
		t.Errorf("links after Detach: %v, want lo only", got)
	}
	if _, err := os.Stat(ns); err != nil {
		t.Errorf("the process's namespace: %v", err)
	}
}

// A link the kernel deletes while Detach looks at it (its namespace went
// with the container's last process) is detached all the same: its rules
// and record go, and its subnet is free for the next Attach.
func TestDetachLinkGoneMeanwhile(t *testing.T) {
	e := newEnv(t)
	ns := processNamespace(t)
	l, err := e.m.Attach(t.Context(), rung.NewSandboxID(), ns, egress)
	if err != nil {
		t.Fatal(err)
	}
	network.SetBeforeLinkDown(e.m, func(iface string) {
		link, err := netlink.LinkByName(iface)
		if err == nil {
			err = netlink.LinkDel(link)
		}
		if err != nil {
			t.Errorf("delete %s under Detach: %v", iface, err)
		}
	})
	if err := e.m.Detach(t.Context(), l.Sandbox); err != nil {
		t.Fatalf("Detach of a link deleted meanwhile: %v", err)
	}
	network.SetBeforeLinkDown(e.m, nil)
	if slices.ContainsFunc(e.m.Links(), func(x network.Link) bool { return x.Sandbox == l.Sandbox }) {
		t.Error("the detached sandbox's link is still recorded")
	}
	chains, err := network.SandboxChains(e.m)
	if err != nil {
		t.Fatal(err)
	}
	if len(chains) != 0 {
		t.Errorf("chains left after Detach: %v", chains)
	}
	if _, err := e.m.Attach(t.Context(), rung.NewSandboxID(), processNamespace(t), egress); err != nil {
		t.Errorf("Attach after: %v", err)
	}
}

// processNamespace starts a process in a network namespace of its own,
// stopped when the test ends, and returns the namespace's path.
func processNamespace(t testing.TB) string {
	t.Helper()
	cmd := exec.Command("cat")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // cat exits at end of input
		cmd.Wait()
	})
	return filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "ns/net")
}

// linksIn lists the interfaces in the namespace at path.
func linksIn(t *testing.T, path string) []string {
	t.Helper()
	var names []string
	in(t, path, func() error {
		ifs, err := net.Interfaces()
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		return err
	})
	return names
}

// TestNoneLink checks a link of mode none (a gVisor sandbox's in mode
// none): every TCP connection is refused at once, the proxy port too,
// until SetPolicy switches it to egress, where the proxy gets them.
func TestNoneLink(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	l := e.attach(t, network.Policy{Mode: rung.NetworkNone})
	public := netip.MustParseAddrPort("203.0.113.7:80")
	for _, addr := range []netip.AddrPort{public, netip.AddrPortFrom(l.HostIP, uint16(e.proxy.port())), netip.MustParseAddrPort("169.254.169.254:80")} {
		in(t, l.NetNS, func() error { return wantErrno(addr, syscall.ECONNREFUSED) })
	}
	if err := e.m.SetPolicy(t.Context(), l.Sandbox, egress); err != nil {
		t.Fatal(err)
	}
	guestDial(t, l, public)
	e.proxy.expect(t, public, l.GuestIP)
	if err := e.m.SetPolicy(t.Context(), l.Sandbox, network.Policy{Mode: rung.NetworkNone}); err != nil {
		t.Fatal(err)
	}
	in(t, l.NetNS, func() error { return wantErrno(public, syscall.ECONNREFUSED) })
}

func TestAttachErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	l := e.attach(t, egress)
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"invalid sandbox id", attachErr(t, e, "nope", "", egress), rung.ErrInvalid},
		{"an unknown mode", attachErr(t, e, rung.NewSandboxID(), "", network.Policy{Mode: "closed"}), rung.ErrInvalid},
		{"IPv6 allowed prefix", attachErr(t, e, rung.NewSandboxID(), "", network.Policy{Mode: rung.NetworkOpen, Allow: []netip.Prefix{netip.MustParsePrefix("fd00::/8")}}), rung.ErrInvalid},
		{"the daemon's own namespace", attachErr(t, e, rung.NewSandboxID(), "/proc/self/ns/net", egress), rung.ErrInvalid},
		{"not a namespace", attachErr(t, e, rung.NewSandboxID(), "/etc/hostname", egress), rung.ErrInvalid},
		{"attached already", attachErr(t, e, l.Sandbox, "", egress), rung.ErrConflict},
		{"a namespace with an eth0", attachErr(t, e, rung.NewSandboxID(), l.NetNS, egress), rung.ErrConflict},
		{"SetPolicy of no link", e.m.SetPolicy(t.Context(), rung.NewSandboxID(), egress), rung.ErrNotFound},
		{"Adopt of no link", adoptErr(t, e, rung.NewSandboxID()), rung.ErrNotFound},
		{"Detach of no link", e.m.Detach(t.Context(), rung.NewSandboxID()), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.want) || (tc.want == nil) != (tc.err == nil) {
				t.Errorf("err = %v, want %v", tc.err, tc.want)
			}
		})
	}
	// Failed attaches left nothing: one link, and it still works.
	if got := e.m.Links(); len(got) != 1 || got[0].Sandbox != l.Sandbox {
		t.Errorf("links after failed attaches: %+v", got)
	}
	if chains, err := network.SandboxChains(e.m); err != nil || len(chains) != 2 {
		t.Errorf("sandbox chains after failed attaches: %v, %v; want the one link's two", chains, err)
	}
	dst := netip.MustParseAddrPort("203.0.113.7:80")
	guestDial(t, l, dst)
	e.proxy.expect(t, dst, l.GuestIP)
}

func attachErr(t *testing.T, e *env, id rung.SandboxID, ns string, p network.Policy) error {
	_, err := e.m.Attach(t.Context(), id, ns, p)
	return err
}

func adoptErr(t *testing.T, e *env, id rung.SandboxID) error {
	_, err := e.m.Adopt(t.Context(), id)
	return err
}

// A daemon crashes with sandboxes attached; the next one keeps one of
// them and removes the rest, and what no record names.
func TestReconcileAfterCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	kept := e.attach(t, egress)
	gone := e.attach(t, network.Policy{Mode: rung.NetworkOpen})
	proc := processNamespace(t)
	goneProc, err := e.m.Attach(t.Context(), rung.NewSandboxID(), proc, egress)
	if err != nil {
		t.Fatal(err)
	}
	// A link in the range that no record names (a lost state directory).
	stray := "rung" + hex(e.lease.Range.Addr(), 63)
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: stray}, PeerName: "rungstray" + strconv.Itoa(e.lease.N)}); err != nil {
		t.Fatal(err)
	}
	// The crash: nothing is detached.
	e.m.Close()

	e.m = e.open(t)
	removed, err := e.m.Reconcile(t.Context(), func(id rung.SandboxID) bool { return id == kept.Sandbox })
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []rung.SandboxID{gone.Sandbox, goneProc.Sandbox}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for _, name := range []string{gone.Interface, goneProc.Interface, stray} {
		if _, err := netlink.LinkByName(name); err == nil {
			t.Errorf("link %s is left", name)
		}
	}
	if got := linksIn(t, proc); !slices.Equal(got, []string{"lo"}) {
		t.Errorf("the process's namespace has %v, want lo only", got)
	}
	if _, err := os.Stat(gone.NetNS); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace %s: %v, want it removed", gone.NetNS, err)
	}
	chains, err := network.SandboxChains(e.m)
	slices.Sort(chains)
	tag := kept.Interface[len("rung"):]
	if err != nil || !slices.Equal(chains, []string{"filter_" + tag, "nat_" + tag}) {
		t.Errorf("sandbox chains %v, %v; want the kept sandbox's only", chains, err)
	}

	// The kept one is taken over as it was, and works.
	adopted, err := e.m.Adopt(t.Context(), kept.Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	if adopted.GuestIP != kept.GuestIP || adopted.NetNS != kept.NetNS || adopted.Policy.Mode != rung.NetworkEgress {
		t.Errorf("adopted %+v, want %+v", adopted, kept)
	}
	dst := netip.MustParseAddrPort("203.0.113.7:80")
	guestDial(t, adopted, dst)
	e.proxy.expect(t, dst, kept.GuestIP)
	// A new attach does not take its subnet.
	fresh := e.attach(t, egress)
	if fresh.Subnet == kept.Subnet {
		t.Errorf("new attach took the kept sandbox's subnet %s", fresh.Subnet)
	}

	// Detached, nothing of either is left.
	for _, id := range []rung.SandboxID{kept.Sandbox, fresh.Sandbox} {
		if err := e.m.Detach(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	network.Settle(e.m)
	links, err := network.ListLinks(&netlink.Handle{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if p, ok := linkSubnet(l.Attrs().Name); ok && e.lease.Range.Contains(p) {
			t.Errorf("link %s is left", l.Attrs().Name)
		}
	}
	if chains, err := network.SandboxChains(e.m); err != nil || len(chains) != 0 {
		t.Errorf("sandbox chains %v, %v; want none", chains, err)
	}
	for _, dir := range []string{"links", "ns"} {
		if ents, err := os.ReadDir(filepath.Join(e.cfg.StateDir, dir)); err != nil || len(ents) != 0 {
			t.Errorf("%s: %v, %v; want empty", dir, ents, err)
		}
	}
}

// hex is the tag of the i-th /30 of the range starting at base.
func hex(base netip.Addr, i int) string {
	a := base.As4()
	return fmt.Sprintf("%08x", binary.BigEndian.Uint32(a[:])+uint32(i)*4)
}

// linkSubnet decodes a host end's name into its subnet's address.
func linkSubnet(name string) (netip.Addr, bool) {
	var v uint32
	if len(name) != 12 || !strings.HasPrefix(name, "rung") {
		return netip.Addr{}, false
	}
	if _, err := fmt.Sscanf(name[4:], "%08x", &v); err != nil {
		return netip.Addr{}, false
	}
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], v)
	return netip.AddrFrom4(a), true
}
