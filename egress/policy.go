package egress

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"

	"rung.dev/rung"
)

// Policy is a compiled [rung.NetworkPolicy]: rules parsed once, ready for
// [Policy.Decide]. A Policy is immutable and safe for concurrent use.
type Policy struct {
	src     rung.NetworkPolicy
	rules   []rule
	headers []headerRule
	// allows says whether any allow rule exists (then the default is deny).
	allows bool
	// none: the sandbox's mode is none; every target is denied.
	none bool
	// allowedText lists the allow rules' destinations for denial messages.
	allowedText string
}

// rule is one compiled [rung.NetworkRule].
type rule struct {
	allow   bool
	domain  domainPattern // zero: any name (and no name)
	prefix  netip.Prefix  // invalid: any address
	ports   portSet       // nil: every port
	methods []string      // upper case; nil: any
	path    string        // "": any
	text    string        // the rule as a person reads it
}

// Target is what a connection or request goes to, as [Policy.Decide]
// matches it. The zero value of a field means unknown: Host "" for a
// connection with no name, an invalid IP when the address is not known
// yet, Method "" for anything that is not an HTTP request.
type Target struct {
	// Host is the name: TLS's server name, HTTP's Host (without port), or
	// for other TCP the name the sandbox looked up for IP.
	Host string
	// IP is the address rung dials.
	IP netip.Addr
	// Port is the destination port.
	Port uint16
	// Method and Path are the HTTP request's method and URL path (before
	// any query); only requests have them.
	Method, Path string
}

// Decision is the policy's verdict on a [Target].
type Decision struct {
	Allow bool
	// Rule is the index of the rule that decided in the policy's Rules, or
	// -1 when none matched and the default applied.
	Rule int
	// RuleText describes that rule ("deny domain *.example.com ports 22")
	// or the default ("default: allow (no allow rules)").
	RuleText string
	// Message says, for the sandbox, why a denied target was denied and
	// what is allowed; "" when allowed.
	Message string
}

// Compile validates p (as [Validate] does) and compiles it. Errors wrap
// [rung.ErrInvalid] and name the rule.
func Compile(p rung.NetworkPolicy) (*Policy, error) {
	if err := Validate(p); err != nil {
		return nil, err
	}
	c := &Policy{src: clonePolicy(p), none: p.Mode == rung.NetworkNone}
	var allowed []string
	for _, r := range p.Rules {
		cr, _ := compileRule(r) // validated above
		c.rules = append(c.rules, cr)
		if cr.allow {
			c.allows = true
			allowed = append(allowed, cr.destText())
		}
	}
	for _, h := range p.Headers {
		ch, _ := compileHeader(h)
		c.headers = append(c.headers, ch)
	}
	c.allowedText = listText(allowed, 12)
	return c, nil
}

// clonePolicy copies p's slices, so that the caller's later changes do
// not reach a compiled policy.
func clonePolicy(p rung.NetworkPolicy) rung.NetworkPolicy {
	p.Rules = slices.Clone(p.Rules)
	for i := range p.Rules {
		p.Rules[i].Methods = slices.Clone(p.Rules[i].Methods)
	}
	p.Headers = slices.Clone(p.Headers)
	return p
}

// Source returns the policy as it was given to [Compile]. The caller
// must not modify it.
func (p *Policy) Source() rung.NetworkPolicy { return p.src }

// Decide matches t against the rules: a matching deny rule wins over any
// allow rule; otherwise the first matching allow rule allows; otherwise t
// is denied if any allow rule exists and allowed if none does. A rule
// matches when every field it sets matches: its domain needs t.Host, its
// CIDR needs t.IP, its ports need t.Port, and its methods or path prefix
// need an HTTP request (t.Method set), so such a rule never matches a
// connection. Path prefixes are matched on the cleaned path, so
// "/public/../admin" is "/admin".
//
// Decide is pure: it does not look at whether an address may be dialed at
// all (loopback, private ranges); the proxy checks that separately.
func (p *Policy) Decide(t Target) Decision {
	t = normalTarget(t)
	if p.none {
		return p.noneDecision(t)
	}
	for i, r := range p.rules {
		if !r.allow && r.matches(t) {
			return Decision{Rule: i, RuleText: r.text, Message: p.deniedBy(t, i)}
		}
	}
	for i, r := range p.rules {
		if r.allow && r.matches(t) {
			return Decision{Allow: true, Rule: i, RuleText: r.text}
		}
	}
	if !p.allows {
		return Decision{Allow: true, Rule: -1, RuleText: "default: allow (no allow rules)"}
	}
	return Decision{Rule: -1, RuleText: "default: deny (not allowed by any rule)", Message: p.deniedBy(t, -1)}
}

// noneDecision denies t in mode none.
func (p *Policy) noneDecision(t Target) Decision {
	return Decision{Rule: -1, RuleText: "mode none",
		Message: "rung: egress to " + destText(t) + " denied: this sandbox's network mode is none (no egress); PATCH its network to egress with allow rules to reach out"}
}

func normalTarget(t Target) Target {
	t.Host = normalName(t.Host)
	t.IP = t.IP.Unmap()
	if t.Method != "" {
		t.Path = cleanPath(t.Path)
	}
	return t
}

// cleanPath returns the path as a server resolves it: rooted, with dot
// segments and repeated slashes gone (keeping a trailing slash).
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

func (r *rule) matches(t Target) bool {
	if !r.matchesConn(t) {
		return false
	}
	if r.methods != nil || r.path != "" {
		if t.Method == "" {
			return false
		}
		if r.methods != nil && !slices.Contains(r.methods, t.Method) {
			return false
		}
		if r.path != "" && !strings.HasPrefix(t.Path, r.path) {
			return false
		}
	}
	return true
}

// matchesConn matches everything but methods and path.
func (r *rule) matchesConn(t Target) bool {
	if !r.domain.zero() && (t.Host == "" || !r.domain.match(t.Host)) {
		return false
	}
	if r.prefix.IsValid() && (!t.IP.IsValid() || !r.prefix.Contains(t.IP)) {
		return false
	}
	if r.ports != nil && !r.ports.has(t.Port) {
		return false
	}
	return true
}

// requestOnly reports whether the rule matches HTTP requests only.
func (r *rule) requestOnly() bool { return r.methods != nil || r.path != "" }

// needsRequests reports whether requests to t can be decided only one by
// one: a method or path rule could match them. Such connections are
// intercepted.
func (p *Policy) needsRequests(t Target) bool {
	t = normalTarget(t)
	for _, r := range p.rules {
		if r.requestOnly() && r.matchesConn(t) {
			return true
		}
	}
	return false
}

// explicitCIDR reports whether an allow rule whose CIDR contains t.IP
// matches t (ignoring methods and path): the only way to reach an address
// the proxy otherwise refuses (loopback, private, metadata).
func (p *Policy) explicitCIDR(t Target) bool {
	t = normalTarget(t)
	for _, r := range p.rules {
		if r.allow && r.prefix.IsValid() && r.matchesConn(t) {
			return true
		}
	}
	return false
}

// nameVerdict is what the policy says of a name before its addresses are
// known: the DNS server's answer and whether the proxy may resolve it.
type nameVerdict int

const (
	nameDenied  nameVerdict = iota // no address can be allowed: NXDOMAIN, and never resolved
	nameAllowed                    // some rule (or the default) allows the name
	nameByCIDR                     // only allow rules with a CIDR can allow it: resolve, keep their addresses
)

// name decides a name alone: denied when a deny rule matches the name on
// its own (no CIDR, ports, methods or path), allowed when the default
// allows or an allow rule names it, else left to the allow rules' CIDRs.
func (p *Policy) name(host string) (nameVerdict, Decision) {
	host = normalName(host)
	if p.none {
		return nameDenied, p.noneDecision(Target{Host: host})
	}
	for i, r := range p.rules {
		if !r.allow && !r.domain.zero() && !r.prefix.IsValid() && r.ports == nil && !r.requestOnly() && r.domain.match(host) {
			return nameDenied, Decision{Rule: i, RuleText: r.text, Message: p.deniedBy(Target{Host: host}, i)}
		}
	}
	if !p.allows {
		return nameAllowed, Decision{Allow: true, Rule: -1, RuleText: "default: allow (no allow rules)"}
	}
	byCIDR := false
	for i, r := range p.rules {
		if !r.allow {
			continue
		}
		if !r.domain.zero() && r.domain.match(host) {
			return nameAllowed, Decision{Allow: true, Rule: i, RuleText: r.text}
		}
		if r.domain.zero() && r.prefix.IsValid() {
			byCIDR = true
		}
	}
	d := Decision{Rule: -1, RuleText: "default: deny (not allowed by any rule)", Message: p.deniedBy(Target{Host: host}, -1)}
	if byCIDR {
		return nameByCIDR, d
	}
	return nameDenied, d
}

// addrDenied reports whether a deny rule that needs no port, method or
// path matches addr alone: such addresses are left out of DNS answers.
func (p *Policy) addrDenied(host string, addr netip.Addr) bool {
	t := normalTarget(Target{Host: host, IP: addr})
	for _, r := range p.rules {
		if !r.allow && r.prefix.IsValid() && r.ports == nil && !r.requestOnly() && r.matchesConn(t) {
			return true
		}
	}
	return false
}

// addrAllowedByCIDR reports whether an allow rule with a CIDR could allow
// addr (on some port).
func (p *Policy) addrAllowedByCIDR(host string, addr netip.Addr) bool {
	t := normalTarget(Target{Host: host, IP: addr})
	for _, r := range p.rules {
		if r.allow && r.prefix.IsValid() && r.prefix.Contains(t.IP) && (r.domain.zero() || r.domain.match(t.Host)) {
			return true
		}
	}
	return false
}

// deniedBy writes the message for a target denied by rule i (-1: the
// default).
func (p *Policy) deniedBy(t Target, i int) string {
	if t.Method != "" && !p.needsRequests(t) {
		// Only method and path rules make the request part of the answer.
		t.Method = ""
	}
	dest := destText(t)
	if i >= 0 {
		return fmt.Sprintf("rung: egress to %s denied by policy rule %d (%s)", dest, i, p.rules[i].text)
	}
	if p.allowedText == "" {
		return fmt.Sprintf("rung: egress to %s denied by policy", dest)
	}
	return fmt.Sprintf("rung: egress to %s denied by policy; allowed: %s", dest, p.allowedText)
}

// destText names a target for a message: the name, else the address, with
// the port unless it is 80 or 443, and the method and path of a request.
func destText(t Target) string {
	d := t.Host
	if d == "" && t.IP.IsValid() {
		d = t.IP.String()
		if t.IP.Is6() && t.Port != 0 {
			d = "[" + d + "]"
		}
	}
	if d == "" {
		d = "an unnamed destination"
	}
	if t.Port != 0 && t.Port != 80 && t.Port != 443 {
		d = fmt.Sprintf("%s:%d", d, t.Port)
	}
	if t.Method != "" {
		d = fmt.Sprintf("%s (%s %s)", d, t.Method, t.Path)
	}
	return d
}

// destText describes what an allow rule lets through, for "allowed: …".
func (r *rule) destText() string {
	var parts []string
	if !r.domain.zero() {
		parts = append(parts, r.domain.String())
	}
	if r.prefix.IsValid() {
		parts = append(parts, r.prefix.String())
	}
	s := strings.Join(parts, " in ")
	if r.ports != nil {
		s += " port " + r.ports.String()
	}
	if r.methods != nil {
		s += " " + strings.Join(r.methods, "|")
	}
	if r.path != "" {
		s += " " + r.path + "*"
	}
	return s
}

// listText joins at most max items, saying how many more there are.
func listText(items []string, max int) string {
	items = slices.Compact(items)
	if len(items) > max {
		return strings.Join(items[:max], ", ") + fmt.Sprintf(" and %d more", len(items)-max)
	}
	return strings.Join(items, ", ")
}
