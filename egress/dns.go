package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// dnsTimeout bounds one query's upstream work.
const dnsTimeout = 5 * time.Second

// dnsServer is a running DNS server of the proxy.
type dnsServer struct{ srv *dns.Server }

// stop shuts the server down; ctx is the proxy's lifetime, already
// cancelled, so stop waits on its own short timeout.
func (d dnsServer) stop(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	d.srv.ShutdownContext(ctx)
}

// startDNS serves Config.DNSConn and Config.DNSListener, returning once
// both are serving.
func (p *Proxy) startDNS() error {
	var servers []*dns.Server
	if p.cfg.DNSConn != nil {
		servers = append(servers, &dns.Server{PacketConn: p.cfg.DNSConn})
	}
	if p.cfg.DNSListener != nil {
		servers = append(servers, &dns.Server{Listener: p.cfg.DNSListener})
	}
	for _, srv := range servers {
		srv.Handler = dns.HandlerFunc(p.serveDNS)
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		errc := make(chan error, 1) // the server's end, read only if it never starts
		if !p.goTracked(func() { errc <- srv.ActivateAndServe() }) {
			return net.ErrClosed
		}
		select {
		case <-started:
			p.dns = append(p.dns, dnsServer{srv})
		case err := <-errc:
			return err
		}
	}
	return nil
}

// serveDNS answers one query. A name the policy denies gets NXDOMAIN
// (with an Extended DNS Error "Blocked" and rung's message when the query
// has EDNS): programs then fail at once with "could not resolve", and a
// denied name is never sent upstream. Allowed names: A from the
// resolver; AAAA from it when the sandbox has IPv6, else empty; PTR from
// the names this sandbox looked up; ANY not implemented; other types
// forwarded to Config.DNSUpstream, else empty.
func (p *Proxy) serveDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.RecursionAvailable = true
	defer func() {
		if opt := req.IsEdns0(); opt != nil && m.IsEdns0() == nil {
			m.SetEdns0(opt.UDPSize(), false)
		}
		if w.LocalAddr().Network() == "udp" {
			size := dns.MinMsgSize
			if opt := req.IsEdns0(); opt != nil {
				size = int(opt.UDPSize())
			}
			m.Truncate(size)
		}
		w.WriteMsg(m)
	}()
	switch {
	case req.Opcode != dns.OpcodeQuery:
		m.Rcode = dns.RcodeNotImplemented
		return
	case len(req.Question) != 1:
		m.Rcode = dns.RcodeFormatError
		return
	case req.Question[0].Qclass != dns.ClassINET:
		m.Rcode = dns.RcodeRefused
		return
	}
	if !p.enter() {
		m.Rcode = dns.RcodeServerFailure
		return
	}
	defer p.wg.Done()
	select {
	case p.dnsSlots <- struct{}{}:
		defer func() { <-p.dnsSlots }()
	default:
		m.Rcode = dns.RcodeServerFailure
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, dnsTimeout)
	defer cancel()
	q := req.Question[0]
	name := normalName(q.Name)
	if q.Qtype == dns.TypePTR {
		p.answerPTR(m, q)
		return
	}
	pol := p.policy.Load()
	if checkName(name) != nil {
		m.Rcode = dns.RcodeNameError
		return
	}
	verdict, d := pol.name(name)
	if verdict == nameDenied {
		p.denyDNS(m, req.IsEdns0(), name, d)
		return
	}
	denied := false
	switch q.Qtype {
	case dns.TypeA:
		denied = p.answerAddrs(ctx, m, q, "ip4", verdict)
	case dns.TypeAAAA:
		if p.cfg.IPv6 {
			denied = p.answerAddrs(ctx, m, q, "ip6", verdict)
		}
	case dns.TypeANY:
		m.Rcode = dns.RcodeNotImplemented
	default:
		if verdict == nameAllowed && p.cfg.DNSUpstream != "" {
			p.forward(ctx, req, m)
		}
	}
	if denied {
		p.denyDNS(m, req.IsEdns0(), name, d)
	}
}

// answerAddrs answers A or AAAA for an allowed name, leaving out addresses
// a rule denies outright, and for a name only CIDR rules can allow,
// keeping only the addresses they allow: denied when none is left.
func (p *Proxy) answerAddrs(ctx context.Context, m *dns.Msg, q dns.Question, network string, verdict nameVerdict) (denied bool) {
	name := normalName(q.Name)
	addrs, err := p.cache.lookup(ctx, network, name)
	if err != nil {
		if de, ok := errors.AsType[*net.DNSError](err); ok && de.IsNotFound {
			m.Rcode = dns.RcodeNameError
		} else {
			m.Rcode = dns.RcodeServerFailure
		}
		return false
	}
	pol := p.policy.Load()
	var kept []netip.Addr
	for _, a := range addrs {
		if pol.addrDenied(name, a) || verdict == nameByCIDR && !pol.addrAllowedByCIDR(name, a) {
			continue
		}
		kept = append(kept, a)
	}
	if verdict == nameByCIDR && len(kept) == 0 {
		return true
	}
	p.names.record(name, kept)
	ttl := uint32(p.cfg.DNSTTL / time.Second)
	for _, a := range kept {
		hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: ttl}
		if a.Is4() {
			hdr.Rrtype = dns.TypeA
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: a.AsSlice()})
		} else {
			hdr.Rrtype = dns.TypeAAAA
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()})
		}
	}
	return false
}

// answerPTR answers a reverse lookup from the names this sandbox looked
// up; anything else does not exist, and nothing is sent upstream.
func (p *Proxy) answerPTR(m *dns.Msg, q dns.Question) {
	a, ok := arpaAddr(q.Name)
	name := ""
	if ok {
		name = p.names.lookup(a)
	}
	if name == "" {
		m.Rcode = dns.RcodeNameError
		return
	}
	m.Answer = append(m.Answer, &dns.PTR{
		Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: uint32(p.cfg.DNSTTL / time.Second)},
		Ptr: dns.Fqdn(name),
	})
}

// arpaAddr parses a reverse-lookup name (in-addr.arpa or ip6.arpa).
func arpaAddr(name string) (netip.Addr, bool) {
	name = normalName(name)
	if rest, ok := strings.CutSuffix(name, ".in-addr.arpa"); ok {
		parts := strings.Split(rest, ".")
		if len(parts) != 4 {
			return netip.Addr{}, false
		}
		for i, j := 0, 3; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
		a, err := netip.ParseAddr(strings.Join(parts, "."))
		return a, err == nil
	}
	if rest, ok := strings.CutSuffix(name, ".ip6.arpa"); ok {
		nibbles := strings.Split(rest, ".")
		if len(nibbles) != 32 {
			return netip.Addr{}, false
		}
		var b strings.Builder
		for i := 31; i >= 0; i-- {
			if len(nibbles[i]) != 1 {
				return netip.Addr{}, false
			}
			b.WriteString(nibbles[i])
			if i%4 == 0 && i > 0 {
				b.WriteByte(':')
			}
		}
		a, err := netip.ParseAddr(b.String())
		return a, err == nil
	}
	return netip.Addr{}, false
}

// denyDNS answers NXDOMAIN for a denied name, with an Extended DNS Error
// carrying rung's message when the query has EDNS (edns non-nil), and
// journals it.
func (p *Proxy) denyDNS(m *dns.Msg, edns *dns.OPT, name string, d Decision) {
	m.Rcode = dns.RcodeNameError
	m.Answer = nil
	if edns != nil {
		o := m.SetEdns0(edns.UDPSize(), false).IsEdns0()
		o.Option = append(o.Option, &dns.EDNS0_EDE{InfoCode: dns.ExtendedErrorCodeBlocked, ExtraText: d.Message})
	}
	p.journal(Event{Time: p.now(), Kind: EventDNS, Protocol: ProtoDNS, Host: name, Rule: d.Rule, RuleText: d.RuleText,
		Verdict: VerdictDenied, Message: d.Message})
}

// forward relays a query of another type for an allowed name upstream.
func (p *Proxy) forward(ctx context.Context, req, m *dns.Msg) {
	c := &dns.Client{Net: "udp", Timeout: dnsTimeout}
	resp, _, err := c.ExchangeContext(ctx, req, p.cfg.DNSUpstream)
	if err == nil && resp.Truncated {
		c.Net = "tcp"
		resp, _, err = c.ExchangeContext(ctx, req, p.cfg.DNSUpstream)
	}
	if err != nil {
		m.Rcode = dns.RcodeServerFailure
		return
	}
	m.Rcode = resp.Rcode
	m.Answer, m.Ns, m.Extra = resp.Answer, resp.Ns, resp.Extra
}
