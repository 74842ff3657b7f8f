package egress

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"
)

// soOriginalDst is SO_ORIGINAL_DST (linux/netfilter_ipv4.h) and
// IP6T_SO_ORIGINAL_DST (linux/netfilter_ipv6/ip6_tables.h): both 80.
const soOriginalDst = 80

// OriginalDst returns where c was going before netfilter redirected it to
// the proxy (a DNAT or REDIRECT rule, with connection tracking): the
// getsockopt SO_ORIGINAL_DST of its socket. A connection that was not
// redirected has none and returns an error.
func OriginalDst(c *net.TCPConn) (netip.AddrPort, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("original destination: %w", err)
	}
	local, _ := c.LocalAddr().(*net.TCPAddr)
	v4 := local != nil && local.IP.To4() != nil
	var ap netip.AddrPort
	var serr error
	err = rc.Control(func(fd uintptr) {
		if v4 {
			var sa syscall.RawSockaddrInet4
			if serr = getsockopt(fd, syscall.SOL_IP, unsafe.Pointer(&sa), unsafe.Sizeof(sa)); serr == nil {
				ap = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), ntohs(sa.Port))
			}
			return
		}
		var sa syscall.RawSockaddrInet6
		if serr = getsockopt(fd, syscall.SOL_IPV6, unsafe.Pointer(&sa), unsafe.Sizeof(sa)); serr == nil {
			ap = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), ntohs(sa.Port))
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("original destination of %s: %w", c.RemoteAddr(), err)
	}
	return ap, nil
}

func getsockopt(fd uintptr, level int, p unsafe.Pointer, size uintptr) error {
	l := uint32(size)
	_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, uintptr(level), soOriginalDst, uintptr(p), uintptr(unsafe.Pointer(&l)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// ntohs reads a port that the kernel stored in network byte order.
func ntohs(port uint16) uint16 {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], port)
	return binary.BigEndian.Uint16(b[:])
}

// originalDstConn is Config.OriginalDst's default.
func originalDstConn(c net.Conn) (netip.AddrPort, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("original destination: %T is not a TCP connection", c)
	}
	return OriginalDst(tc)
}
