package egress

import (
	"fmt"
	"net"
	"net/netip"
)

// special are the ranges the proxy never dials unless an allow rule's
// CIDR contains the address: the host itself, its neighbours and the
// cloud's metadata service.
var special = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local (metadata)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved"},
	{netip.MustParsePrefix("::/96"), "a reserved"}, // ::, ::1 and IPv4-compatible addresses
	{netip.MustParsePrefix("fe80::/10"), "a link-local"},
	{netip.MustParsePrefix("fc00::/7"), "a unique-local"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast"},
}

// Ranges that embed an IPv4 address, checked as that address too.
var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// addrGuard says which addresses the proxy must not dial on its own
// authority. It is immutable.
type addrGuard struct {
	extra []netip.Prefix // Config.Forbidden and the host's own addresses
}

func newAddrGuard(forbidden []netip.Prefix) addrGuard {
	g := addrGuard{extra: append([]netip.Prefix(nil), forbidden...)}
	// The host's own public addresses reach its services (the daemon's API,
	// sshd) as surely as loopback does.
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok {
					ip = ip.Unmap()
					g.extra = append(g.extra, netip.PrefixFrom(ip, ip.BitLen()))
				}
			}
		}
	}
	return g
}

// refusal returns why a is not to be dialed ("a loopback address"), or ""
// when it may be.
func (g addrGuard) refusal(a netip.Addr) string {
	a = a.Unmap()
	if !a.IsValid() {
		return "an invalid address"
	}
	if a.Zone() != "" {
		return "a scoped address"
	}
	for _, s := range special {
		if s.prefix.Contains(a) {
			return s.what + " address"
		}
	}
	for _, p := range g.extra {
		if p.Contains(a) {
			return "one of the host's own or forbidden addresses"
		}
	}
	switch {
	case nat64.Contains(a):
		b := a.As16()
		return g.refusal(netip.AddrFrom4([4]byte(b[12:16])))
	case sixTo4.Contains(a):
		b := a.As16()
		return g.refusal(netip.AddrFrom4([4]byte(b[2:6])))
	}
	return ""
}

// refusedMessage is the sandbox's message for a refused address.
func refusedMessage(t Target, why string) string {
	name := destText(Target{Host: t.Host, Port: t.Port, Method: t.Method, Path: t.Path})
	if t.Host == "" {
		name = destText(t)
	}
	return fmt.Sprintf("rung: egress to %s refused: %s is %s; only a rule that allows its CIDR reaches it", name, t.IP, why)
}
