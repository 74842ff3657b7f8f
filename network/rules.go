package network

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"syscall"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
	"rung.dev/rung"
)

// The table's layout. Base chains hook the kernel; each sandbox has two
// regular chains, named after its tag, reached through the two verdict
// maps keyed by the host end's name:
//
//	prerouting_nat     nat, prerouting, dstnat:      iifname vmap @nat_links
//	prerouting_filter  filter, prerouting, dstnat+10: iifname vmap @filter_links
//	forward            filter, forward, filter:      into the range, not an answer -> deny
//	postrouting_nat    nat, postrouting, srcnat:     from the range to elsewhere -> masquerade
//	nat_TAG            the sandbox's redirections: DNS; egress: all TCP;
//	                   open: loopback destinations to the host end
//	filter_TAG         the sandbox's policy, after its redirections
//	deny               TCP: reset; UDP: ICMP port unreachable; the rest:
//	                   ICMP administratively prohibited
//	host_local         destinations open mode never reaches
//	private            destinations open mode reaches only if allowed
//
// The filter chain runs after DNAT, so it sees where a redirected packet
// now goes (the host end's proxy or DNS port), and before routing, so
// what it rejects never reaches the host's sockets or its forwarding.
const (
	natMapName    = "nat_links"
	filterMapName = "filter_links"
	denyChain     = "deny"
	localChain    = "host_local"
	privateChain  = "private"
)

// Private ranges: open mode rejects them unless a Policy allows them.
var privatePrefixes = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("169.254.0.0/16"),
}

// Ranges no sandbox reaches in open mode, whatever its Policy says (the
// manager's own range is added to them).
var localPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

// setIDMu guards the nftables module's package-level set ID counter,
// which Conn.AddSet increments without a lock of its own.
var setIDMu sync.Mutex

// installBase creates the table, its maps and shared chains, and (re)writes
// the base chains' rules, in one transaction: idempotent, and it leaves
// every sandbox's chains and map entries as they are.
func (m *Manager) installBase() error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	c.AddTable(m.table)
	setIDMu.Lock()
	for _, s := range []*nftables.Set{m.natMap, m.filterMap} {
		err = errors.Join(err, c.AddSet(s, nil))
	}
	setIDMu.Unlock()
	if err != nil {
		return err
	}
	prio := func(p nftables.ChainPriority) *nftables.ChainPriority { return &p }
	accept := nftables.ChainPolicyAccept
	chains := []struct {
		chain *nftables.Chain
		rules [][]expr.Any
	}{
		{&nftables.Chain{Name: denyChain}, [][]expr.Any{
			append(l4(unix.IPPROTO_TCP), &expr.Reject{Type: unix.NFT_REJECT_TCP_RST}),
			// UDP gets "port unreachable": the one code both Linux (a
			// fatal error: ECONNREFUSED on a connected socket) and
			// gVisor's stack (which ignores "administratively
			// prohibited" and "host unreachable" is not fatal to Linux's
			// UDP) turn into an error at once.
			append(l4(unix.IPPROTO_UDP), &expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_PORT_UNREACH}),
			{&expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_ADMIN_PROHIBITED}},
		}},
		{&nftables.Chain{Name: localChain}, m.localRules()},
		{&nftables.Chain{Name: privateChain}, prefixRules(privatePrefixes, gotoChain(denyChain))},
		{&nftables.Chain{Name: "prerouting_nat", Type: nftables.ChainTypeNAT, Hooknum: nftables.ChainHookPrerouting,
			Priority: nftables.ChainPriorityNATDest, Policy: &accept},
			[][]expr.Any{dispatch(m.natMap)}},
		{&nftables.Chain{Name: "prerouting_filter", Type: nftables.ChainTypeFilter, Hooknum: nftables.ChainHookPrerouting,
			Priority: prio(*nftables.ChainPriorityNATDest + 10), Policy: &accept},
			[][]expr.Any{dispatch(m.filterMap)}},
		// Nothing from outside opens a connection into a sandbox; the
		// host's own connections (output, not forward) still do.
		{&nftables.Chain{Name: "forward", Type: nftables.ChainTypeFilter, Hooknum: nftables.ChainHookForward,
			Priority: nftables.ChainPriorityFilter, Policy: &accept},
			[][]expr.Any{concat(ipv4(), daddrIn(m.cfg.Range), ctDirection(dirOriginal), gotoChain(denyChain))}},
		// Only a sandbox's own address passes its filter chain, so the
		// source is in the range only for packets from sandboxes (and the
		// host ends, which talk to nothing outside the range).
		{&nftables.Chain{Name: "postrouting_nat", Type: nftables.ChainTypeNAT, Hooknum: nftables.ChainHookPostrouting,
			Priority: nftables.ChainPriorityNATSource, Policy: &accept},
			[][]expr.Any{concat(ipv4(), saddrIn(m.cfg.Range), daddrNotIn(m.cfg.Range), []expr.Any{&expr.Masq{}})}},
	}
	for _, ch := range chains {
		ch.chain.Table = m.table
		c.AddChain(ch.chain)
		c.FlushChain(ch.chain)
		for _, r := range ch.rules {
			c.AddRule(&nftables.Rule{Table: m.table, Chain: ch.chain, Exprs: r})
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("install nftables table %s: %w", m.table.Name, err)
	}
	return nil
}

// localRules reject what open mode never reaches: the host's own
// addresses, whichever interface holds them (a fib lookup, so addresses
// the host gains later are covered too), broadcast and multicast, and the
// fixed local ranges with the manager's own.
func (m *Manager) localRules() [][]expr.Any {
	var rules [][]expr.Any
	for _, t := range []uint32{unix.RTN_LOCAL, unix.RTN_BROADCAST, unix.RTN_MULTICAST} {
		rules = append(rules, []expr.Any{
			&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(t)},
			&expr.Verdict{Kind: expr.VerdictGoto, Chain: denyChain},
		})
	}
	return append(rules, prefixRules(append(localPrefixes, m.cfg.Range), gotoChain(denyChain))...)
}

// installSandbox writes r's two chains for its policy and maps its host
// end to them, in one transaction: a policy change replaces the old rules
// with no moment in between.
func (m *Manager) installSandbox(r record) error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	nat, filter := m.sandboxChains(r)
	for ch, rules := range map[*nftables.Chain][][]expr.Any{nat: m.natRules(r), filter: m.filterRules(r)} {
		c.AddChain(ch)
		c.FlushChain(ch)
		for _, rule := range rules {
			c.AddRule(&nftables.Rule{Table: m.table, Chain: ch, Exprs: rule})
		}
	}
	key := ifname(r.hostIface())
	err = errors.Join(
		c.SetAddElements(m.natMap, []nftables.SetElement{{Key: key, VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: nat.Name}}}),
		c.SetAddElements(m.filterMap, []nftables.SetElement{{Key: key, VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: filter.Name}}}),
	)
	if err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("install rules of %s: %w", r.Sandbox, err)
	}
	return nil
}

// removeSandbox removes r's map entries and chains. What is already gone
// is fine.
func (m *Manager) removeSandbox(r record) error {
	nat, filter := m.sandboxChains(r)
	c, err := nftables.New()
	if err != nil {
		return err
	}
	key := []nftables.SetElement{{Key: ifname(r.hostIface())}}
	c.SetDeleteElements(m.natMap, key)
	c.SetDeleteElements(m.filterMap, key)
	for _, ch := range []*nftables.Chain{nat, filter} {
		c.FlushChain(ch)
		c.DelChain(ch)
	}
	if err := c.Flush(); err == nil {
		return nil
	} else if !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("remove rules of %s: %w", r.Sandbox, err)
	}
	// Part of it is gone (a crash, an earlier removal that failed half
	// way): the transaction failed whole, so remove what is there, one
	// object at a time, entries first (a chain a map points to cannot go).
	steps := []func(*nftables.Conn){
		func(c *nftables.Conn) { c.SetDeleteElements(m.natMap, key) },
		func(c *nftables.Conn) { c.SetDeleteElements(m.filterMap, key) },
		func(c *nftables.Conn) { c.FlushChain(nat); c.DelChain(nat) },
		func(c *nftables.Conn) { c.FlushChain(filter); c.DelChain(filter) },
	}
	for _, step := range steps {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		step(c)
		if err := c.Flush(); err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("remove rules of %s: %w", r.Sandbox, err)
		}
	}
	return nil
}

func (m *Manager) sandboxChains(r record) (nat, filter *nftables.Chain) {
	return &nftables.Chain{Name: "nat_" + r.tag(), Table: m.table}, &nftables.Chain{Name: "filter_" + r.tag(), Table: m.table}
}

// natRules redirect r's DNS, over UDP and TCP and to any address, to the
// host end's DNS port, and in egress mode every other TCP connection to
// its proxy port. In modes open and none, loopback destinations go to the
// host end, to be rejected from there.
func (m *Manager) natRules(r record) [][]expr.Any {
	host := r.hostIP()
	rules := [][]expr.Any{
		concat(ipv4(), l4(unix.IPPROTO_UDP), dport(53), dnat(host, m.cfg.DNSPort)),
		concat(ipv4(), l4(unix.IPPROTO_TCP), dport(53), dnat(host, m.cfg.DNSPort)),
	}
	if r.Policy.Mode == rung.NetworkEgress {
		return append(rules, concat(ipv4(), l4(unix.IPPROTO_TCP), dnat(host, m.cfg.ProxyPort)))
	}
	// Open mode rejects loopback destinations, but the host cannot send a
	// TCP reset from 127.0.0.0/8 out of a non-loopback interface (its
	// route_localnet is off, as it must stay): the reset would be lost
	// and the connection hang. Redirected to the host end, the packet is
	// rejected from there, and conntrack gives the reset the address the
	// sandbox dialled. (Root in a sandbox can route 127/8 out of eth0.)
	return append(rules, concat(ipv4(), daddrIn(netip.MustParsePrefix("127.0.0.0/8")), dnatAddr(host)))
}

// filterRules are r's policy, seen after its redirections.
func (m *Manager) filterRules(r record) [][]expr.Any {
	host := r.hostIP()
	rules := [][]expr.Any{
		// The host end has IPv6 off and drops it before any hook; this
		// rule keeps a mistake there from opening anything.
		{&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
			&expr.Verdict{Kind: expr.VerdictDrop}},
		// Anything not from the sandbox's own address is dropped, not
		// rejected: an answer would go to whoever owns the forged address.
		concat(saddrNot(r.guestIP()), []expr.Any{&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop}}),
		// The sandbox answering a connection the host opened.
		concat(ctDirection(dirReply), accept()),
		concat(daddr(host), l4(unix.IPPROTO_UDP), dport(m.cfg.DNSPort), accept()),
		concat(daddr(host), l4(unix.IPPROTO_TCP), dport(m.cfg.DNSPort), accept()),
	}
	switch r.Policy.Mode {
	case rung.NetworkEgress:
		return append(rules,
			concat(daddr(host), l4(unix.IPPROTO_TCP), dport(m.cfg.ProxyPort), accept()),
			gotoChain(denyChain))
	case rung.NetworkNone:
		// DNS only (the host end answers it by the policy: nothing
		// resolves); everything else is refused at once.
		return append(rules, gotoChain(denyChain))
	}
	rules = append(rules, []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: localChain}})
	rules = append(rules, prefixRules(r.Policy.Allow, accept())...)
	return append(rules,
		[]expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: privateChain}},
		accept())
}

// spoofDrops returns how many packets with a forged source r's filter
// chain has dropped.
func (m *Manager) spoofDrops(r record) (uint64, error) {
	c, err := nftables.New()
	if err != nil {
		return 0, err
	}
	_, filter := m.sandboxChains(r)
	rules, err := c.GetRules(m.table, filter)
	if err != nil {
		return 0, err
	}
	for _, rule := range rules {
		for _, e := range rule.Exprs {
			if ctr, ok := e.(*expr.Counter); ok {
				return ctr.Packets, nil
			}
		}
	}
	return 0, errors.New("no counter in the filter chain")
}

// Expression builders. Register 1 holds what is compared; 2 holds a port
// for NAT.

func concat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func accept() []expr.Any { return []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}} }

func gotoChain(name string) []expr.Any {
	return []expr.Any{&expr.Verdict{Kind: expr.VerdictGoto, Chain: name}}
}

// dispatch jumps to the chain the map holds for the input interface.
func dispatch(s *nftables.Set) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Lookup{SourceRegister: 1, SetName: s.Name, IsDestRegSet: true, DestRegister: 0},
	}
}

func ipv4() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
	}
}

func l4(proto byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
	}
}

func dport(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
	}
}

const (
	offSaddr = 12 // in the IPv4 header
	offDaddr = 16
)

func addrField(off uint32) *expr.Payload {
	return &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 4}
}

func daddr(a netip.Addr) []expr.Any {
	b := a.As4()
	return []expr.Any{addrField(offDaddr), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: b[:]}}
}

func saddrNot(a netip.Addr) []expr.Any {
	b := a.As4()
	return []expr.Any{addrField(offSaddr), &expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: b[:]}}
}

func inPrefix(off uint32, p netip.Prefix, op expr.CmpOp) []expr.Any {
	var m [4]byte
	for i := 0; i < p.Bits(); i++ {
		m[i/8] |= 0x80 >> (i % 8)
	}
	net := p.Masked().Addr().As4()
	return []expr.Any{
		addrField(off),
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: m[:], Xor: make([]byte, 4)},
		&expr.Cmp{Op: op, Register: 1, Data: net[:]},
	}
}

func daddrIn(p netip.Prefix) []expr.Any    { return inPrefix(offDaddr, p, expr.CmpOpEq) }
func daddrNotIn(p netip.Prefix) []expr.Any { return inPrefix(offDaddr, p, expr.CmpOpNeq) }
func saddrIn(p netip.Prefix) []expr.Any    { return inPrefix(offSaddr, p, expr.CmpOpEq) }

// prefixRules is one rule per prefix: destination in it, then verdict.
func prefixRules(ps []netip.Prefix, verdict []expr.Any) [][]expr.Any {
	var rules [][]expr.Any
	for _, p := range ps {
		rules = append(rules, concat(daddrIn(p), verdict))
	}
	return rules
}

// Conntrack directions (enum ip_conntrack_dir).
const (
	dirOriginal = 0
	dirReply    = 1
)

func ctDirection(dir byte) []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeyDIRECTION},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{dir}},
	}
}

// dnat redirects to addr:port.
func dnat(addr netip.Addr, port uint16) []expr.Any {
	b := addr.As4()
	return []expr.Any{
		&expr.Immediate{Register: 1, Data: b[:]},
		&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
	}
}

// dnatAddr redirects to addr, keeping the port.
func dnatAddr(addr netip.Addr) []expr.Any {
	b := addr.As4()
	return []expr.Any{
		&expr.Immediate{Register: 1, Data: b[:]},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1},
	}
}

// ifname is an interface name as nftables keys it: IFNAMSIZ bytes, NUL
// padded.
func ifname(name string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return b
}
