package egress

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

func TestDNS(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	pol := rules(
		allow("*.example.test", "", ""),
		deny("www.example.test", "", ""),
		allow("", "203.0.113.30/32", "443"),
		deny("", "198.51.100.1/32", ""),
	)
	tests := []struct {
		name    string
		qname   string
		qtype   uint16
		ipv6    bool
		rcode   int
		answers []string // the answers' addresses or texts
	}{
		{"allowed A", "api.example.test", dns.TypeA, false, dns.RcodeSuccess, []string{"203.0.113.10"}},
		{"case and dot", "API.Example.Test.", dns.TypeA, false, dns.RcodeSuccess, []string{"203.0.113.10"}},
		{"denied by rule", "www.example.test", dns.TypeA, false, dns.RcodeNameError, nil},
		{"denied by default", "other.test", dns.TypeA, false, dns.RcodeNameError, nil},
		{"not existing", "nx.example.test", dns.TypeA, false, dns.RcodeNameError, nil},
		{"denied address left out", "mixed.example.test", dns.TypeA, false, dns.RcodeSuccess, []string{"203.0.113.30"}},
		{"AAAA without IPv6", "v6.example.test", dns.TypeAAAA, false, dns.RcodeSuccess, nil},
		{"AAAA with IPv6", "v6.example.test", dns.TypeAAAA, true, dns.RcodeSuccess, []string{"2001:db8::10"}},
		{"AAAA denied", "www.example.test", dns.TypeAAAA, true, dns.RcodeNameError, nil},
		{"TXT forwarded", "api.example.test", dns.TypeTXT, false, dns.RcodeSuccess, []string{"upstream"}},
		{"TXT denied", "www.example.test", dns.TypeTXT, false, dns.RcodeNameError, nil},
		{"TXT only CIDR could allow", "other.test", dns.TypeTXT, false, dns.RcodeSuccess, nil},
		{"ANY", "api.example.test", dns.TypeANY, false, dns.RcodeNotImplemented, nil},
		{"PTR unknown", "10.113.0.203.in-addr.arpa", dns.TypePTR, false, dns.RcodeNameError, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, w, pol, func(c *Config) { c.IPv6 = tc.ipv6 })
			r := sb.query(tc.qname, tc.qtype, false)
			if r.Rcode != tc.rcode {
				t.Fatalf("%s %s: rcode %s, want %s", tc.qname, dns.TypeToString[tc.qtype], dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
			}
			var got []string
			for _, rr := range r.Answer {
				switch rr := rr.(type) {
				case *dns.A:
					got = append(got, rr.A.String())
				case *dns.AAAA:
					got = append(got, rr.AAAA.String())
				case *dns.TXT:
					got = append(got, rr.Txt...)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.answers, ",") {
				t.Errorf("answers %v, want %v", got, tc.answers)
			}
		})
	}
}

// TestDNSDenialSaysWhy: with EDNS, a denial carries an Extended DNS Error
// with rung's message; it is journaled; and the name is never resolved
// upstream.
func TestDNSDenialSaysWhy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules(allow("api.example.test", "", "")))
	r := sb.query("www.example.test", dns.TypeA, true)
	if r.Rcode != dns.RcodeNameError {
		t.Fatalf("rcode %s", dns.RcodeToString[r.Rcode])
	}
	var ede *dns.EDNS0_EDE
	if opt := r.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if e, ok := o.(*dns.EDNS0_EDE); ok {
				ede = e
			}
		}
	}
	if ede == nil || ede.InfoCode != dns.ExtendedErrorCodeBlocked ||
		ede.ExtraText != "rung: egress to www.example.test denied by policy; allowed: api.example.test" {
		t.Errorf("extended error %+v", ede)
	}
	ev := sb.ev.wait(t, "dns denial", func(e Event) bool { return e.Kind == EventDNS })
	if ev.Host != "www.example.test" || ev.Verdict != VerdictDenied {
		t.Errorf("event %+v", ev)
	}
	if w.res.lookedUp("www.example.test") {
		t.Error("a denied name was resolved upstream")
	}
}

// TestDNSOnlyCIDR: with allow rules that name only addresses, a name
// resolves to those of its addresses the rules allow, or not at all.
func TestDNSOnlyCIDR(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules(allow("", "203.0.113.30/32", "")))
	if r := sb.query("mixed.example.test", dns.TypeA, false); len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "203.0.113.30" {
		t.Errorf("mixed.example.test: %v", r.Answer)
	}
	if r := sb.query("api.example.test", dns.TypeA, false); r.Rcode != dns.RcodeNameError {
		t.Errorf("api.example.test: rcode %s, want NXDOMAIN", dns.RcodeToString[r.Rcode])
	}
}

// TestDNSRecordsNames: a lookup teaches the proxy the address's name, for
// raw TCP and for PTR; over TCP as over UDP.
func TestDNSRecordsNames(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules(allow("echo.example.test", "", "")))
	m := new(dns.Msg)
	m.SetQuestion("echo.example.test.", dns.TypeA)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: waitTimeout}).Exchange(m, sb.dnsTCP)
	if err != nil || len(r.Answer) != 1 {
		t.Fatalf("over TCP: %v %v", r, err)
	}
	if got := sb.p.names.lookup(netip.MustParseAddr("203.0.113.20")); got != "echo.example.test" {
		t.Errorf("name of 203.0.113.20 = %q", got)
	}
	ptr := sb.query("20.113.0.203.in-addr.arpa", dns.TypePTR, false)
	if len(ptr.Answer) != 1 || ptr.Answer[0].(*dns.PTR).Ptr != "echo.example.test." {
		t.Errorf("PTR: %v", ptr.Answer)
	}
}

func TestArpaAddr(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"4.3.2.1.in-addr.arpa.": "1.2.3.4",
		"0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa": "2001:db8::10",
		"3.2.1.in-addr.arpa":   "",
		"x.3.2.1.in-addr.arpa": "",
		"example.com":          "",
	} {
		a, ok := arpaAddr(name)
		got := ""
		if ok {
			got = a.String()
		}
		if got != want {
			t.Errorf("arpaAddr(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestDNSPolicySwap(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules())
	if r := sb.query("api.example.test", dns.TypeA, false); r.Rcode != dns.RcodeSuccess {
		t.Fatalf("before: %s", dns.RcodeToString[r.Rcode])
	}
	if err := sb.p.SetPolicy(rules(deny("api.example.test", "", ""))); err != nil {
		t.Fatal(err)
	}
	if r := sb.query("api.example.test", dns.TypeA, false); r.Rcode != dns.RcodeNameError {
		t.Errorf("after: %s", dns.RcodeToString[r.Rcode])
	}
}
