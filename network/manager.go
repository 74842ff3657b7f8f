package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"rung.dev/rung"
)

// Config configures a [Manager]. Only StateDir is required.
type Config struct {
	// StateDir records attachments (links/) and holds the network
	// namespaces the manager makes (ns/); typically <data>/network.
	StateDir string
	// Range is the IPv4 range carved into one /30 per sandbox; default
	// [DefaultRange]. Its size bounds how many sandboxes have a link at
	// once (16,384 for a /16). Two managers on one host need ranges that
	// do not overlap, and distinct tables.
	Range netip.Prefix
	// ProxyPort is the port on each link's host address that egress mode
	// redirects every TCP connection to; default [DefaultProxyPort].
	ProxyPort uint16
	// DNSPort is the port on each link's host address that both modes
	// redirect DNS (UDP and TCP port 53) to; default [DefaultDNSPort].
	DNSPort uint16
	// Table is the nftables table (family inet) the manager owns and no
	// one else touches; default "rung".
	Table  string
	Logger *slog.Logger // nil discards
}

// DefaultRange is [Config.Range]'s default.
var DefaultRange = netip.MustParsePrefix("10.231.0.0/16")

// Default ports, clear of the usual proxies' (3128, 8080, Istio's 15001)
// and of mDNS (5353).
const (
	DefaultProxyPort = 10280
	DefaultDNSPort   = 10253
)

// Policy is what a sandbox's link lets through at the packet level. The
// domain and HTTP rules of a rung.NetworkPolicy are the egress proxy's;
// here are only the mode and, for open mode, the private prefixes the
// sandbox may reach.
type Policy struct {
	// Mode is rung.NetworkEgress or rung.NetworkOpen, or rung.NetworkNone
	// for a link that passes nothing but DNS to the host end (a gVisor
	// sandbox's, which takes its interfaces at boot and so keeps a link to
	// switch on); other sandboxes in mode none have no link
	// ([Manager.Detach]).
	Mode rung.NetworkMode `json:"mode"`
	// Allow lists IPv4 prefixes open mode reaches although they are in a
	// private or link-local range (10/8, 172.16/12, 192.168/16,
	// 100.64/10, 169.254/16). It never opens the host's own addresses,
	// loopback, multicast or the manager's range. Egress mode ignores it:
	// the proxy decides there.
	Allow []netip.Prefix `json:"allow,omitempty"`
}

// Link is a sandbox's attachment.
type Link struct {
	Sandbox rung.SandboxID
	Subnet  netip.Prefix // the sandbox's /30
	HostIP  netip.Addr   // the host end: gateway, resolver, proxy
	GuestIP netip.Addr   // eth0 in the sandbox
	// Interface is the host end's name: "rung" and the subnet's address
	// in hex.
	Interface string
	// NetNS is the network namespace the guest end is in: the path
	// Attach was given, or the one the manager made.
	NetNS  string
	Policy Policy
}

// ResolvConf is the /etc/resolv.conf the sandbox should see: the host end
// answers DNS (the redirection catches any other server too).
func (l Link) ResolvConf() []byte {
	return fmt.Appendf(nil, "# rung: the daemon answers DNS for this sandbox\nnameserver %s\n", l.HostIP)
}

// Manager attaches sandboxes' network namespaces to the host and keeps
// their packet policies. It is safe for concurrent use; operations on one
// sandbox do not overlap (a second one while the first runs is
// rung.ErrConflict), operations on different sandboxes run side by side.
type Manager struct {
	cfg       Config
	log       *slog.Logger
	table     *nftables.Table
	natMap    *nftables.Set
	filterMap *nftables.Set
	// host makes route netlink requests in the daemon's namespace, each
	// on a socket of its own: a shared one would hold every request up
	// behind a link's deletion.
	host *netlink.Handle
	// forwarding turns on IPv4 forwarding, host-wide, once.
	forwarding func() error
	// beforeLinkDown, set by tests only (before any operation), runs in
	// teardown between finding a link and taking it down.
	beforeLinkDown func(iface string)

	mu    sync.Mutex                // guards the fields below
	links map[rung.SandboxID]*entry // attached, being attached, or found in records
	used  map[int]rung.SandboxID    // subnet index -> sandbox
	next  int                       // where the next allocation starts looking
	size  int                       // subnets in the range
	busy  map[rung.SandboxID]bool   // an operation on the sandbox is under way
	// deleting holds the links being deleted in the background, by
	// host end; each channel closes when its link is gone.
	deleting map[string]chan struct{}
}

type entry struct {
	rec   record
	state linkState
}

type linkState int

const (
	attaching linkState = iota // Attach is making it
	ready                      // attached, or taken over by Reconcile
	// stale: found in a record at Open, not yet reconciled; its subnet
	// is taken, and only Reconcile and Detach touch it.
	stale
)

// Open opens the manager: it creates the state directory and the nftables
// table with its base chains (idempotent: an existing table keeps every
// sandbox's rules), and reads the records a previous daemon left, whose
// subnets stay taken until [Manager.Reconcile]. It fails with
// rung.ErrInvalid on a bad configuration.
func Open(cfg Config) (*Manager, error) {
	if cfg.StateDir == "" {
		return nil, rung.Errorf(rung.ErrInvalid, "network: StateDir is required")
	}
	if !cfg.Range.IsValid() {
		cfg.Range = DefaultRange
	}
	if !cfg.Range.Addr().Is4() || cfg.Range.Bits() > subnetBits-1 {
		return nil, rung.Errorf(rung.ErrInvalid, "network: range %s is not an IPv4 prefix of at least two /30s", cfg.Range)
	}
	cfg.Range = cfg.Range.Masked()
	if cfg.ProxyPort == 0 {
		cfg.ProxyPort = DefaultProxyPort
	}
	if cfg.DNSPort == 0 {
		cfg.DNSPort = DefaultDNSPort
	}
	if cfg.Table == "" {
		cfg.Table = "rung"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	table := &nftables.Table{Family: nftables.TableFamilyINet, Name: cfg.Table}
	m := &Manager{
		cfg: cfg, log: log, table: table,
		natMap:    &nftables.Set{Table: table, Name: natMapName, IsMap: true, KeyType: nftables.TypeIFName, DataType: nftables.TypeVerdict},
		filterMap: &nftables.Set{Table: table, Name: filterMapName, IsMap: true, KeyType: nftables.TypeIFName, DataType: nftables.TypeVerdict},
		links:     map[rung.SandboxID]*entry{},
		used:      map[int]rung.SandboxID{},
		busy:      map[rung.SandboxID]bool{},
		deleting:  map[string]chan struct{}{},
		size:      1 << (subnetBits - cfg.Range.Bits()),
	}
	m.forwarding = sync.OnceValue(m.enableForwarding)
	for _, d := range []string{m.linksDir(), m.nsDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("network: %w", err)
		}
	}
	recs, err := m.readRecords()
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		i, _ := subnetIndex(cfg.Range, r.Subnet)
		if other, taken := m.used[i]; taken {
			m.log.Warn("two network records share a subnet", "sandbox", r.Sandbox, "other", other, "subnet", r.Subnet)
			continue
		}
		m.used[i] = r.Sandbox
		m.links[r.Sandbox] = &entry{rec: r, state: stale}
		m.next = max(m.next, i+1) % m.size
	}
	if len(recs) == 0 {
		// Start anywhere: a restarted daemon does not hand out the
		// subnets its predecessor used last (see reserve).
		m.next = rand.IntN(m.size)
	}
	m.host = &netlink.Handle{}
	if err := m.installBase(); err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	return m, nil
}

// Close waits for the links Detach left to delete in the background.
// Attached links, rules and records stay: sandboxes keep their network
// while the daemon restarts, and the next manager reconciles them.
func (m *Manager) Close() error {
	m.settle()
	return nil
}

// validate checks a policy Attach or SetPolicy is given.
func validate(p Policy) error {
	if p.Mode != rung.NetworkEgress && p.Mode != rung.NetworkOpen && p.Mode != rung.NetworkNone {
		return rung.Errorf(rung.ErrInvalid, "network mode %q: a link is none, egress or open", p.Mode)
	}
	for _, a := range p.Allow {
		if !a.IsValid() || !a.Addr().Is4() {
			return rung.Errorf(rung.ErrInvalid, "allowed prefix %s: IPv4 only", a)
		}
	}
	return nil
}

// beginLocked marks an operation on sandbox id as under way, or fails
// with rung.ErrConflict when one is. end must follow.
func (m *Manager) beginLocked(id rung.SandboxID) error {
	if m.busy[id] {
		return rung.Errorf(rung.ErrConflict, "sandbox %s: a network change is under way", id)
	}
	m.busy[id] = true
	return nil
}

func (m *Manager) end(id rung.SandboxID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.busy, id)
}

// reserve takes the next free subnet for id.
func (m *Manager) reserve(id rung.SandboxID) (record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.beginLocked(id); err != nil {
		return record{}, err
	}
	if _, ok := m.links[id]; ok {
		delete(m.busy, id)
		return record{}, rung.Errorf(rung.ErrConflict, "sandbox %s already has a network link", id)
	}
	for n := 0; n < m.size; n++ {
		// Next fit, not first fit: a subnet is reused as late as
		// possible, so the conntrack entries and the ICMP rate limit
		// state (per address) of its last sandbox are long gone.
		i := (m.next + n) % m.size
		if _, taken := m.used[i]; taken {
			continue
		}
		m.used[i] = id
		m.next = (i + 1) % m.size
		r := record{Sandbox: id, Subnet: subnet(m.cfg.Range, i)}
		m.links[id] = &entry{rec: r}
		return r, nil
	}
	delete(m.busy, id)
	return record{}, rung.Errorf(rung.ErrLimit, "network range %s is full", m.cfg.Range)
}

// release forgets r and frees its subnet, once its link, if any, is
// deleted: in the background (see teardown), where Close waits for it. A
// crash before then leaves a link no record names, which Reconcile
// removes.
func (m *Manager) release(r record, l netlink.Link) {
	m.mu.Lock()
	delete(m.links, r.Sandbox)
	m.mu.Unlock()
	free := func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if i, ok := subnetIndex(m.cfg.Range, r.Subnet); ok && m.used[i] == r.Sandbox {
			delete(m.used, i)
		}
	}
	if l == nil {
		free()
		return
	}
	done := make(chan struct{})
	m.mu.Lock()
	m.deleting[r.hostIface()] = done
	m.mu.Unlock()
	go func() { // ends when the kernel has deleted the pair; settle waits for it
		defer close(done)
		// Deleting one end deletes the pair: eth0 goes with it. A
		// namespace the manager made may have taken it already.
		if err := m.host.LinkDel(l); err != nil && !isLinkNotFound(err) && !errors.Is(err, unix.ENODEV) {
			m.log.Warn("delete sandbox link", "sandbox", r.Sandbox, "link", r.hostIface(), "err", err)
		}
		free()
		m.mu.Lock()
		delete(m.deleting, r.hostIface())
		m.mu.Unlock()
	}()
}

// settle waits until the links being deleted now are gone.
func (m *Manager) settle() {
	m.mu.Lock()
	var waits []chan struct{}
	for _, done := range m.deleting {
		waits = append(waits, done)
	}
	m.mu.Unlock()
	for _, done := range waits {
		<-done
	}
}

// Attach gives sandbox id a link in the network namespace at netns
// (/proc/PID/ns/net of a running container, or a bind mount of one), or,
// when netns is "", in a new namespace the manager makes under its state
// directory and removes at Detach: Link.NetNS, for a container to join
// (gVisor needs its interfaces in place before it starts). In that
// namespace eth0 gets the guest address with a default route via the host
// end, lo and eth0 come up, and new interfaces get IPv6 off. p's rules are
// in place before eth0 exists.
//
// Open mode turns on IPv4 forwarding for the whole host
// (net.ipv4.ip_forward) the first time a sandbox uses it; the manager never
// turns it off. Errors: rung.ErrInvalid (bad id, policy or namespace),
// rung.ErrConflict (id has a link, or an operation on it is under way, or
// the namespace already has an eth0), rung.ErrLimit (the range is full).
// On failure nothing is left behind.
func (m *Manager) Attach(ctx context.Context, id rung.SandboxID, netns string, p Policy) (_ Link, err error) {
	if !id.Valid() {
		return Link{}, rung.Errorf(rung.ErrInvalid, "invalid sandbox id %q", id)
	}
	if err := validate(p); err != nil {
		return Link{}, err
	}
	if err := ctx.Err(); err != nil {
		return Link{}, err
	}
	r, err := m.reserve(id)
	if err != nil {
		return Link{}, err
	}
	defer m.end(id)
	r.Policy, r.NetNS = p, netns
	if netns == "" {
		r.NetNS, r.OwnsNS = filepath.Join(m.nsDir(), string(id)), true
	}
	defer func() {
		if err != nil {
			l, _ := m.teardown(r)
			m.release(r, l)
		}
	}()
	// The record comes first: whatever a crash leaves from here on, a
	// later Reconcile finds by it.
	if err := m.writeRecord(r); err != nil {
		return Link{}, err
	}
	if r.OwnsNS {
		if err := createNamespace(r.NetNS); err != nil {
			return Link{}, err
		}
	}
	if err := m.plumb(r); err != nil {
		return Link{}, fmt.Errorf("attach %s: %w", id, err)
	}
	m.mu.Lock()
	m.links[id].rec, m.links[id].state = r, ready
	m.mu.Unlock()
	m.log.DebugContext(ctx, "network attached", "sandbox", id, "mode", p.Mode, "subnet", r.Subnet)
	return r.link(), nil
}

func (r record) link() Link {
	return Link{Sandbox: r.Sandbox, Subnet: r.Subnet, HostIP: r.hostIP(), GuestIP: r.guestIP(),
		Interface: r.hostIface(), NetNS: r.NetNS, Policy: r.Policy}
}

// plumb installs r's rules, then makes its veth pair and configures both
// ends.
func (m *Manager) plumb(r record) error {
	nsFD, err := openNamespace(r.NetNS)
	if err != nil {
		return rung.Errorf(rung.ErrInvalid, "%v", err)
	}
	defer unix.Close(nsFD)
	var guest *netlink.Handle
	err = inNamespace(nsFD, func() error {
		// The guest end inherits this as it arrives: no IPv6 on eth0
		// (loopback keeps ::1, which programs resolving localhost use).
		if err := writeSysctl("net/ipv6/conf/default/disable_ipv6", "1"); err != nil {
			return err
		}
		var err error
		guest, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		return err
	})
	if err != nil {
		return err
	}
	defer guest.Close()
	if _, err := guest.LinkByName("eth0"); err == nil {
		// It may be this namespace's last link, detached and still
		// being deleted (a sandbox's mode going to none and back).
		m.settle()
		if _, err := guest.LinkByName("eth0"); err == nil {
			return rung.Errorf(rung.ErrConflict, "network namespace %s already has an eth0", r.NetNS)
		}
	}
	// Rules before the link: no packet of the sandbox's ever passes
	// without them.
	if err := m.installSandbox(r); err != nil {
		return err
	}
	if r.Policy.Mode == rung.NetworkOpen {
		if err := m.forwarding(); err != nil {
			return err
		}
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: r.hostIface()}, PeerName: "eth0", PeerNamespace: netlink.NsFd(nsFD)}
	if err := m.host.LinkAdd(veth); err != nil {
		return fmt.Errorf("create veth %s: %w", r.hostIface(), err)
	}
	if err := writeSysctl("net/ipv6/conf/"+r.hostIface()+"/disable_ipv6", "1"); err != nil {
		return err
	}
	if err := configure(m.host, r.hostIface(), r.hostIP(), netip.Addr{}); err != nil {
		return fmt.Errorf("host end: %w", err)
	}
	lo, err := guest.LinkByName("lo")
	if err == nil {
		err = guest.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("guest loopback: %w", err)
	}
	if err := configure(guest, "eth0", r.guestIP(), r.hostIP()); err != nil {
		return fmt.Errorf("guest end: %w", err)
	}
	// The host end came up while eth0 was down, without a carrier, so
	// the kernel put off giving it a queue until its link watch runs,
	// asynchronously: until then it drops what it sends, an ARP reply
	// say, and the sandbox's first connection waits a second for the ARP
	// retry. Asking for the link (RTM_GETLINK) runs the pending link
	// watch event at once.
	if _, err := m.host.LinkByName(r.hostIface()); err != nil {
		return fmt.Errorf("host end: %w", err)
	}
	return nil
}

// configure gives interface name the address addr in its /30 and brings
// it up; with a valid gw, it adds the default route via gw.
func configure(h *netlink.Handle, name string, addr, gw netip.Addr) error {
	l, err := h.LinkByName(name)
	if err != nil {
		return err
	}
	ipnet := &net.IPNet{IP: addr.AsSlice(), Mask: net.CIDRMask(subnetBits, 32)}
	if err := h.AddrAdd(l, &netlink.Addr{IPNet: ipnet}); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("address %s: %w", addr, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return err
	}
	if gw.IsValid() {
		route := &netlink.Route{LinkIndex: l.Attrs().Index, Gw: gw.AsSlice()}
		if err := h.RouteReplace(route); err != nil {
			return fmt.Errorf("default route: %w", err)
		}
	}
	return nil
}

// SetPolicy replaces sandbox id's rules with p's in one nftables
// transaction: it takes effect at once, on the connections already open
// too (a connection the new mode does not allow gets a reset at its next
// packet), with no restart. Errors: rung.ErrNotFound (id has no link),
// rung.ErrInvalid, rung.ErrConflict (an operation on id is under way).
func (m *Manager) SetPolicy(ctx context.Context, id rung.SandboxID, p Policy) error {
	if err := validate(p); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	e := m.links[id]
	if e == nil || e.state != ready {
		m.mu.Unlock()
		return rung.Errorf(rung.ErrNotFound, "sandbox %s has no network link", id)
	}
	if err := m.beginLocked(id); err != nil {
		m.mu.Unlock()
		return err
	}
	old := e.rec
	m.mu.Unlock()
	defer m.end(id)
	r := old
	r.Policy = p
	if p.Mode == rung.NetworkOpen {
		if err := m.forwarding(); err != nil {
			return err
		}
	}
	// Record first: a crash between the two leaves the new policy to
	// Reconcile, which installs what the record says.
	if err := m.writeRecord(r); err != nil {
		return err
	}
	if err := m.installSandbox(r); err != nil {
		return errors.Join(err, m.writeRecord(old))
	}
	m.mu.Lock()
	e.rec = r
	m.mu.Unlock()
	m.log.DebugContext(ctx, "network policy set", "sandbox", id, "mode", p.Mode)
	return nil
}

// Detach removes sandbox id's link, rules, record and, if the manager made
// it, its network namespace; a namespace that stays (a running
// container's) keeps loopback only. When it returns nothing passes the
// link; the kernel finishes deleting it a few tens of milliseconds later,
// and its subnet is free from then on. Detaching a sandbox with no link
// is a no-op. Errors: rung.ErrConflict (an operation on id is under way).
func (m *Manager) Detach(ctx context.Context, id rung.SandboxID) error {
	m.mu.Lock()
	e := m.links[id]
	if e == nil {
		m.mu.Unlock()
		return nil
	}
	if err := m.beginLocked(id); err != nil {
		m.mu.Unlock()
		return err
	}
	r := e.rec
	m.mu.Unlock()
	defer m.end(id)
	l, err := m.teardown(r)
	if err != nil {
		return fmt.Errorf("detach %s: %w", id, err)
	}
	m.release(r, l)
	m.log.DebugContext(ctx, "network detached", "sandbox", id)
	return nil
}

// teardown removes what r describes: the link first, so that no packet
// of the sandbox's passes without its rules, then the rules, the
// namespace the manager made, and the record. Whatever is gone already is
// fine, including a link the kernel deletes while teardown looks at it
// (its namespace went with its container's last process). The link is
// only taken down here: nothing crosses a veth pair with an end down, in
// either direction. Deleting it waits out an RCU grace period (15-25 ms
// measured here), so it is left to the caller (release), which need not
// wait.
func (m *Manager) teardown(r record) (netlink.Link, error) {
	l, err := m.host.LinkByName(r.hostIface())
	switch {
	case isLinkNotFound(err):
		l = nil
	case err != nil:
		return nil, err
	default:
		if m.beforeLinkDown != nil {
			m.beforeLinkDown(r.hostIface())
		}
		err := m.host.LinkSetDown(l)
		switch {
		case errors.Is(err, unix.ENODEV):
			l = nil // deleted since LinkByName
		case err != nil:
			return nil, fmt.Errorf("take %s down: %w", r.hostIface(), err)
		}
	}
	if err := m.removeSandbox(r); err != nil {
		return nil, err
	}
	if r.OwnsNS {
		if err := removeNamespace(r.NetNS); err != nil {
			return nil, err
		}
	}
	return l, m.removeRecord(r.Sandbox)
}

func isLinkNotFound(err error) bool {
	_, ok := errors.AsType[netlink.LinkNotFoundError](err)
	return ok
}

// enableForwarding turns IPv4 forwarding on for the host.
func (m *Manager) enableForwarding() error {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		return err
	}
	if len(b) > 0 && b[0] == '1' {
		return nil
	}
	if err := writeSysctl("net/ipv4/ip_forward", "1"); err != nil {
		return fmt.Errorf("enable IPv4 forwarding: %w", err)
	}
	m.log.Info("enabled IPv4 forwarding on the host for open-mode sandboxes")
	return nil
}
