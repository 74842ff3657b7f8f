// Package nettest gives tests of sandbox networking what they share: a
// lease on addresses and an nftables table that no other test process on
// the host uses at the same time, and the original destination of a
// redirected connection.
package nettest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A Lease is one of 256 slots a test holds until it ends. Test processes
// (several packages, -count, helpers running side by side) take distinct
// slots, so their links, tables and routes never meet.
type Lease struct {
	N int
	// Range is the slot's sandbox range, 10.232.N.0/24 (64 links),
	// outside rung's default range.
	Range netip.Prefix
	// Table is the slot's nftables table, "rungtestN".
	Table string
	// Upstream is a /24 of the benchmarking range 198.18.0.0/15,
	// 198.18.N.0/24, for servers that stand in for the outside world
	// in a namespace of the test's own; CGNAT is 100.64.N.0/24, for one
	// in a private range.
	Upstream, CGNAT netip.Prefix
}

const leaseDir = "/run/rung-nettest"

// Take leases a free slot for t, released when t ends (or when the
// process dies: the lease is an flock).
func Take(t testing.TB) Lease {
	t.Helper()
	if err := os.MkdirAll(leaseDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for n := range 256 {
		f, err := os.OpenFile(filepath.Join(leaseDir, fmt.Sprint(n)), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		t.Cleanup(func() { f.Close() })
		return Lease{
			N:        n,
			Range:    netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 232, byte(n), 0}), 24),
			Table:    fmt.Sprintf("rungtest%d", n),
			Upstream: netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(n), 0}), 24),
			CGNAT:    netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 64, byte(n), 0}), 24),
		}
	}
	t.Fatal("no free network test lease")
	return Lease{}
}

// OriginalDst returns where the peer of c, a connection a DNAT rule
// redirected, meant to connect: getsockopt(SO_ORIGINAL_DST).
func OriginalDst(c *net.TCPConn) (netip.AddrPort, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var dst netip.AddrPort
	var serr error
	err = raw.Control(func(fd uintptr) {
		// The option fills a sockaddr_in (16 bytes); the IPv6 mreq
		// getter is x/sys's way to read 16 raw bytes.
		var mreq *unix.IPv6Mreq
		if mreq, serr = unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, unix.SO_ORIGINAL_DST); serr != nil {
			return
		}
		sa := mreq.Multiaddr // family(2) port(2, big endian) addr(4) zero(8)
		dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(sa[4:8])), binary.BigEndian.Uint16(sa[2:4]))
	})
	return dst, errors.Join(err, serr)
}
