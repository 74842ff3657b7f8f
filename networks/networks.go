// Package networks is the network tier: it gives each sandbox's container
// the network its policy says, over package network (a veth link and a
// packet policy per sandbox on the host) and package egress (the
// sandbox's proxy and DNS server on its link's host address). It
// implements controller.NetworkTier for the controller (policy checks,
// live changes, the commands' environment) and containers.Network for the
// container tier (a container's start, stop and adoption), as package
// containers adapts the container runtimes. See docs/decisions/network.md.
package networks

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/container"
	"rung.dev/rung/controller"
	"rung.dev/rung/egress"
	"rung.dev/rung/network"
)

// Config configures a [Tier].
type Config struct {
	// Dir keeps each sandbox's certificate authority (<id>.crt, <id>.key,
	// mode 0600), so a restarted daemon intercepts for the containers it
	// adopts with the CA they trust, and the resolv.conf its container
	// mounts (<id>.resolv). Required; typically
	// <data>/network/ca.
	Dir string
	// Links is the host side: links and packet policies. Required.
	Links *network.Manager
	// ProxyPort and DNSPort are the ports Links redirects to on each
	// link's host address (its Config's).
	ProxyPort, DNSPort uint16
	// OpenTenants may use mode open ("*": every tenant), as may those
	// whose Tenants entry says so; others get rung.ErrPermission.
	OpenTenants []rung.TenantID
	// Tenants are the tenants' rules, header rules and limits that go
	// with every one of their sandboxes' own (<data>/network.json).
	Tenants TenantPolicies
	// Forbidden are more prefixes the proxy never dials without a rule
	// allowing them (the daemon's own API address).
	Forbidden []netip.Prefix
	// HostBundle is the host's certificate store, which a container's
	// store is made of (plus its sandbox's CA); default
	// /etc/ssl/certs/ca-certificates.crt.
	HostBundle string
	// DNSUpstream answers other query types than A/AAAA for allowed names
	// ("" gives empty answers); see egress.Config.
	DNSUpstream string
	// Resolver resolves names for the proxies and DNS servers; nil is
	// the host's. Tests point names at servers of their own.
	Resolver egress.Resolver
	// RootCAs verifies the servers of intercepted HTTPS; nil is the
	// host's roots. Tests trust servers of their own.
	RootCAs *x509.CertPool
	Logger  *slog.Logger // nil discards
}

// Tier is the network tier. It is safe for concurrent use.
type Tier struct {
	cfg    Config
	ev     controller.NetworkEvents
	log    *slog.Logger
	bundle []byte // the host's certificate store, read once

	mu  sync.Mutex // guards sbs and each entry's fields
	sbs map[rung.SandboxID]*sandboxNet
}

// sandboxNet is one sandbox's network while the daemon knows it.
type sandboxNet struct {
	tenant  rung.TenantID
	policy  rung.NetworkPolicy
	gvisor  bool
	ca      *egress.CA
	pid     int           // the running container's init; 0 when none
	link    *network.Link // nil: loopback only
	proxy   *egress.Proxy // serves link's host address; nil without a link
	adopted bool
}

// New opens the tier with the controller's events.
func New(cfg Config, ev controller.NetworkEvents) (*Tier, error) {
	if cfg.Dir == "" || cfg.Links == nil {
		return nil, errors.New("networks: Dir and Links are required")
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("networks: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.HostBundle == "" {
		cfg.HostBundle = "/etc/ssl/certs/ca-certificates.crt"
	}
	t := &Tier{cfg: cfg, ev: ev, log: log, sbs: map[rung.SandboxID]*sandboxNet{}}
	b, err := os.ReadFile(cfg.HostBundle)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("networks: host certificate store: %w", err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	t.bundle = b
	return t, nil
}

// CAEnv is the environment that points tools which do not read the
// system's certificate store (Node, pip, Python's requests, npm) at the
// container's, where the sandbox's CA is.
var CAEnv = map[string]string{
	"SSL_CERT_FILE":       container.CABundlePath,
	"REQUESTS_CA_BUNDLE":  container.CABundlePath,
	"CURL_CA_BUNDLE":      container.CABundlePath,
	"GIT_SSL_CAINFO":      container.CABundlePath,
	"NODE_EXTRA_CA_CERTS": container.CABundlePath,
	"PIP_CERT":            container.CABundlePath,
	"NPM_CONFIG_CAFILE":   container.CABundlePath,
}

// Env implements controller.NetworkTier: the same for every sandbox, in
// every mode (a mode switch on a running container needs no new
// environment).
func (t *Tier) Env(rung.Sandbox) map[string]string { return CAEnv }

// Check implements controller.NetworkTier.
func (t *Tier) Check(tenant rung.TenantID, p rung.NetworkPolicy) error {
	if _, err := egress.Compile(p); err != nil {
		return err
	}
	if _, err := egress.Compile(t.cfg.Tenants.effective(tenant, p)); err != nil {
		return err
	}
	if p.Mode == rung.NetworkOpen && !t.mayOpen(tenant) {
		return rung.Errorf(rung.ErrPermission, "tenant %s may not use network mode open on this server (rung serve --open-network-tenant); use egress with rules", tenant)
	}
	return nil
}

func (t *Tier) mayOpen(tenant rung.TenantID) bool {
	if t.cfg.Tenants.of(tenant).Open {
		return true
	}
	for _, o := range t.cfg.OpenTenants {
		if o == "*" || o == tenant {
			return true
		}
	}
	return false
}

// linkPolicy is the packet-level part of p: its mode, and for open mode
// the private prefixes its allow rules name.
func linkPolicy(p rung.NetworkPolicy) network.Policy {
	lp := network.Policy{Mode: p.Mode}
	if p.Mode != rung.NetworkOpen {
		return lp
	}
	for _, r := range p.Rules {
		if r.Action != rung.RuleAllow || r.CIDR == "" {
			continue
		}
		if pf, err := netip.ParsePrefix(r.CIDR); err == nil && pf.Addr().Is4() {
			lp.Allow = append(lp.Allow, pf.Masked())
		}
	}
	return lp
}

// entry returns id's record, making it for sb.
func (t *Tier) entry(sb rung.Sandbox) *sandboxNet {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.sbs[sb.ID]
	if n == nil {
		n = &sandboxNet{}
		t.sbs[sb.ID] = n
	}
	if sb.Tenant != "" {
		n.tenant = sb.Tenant
	}
	n.policy, n.gvisor = sb.Network, sb.Isolation == rung.IsolationGVisor
	return n
}

// Prepare implements containers.Network: the sandbox's CA (made once and
// kept), its certificate store, its resolv.conf, and in modes egress and
// open a link with its proxy, in a namespace the container joins.
func (t *Tier) Prepare(ctx context.Context, sb rung.Sandbox) (string, string, []byte, error) {
	ca, err := t.ca(sb.ID)
	if err != nil {
		return "", "", nil, err
	}
	n := t.entry(sb)
	t.mu.Lock()
	n.ca = ca
	t.mu.Unlock()
	bundle := append(append([]byte{}, t.bundle...), ca.CertPEM()...)
	if noNetwork(sb.Network) && sb.Isolation != rung.IsolationGVisor {
		// Mounted in mode none too, so that a switch to egress or open
		// while the container runs can give it its name server (Apply).
		resolv, err := t.writeResolv(sb.ID, noResolv)
		return "", resolv, bundle, err
	}
	// gVisor takes its interfaces once, as it boots: a sandbox in mode
	// none gets a link too, which passes nothing but DNS (which resolves
	// nothing), so that a switch to egress or open later needs no restart.
	if sb.Network.Mode == "" {
		t.mu.Lock()
		n.policy.Mode = rung.NetworkNone
		t.mu.Unlock()
	}
	t.down(ctx, sb.ID) // what a container that died without a Stopped left
	link, err := t.attach(ctx, sb.ID, n, "")
	if err != nil {
		return "", "", nil, err
	}
	resolv, err := t.writeResolv(sb.ID, link.ResolvConf())
	if err != nil {
		t.down(ctx, sb.ID)
		return "", "", nil, err
	}
	return link.NetNS, resolv, bundle, nil
}

// noNetwork reports whether p is mode none ("" is none too).
func noNetwork(p rung.NetworkPolicy) bool {
	return p.Mode == "" || p.Mode == rung.NetworkNone
}

// unlink leaves id's running container loopback only: its link and
// proxy go, and its resolv.conf names no server.
func (t *Tier) unlink(ctx context.Context, id rung.SandboxID) error {
	t.down(ctx, id)
	_, err := t.writeResolv(id, noResolv)
	return err
}

// noResolv is the resolv.conf of a container without a link: no name
// server, so a lookup fails at once (the resolver's default, the
// sandbox's own loopback, has nothing listening).
var noResolv = []byte("# rung: network mode none: no name server\n")

// writeResolv writes id's resolv.conf (<id>.resolv in Config.Dir) in
// place, so that a container that mounted it sees the new one, and
// returns its path.
func (t *Tier) writeResolv(id rung.SandboxID, b []byte) (string, error) {
	path := filepath.Join(t.cfg.Dir, string(id)+".resolv")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644)
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return "", fmt.Errorf("resolv.conf of sandbox %s: %w", id, err)
	}
	return path, nil
}

// attach gives n a link in netns ("" for one the manager makes) and its
// proxy.
func (t *Tier) attach(ctx context.Context, id rung.SandboxID, n *sandboxNet, netns string) (network.Link, error) {
	t.mu.Lock()
	pol, tenant := n.policy, n.tenant
	t.mu.Unlock()
	link, err := t.cfg.Links.Attach(ctx, id, netns, linkPolicy(t.cfg.Tenants.effective(tenant, pol)))
	if err != nil {
		return network.Link{}, fmt.Errorf("attach the network of sandbox %s: %w", id, err)
	}
	proxy, err := t.serve(id, n, link)
	if err != nil {
		t.cfg.Links.Detach(context.WithoutCancel(ctx), id)
		return network.Link{}, err
	}
	t.mu.Lock()
	n.link, n.proxy = &link, proxy
	t.mu.Unlock()
	return link, nil
}

// serve starts the proxy and DNS server of id on link's host address.
func (t *Tier) serve(id rung.SandboxID, n *sandboxNet, link network.Link) (*egress.Proxy, error) {
	host := link.HostIP.String()
	proxyLn, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(int(t.cfg.ProxyPort))))
	if err != nil {
		return nil, fmt.Errorf("egress proxy of sandbox %s: %w", id, err)
	}
	dnsAddr := net.JoinHostPort(host, strconv.Itoa(int(t.cfg.DNSPort)))
	dnsUDP, err := net.ListenPacket("udp", dnsAddr)
	if err != nil {
		proxyLn.Close()
		return nil, fmt.Errorf("DNS of sandbox %s: %w", id, err)
	}
	dnsTCP, err := net.Listen("tcp", dnsAddr)
	if err != nil {
		proxyLn.Close()
		dnsUDP.Close()
		return nil, fmt.Errorf("DNS of sandbox %s: %w", id, err)
	}
	t.mu.Lock()
	pol, tenant, ca := n.policy, n.tenant, n.ca
	t.mu.Unlock()
	return egress.New(egress.Config{
		Sandbox: string(id), Policy: t.cfg.Tenants.effective(tenant, pol), Listener: proxyLn, DNSConn: dnsUDP, DNSListener: dnsTCP,
		CA: ca, Secrets: secretSource{ev: t.ev, tenant: tenant}, Journal: func(e egress.Event) { t.journal(id, e) },
		Logger: t.log, Forbidden: t.cfg.Forbidden, DNSUpstream: t.cfg.DNSUpstream, Resolver: t.cfg.Resolver, RootCAs: t.cfg.RootCAs,
	})
}

// Started implements containers.Network.
func (t *Tier) Started(id rung.SandboxID, pid int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.sbs[id]
	if n == nil {
		n = &sandboxNet{}
		t.sbs[id] = n
	}
	n.pid = pid
}

// Stopped implements containers.Network: the proxy stops and the link
// goes (with the namespace the manager made for it).
func (t *Tier) Stopped(id rung.SandboxID) {
	t.down(context.Background(), id)
	t.mu.Lock()
	if n := t.sbs[id]; n != nil {
		n.pid = 0
	}
	t.mu.Unlock()
}

// down closes id's proxy and detaches its link, if it has them.
func (t *Tier) down(ctx context.Context, id rung.SandboxID) {
	t.mu.Lock()
	n := t.sbs[id]
	var proxy *egress.Proxy
	had := false
	if n != nil {
		proxy, had = n.proxy, n.link != nil
		n.proxy, n.link = nil, nil
	}
	t.mu.Unlock()
	if proxy != nil {
		proxy.Close()
	}
	if !had {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := t.cfg.Links.Detach(ctx, id); err != nil && !errors.Is(err, rung.ErrNotFound) {
		t.log.Warn("detach a sandbox's network", "sandbox", id, "err", err)
	}
}

// Apply implements controller.NetworkTier: a running container's network
// changes at once. From none to egress or open, a link is added to its
// namespace (runc and crun; a gVisor sandbox has had one since it
// started, see Prepare); to none, the link goes (a gVisor sandbox's stays,
// passing nothing); between modes on a kept link, and for rules, the
// policies are swapped.
func (t *Tier) Apply(ctx context.Context, sb rung.Sandbox) error {
	n := t.entry(sb)
	t.mu.Lock()
	pid, link, proxy, gvisor := n.pid, n.link, n.proxy, n.gvisor
	t.mu.Unlock()
	mode := sb.Network.Mode
	if mode == "" {
		mode = rung.NetworkNone
	}
	switch {
	case pid == 0:
		return nil // its next start prepares it
	case noNetwork(sb.Network) && !(gvisor && link != nil):
		return t.unlink(ctx, sb.ID)
	case link == nil && gvisor:
		// Started before its links were kept in mode none (an older
		// daemon's container, adopted).
		return rung.Errorf(rung.ErrConflict, "a gVisor sandbox takes its network when its container starts: the new mode %s applies from its next start (POST /v1/sandboxes/%s/stop, then any exec)", mode, sb.ID)
	case link == nil:
		return t.attachRunning(ctx, sb.ID, n, pid)
	}
	if err := t.cfg.Links.SetPolicy(ctx, sb.ID, linkPolicy(t.cfg.Tenants.effective(sb.Tenant, sb.Network))); err != nil {
		return fmt.Errorf("network of sandbox %s: %w", sb.ID, err)
	}
	if proxy != nil {
		t.mu.Lock()
		tenant := n.tenant
		t.mu.Unlock()
		return proxy.SetPolicy(t.cfg.Tenants.effective(tenant, sb.Network))
	}
	return nil
}

// attachRunning gives the running container whose init is host pid a
// link in its own namespace, and its name server.
func (t *Tier) attachRunning(ctx context.Context, id rung.SandboxID, n *sandboxNet, pid int) error {
	link, err := t.attach(ctx, id, n, "/proc/"+strconv.Itoa(pid)+"/ns/net")
	if err != nil {
		return err
	}
	if _, err := t.writeResolv(id, link.ResolvConf()); err != nil {
		t.down(ctx, id)
		return err
	}
	return nil
}

// Adopted implements containers.Network: a restarted daemon serves the
// proxy of an adopted container's link again, with the CA it trusts, and
// makes the container's network what sb's row says when a crash came
// between recording a change and applying it.
func (t *Tier) Adopted(ctx context.Context, sb rung.Sandbox, pid int) error {
	n := t.entry(sb)
	ca, err := t.ca(sb.ID)
	if err != nil {
		return err
	}
	t.mu.Lock()
	n.ca, n.pid, n.adopted = ca, pid, true
	gvisor := n.gvisor
	t.mu.Unlock()
	none := noNetwork(sb.Network)
	link, err := t.cfg.Links.Adopt(ctx, sb.ID)
	switch {
	case errors.Is(err, rung.ErrNotFound) && (none || gvisor):
		return nil // loopback only (gVisor takes a link only as it boots)
	case errors.Is(err, rung.ErrNotFound):
		// The row says egress or open and the container has no link: the
		// daemon died between writing the row and attaching the link (an
		// update's, or a warm spare's claim). Attach it now, as Apply does.
		return t.attachRunning(ctx, sb.ID, n, pid)
	case err != nil:
		return err
	case none && !gvisor:
		// The other way: the row says none, and the daemon died before
		// the link went.
		t.mu.Lock()
		n.link = &link
		t.mu.Unlock()
		return t.unlink(ctx, sb.ID)
	}
	proxy, err := t.serve(sb.ID, n, link)
	if err != nil {
		return err
	}
	t.mu.Lock()
	n.link, n.proxy = &link, proxy
	t.mu.Unlock()
	return nil
}

// Forget implements controller.NetworkTier and containers.Network.
func (t *Tier) Forget(id rung.SandboxID) {
	t.down(context.Background(), id)
	t.mu.Lock()
	delete(t.sbs, id)
	t.mu.Unlock()
	for _, ext := range sandboxFiles {
		os.Remove(filepath.Join(t.cfg.Dir, string(id)+ext))
	}
}

// sandboxFiles are the extensions of the files Config.Dir keeps for each
// sandbox: its CA's certificate and key, and its resolv.conf.
var sandboxFiles = []string{".crt", ".key", ".resolv"}

// Close stops every proxy; links stay for the next daemon (live restore)
// or its Reconcile.
func (t *Tier) Close() error {
	t.mu.Lock()
	var ps []*egress.Proxy
	for _, n := range t.sbs {
		if n.proxy != nil {
			ps = append(ps, n.proxy)
			n.proxy = nil
		}
	}
	t.mu.Unlock()
	for _, p := range ps {
		p.Close()
	}
	return nil
}

// ca returns id's certificate authority, made and kept on its first use.
func (t *Tier) ca(id rung.SandboxID) (*egress.CA, error) {
	t.mu.Lock()
	if n := t.sbs[id]; n != nil && n.ca != nil {
		t.mu.Unlock()
		return n.ca, nil
	}
	t.mu.Unlock()
	crt, key := filepath.Join(t.cfg.Dir, string(id)+".crt"), filepath.Join(t.cfg.Dir, string(id)+".key")
	cb, err1 := os.ReadFile(crt)
	kb, err2 := os.ReadFile(key)
	if err1 == nil && err2 == nil {
		if ca, err := egress.LoadCA(cb, kb); err == nil {
			return ca, nil
		}
		t.log.Warn("a sandbox's CA does not load: making a new one", "sandbox", id)
	}
	ca, err := egress.NewCA(string(id))
	if err != nil {
		return nil, err
	}
	kp, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	// Key first: a certificate on disk always has its key.
	if err := writeFile(key, kp, 0o600); err != nil {
		return nil, err
	}
	if err := writeFile(crt, ca.CertPEM(), 0o644); err != nil {
		return nil, err
	}
	return ca, nil
}

// writeFile writes path whole or not at all.
func writeFile(path string, b []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err == nil {
		_, err = tmp.Write(b)
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", filepath.Base(path), err)
		}
		return nil
	} else {
		tmp.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
}

// journal hands one egress event to the controller's journal.
func (t *Tier) journal(id rung.SandboxID, e egress.Event) {
	if t.ev.Egress == nil {
		return
	}
	typ := rung.EntryEgressConnection
	switch {
	case e.Verdict == egress.VerdictDenied || e.Verdict == egress.VerdictLimited:
		typ = rung.EntryEgressDenied
	case e.Kind == egress.EventRequest:
		typ = rung.EntryEgressRequest
	case e.Kind == egress.EventDNS:
		typ = rung.EntryEgressDenied
	}
	out := controller.Egress{BytesIn: e.BytesDown, BytesOut: e.BytesUp, DurationMS: e.Duration.Milliseconds(), Host: e.Host,
		Method: e.Method, Path: e.Path, Port: int(e.Port), Protocol: string(e.Protocol), Status: e.Status, Time: e.Time}
	if e.IP.IsValid() {
		out.IP = e.IP.String()
	}
	fillEgress(&out, e)
	t.ev.Egress(id, typ, out)
}

// fillEgress sets what an entry says of the rule, the secrets and the
// message.
func fillEgress(out *controller.Egress, e egress.Event) {
	out.Rule = e.RuleText
	out.Message = e.Message
	if len(e.Secrets) > 0 {
		out.Secret = e.Secrets[0]
		for _, s := range e.Secrets[1:] {
			out.Secret += "," + s
		}
	}
}

// secretSource is one tenant's secrets, through the controller.
type secretSource struct {
	ev     controller.NetworkEvents
	tenant rung.TenantID
}

// Secret implements egress.SecretSource.
func (s secretSource) Secret(ctx context.Context, name string) (egress.Secret, error) {
	if s.ev.Secret == nil {
		return egress.Secret{}, rung.Errorf(rung.ErrNotFound, "secret %s not found", name)
	}
	v, sec, err := s.ev.Secret(ctx, s.tenant, name)
	if err != nil {
		return egress.Secret{}, err
	}
	return egress.Secret{Name: sec.Name, Hosts: sec.Hosts, Placeholder: sec.Placeholder, Value: string(v)}, nil
}

// Bindings implements egress.SecretSource.
func (s secretSource) Bindings(ctx context.Context) ([]egress.Secret, error) {
	if s.ev.Secrets == nil {
		return nil, nil
	}
	secs, err := s.ev.Secrets(ctx, s.tenant)
	if err != nil {
		return nil, err
	}
	out := make([]egress.Secret, 0, len(secs))
	for _, sec := range secs {
		if len(sec.Hosts) > 0 {
			out = append(out, egress.Secret{Name: sec.Name, Hosts: sec.Hosts, Placeholder: sec.Placeholder})
		}
	}
	return out, nil
}

// SweepCAs removes the certificate authorities (and resolv.conf files)
// kept on disk for sandboxes that no longer exist (deleted while no
// daemon ran, or by a daemon that died before it removed them), and
// temporary files a write left; exists answers for one sandbox. A CA is a signing key: none outlives its
// sandbox. It returns how many sandboxes' files it removed.
func (t *Tier) SweepCAs(exists func(rung.SandboxID) (bool, error)) (int, error) {
	ents, err := os.ReadDir(t.cfg.Dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, fmt.Errorf("sweep sandbox CAs: %w", err)
	}
	gone := map[rung.SandboxID]bool{}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".tmp-") {
			os.Remove(filepath.Join(t.cfg.Dir, name))
			continue
		}
		ext := filepath.Ext(name)
		if !slices.Contains(sandboxFiles, ext) {
			continue
		}
		id := rung.SandboxID(strings.TrimSuffix(name, ext))
		if _, seen := gone[id]; seen {
			continue
		}
		ok, err := exists(id)
		if err != nil {
			return 0, fmt.Errorf("sweep sandbox CAs: %w", err)
		}
		gone[id] = !ok
	}
	n := 0
	for id, g := range gone {
		if !g {
			continue
		}
		for _, ext := range sandboxFiles {
			os.Remove(filepath.Join(t.cfg.Dir, string(id)+ext))
		}
		n++
	}
	return n, nil
}

// SweepUnadopted detaches the links an earlier daemon left for sandboxes
// whose containers this one did not adopt (they died, or were stopped).
// Call it once, after the controller has adopted what it could.
func (t *Tier) SweepUnadopted(ctx context.Context) {
	for _, l := range t.cfg.Links.Links() {
		t.mu.Lock()
		n := t.sbs[l.Sandbox]
		adopted := n != nil && n.adopted
		t.mu.Unlock()
		if adopted {
			continue
		}
		if err := t.cfg.Links.Detach(ctx, l.Sandbox); err != nil && !errors.Is(err, rung.ErrNotFound) {
			t.log.Warn("detach the link of a sandbox not adopted", "sandbox", l.Sandbox, "err", err)
		}
	}
}
