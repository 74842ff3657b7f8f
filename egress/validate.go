package egress

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"rung.dev/rung"
)

// Bounds on a policy's size: every rule is matched on every connection.
const (
	maxRules       = 512
	maxHeaderRules = 64
)

// Validate reports every problem with p, each naming its rule ("rule 2:
// ports \"80-\": …"), joined into one error that wraps [rung.ErrInvalid];
// nil when p is valid. It checks the mode, each rule (an action; a domain
// or a CIDR; a well-formed exact or "*." domain; a CIDR without host bits;
// ports and ranges within 1-65535; methods and a path prefix), each header
// rule (a domain, a header name rung may set, well-formed
// {{secret:NAME}} references) and the limits. The API calls it before it
// stores a policy.
func Validate(p rung.NetworkPolicy) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format+": %w", append(args, rung.ErrInvalid)...))
	}
	switch p.Mode {
	case "", rung.NetworkNone, rung.NetworkEgress, rung.NetworkOpen:
	default:
		bad("network mode %q is not one of none, egress, open", p.Mode)
	}
	if len(p.Rules) > maxRules {
		bad("%d rules, more than %d", len(p.Rules), maxRules)
	}
	for i, r := range p.Rules {
		if _, err := compileRule(r); err != nil {
			bad("rule %d: %v", i, err)
		}
	}
	if len(p.Headers) > maxHeaderRules {
		bad("%d header rules, more than %d", len(p.Headers), maxHeaderRules)
	}
	for i, h := range p.Headers {
		if _, err := compileHeader(h); err != nil {
			bad("header rule %d: %v", i, err)
		}
	}
	l := p.Limits
	if l.MaxConnections < 0 || l.RequestsPerSecond < 0 || l.BytesPerSecond < 0 {
		bad("limits must not be negative")
	}
	return errors.Join(errs...)
}

// SecretNames returns the secrets p's header rules name, sorted, each
// once: the API checks that the tenant has them.
func SecretNames(p rung.NetworkPolicy) []string {
	var names []string
	for _, h := range p.Headers {
		for _, m := range secretRef.FindAllStringSubmatch(h.Value, -1) {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func compileRule(r rung.NetworkRule) (rule, error) {
	var c rule
	switch r.Action {
	case rung.RuleAllow:
		c.allow = true
	case rung.RuleDeny:
	default:
		return c, fmt.Errorf("action %q is not allow or deny", r.Action)
	}
	if r.Domain == "" && r.CIDR == "" {
		return c, errors.New("needs a domain or a cidr")
	}
	var err error
	if r.Domain != "" {
		if c.domain, err = parseDomain(r.Domain); err != nil {
			return c, err
		}
	}
	if r.CIDR != "" {
		if c.prefix, err = parseCIDR(r.CIDR); err != nil {
			return c, err
		}
	}
	if r.Ports != "" {
		if c.ports, err = parsePorts(r.Ports); err != nil {
			return c, err
		}
	}
	for _, m := range r.Methods {
		if !isToken(m) {
			return c, fmt.Errorf("method %q is not an HTTP method", m)
		}
		c.methods = append(c.methods, strings.ToUpper(m))
	}
	if r.PathPrefix != "" {
		if !strings.HasPrefix(r.PathPrefix, "/") {
			return c, fmt.Errorf("path prefix %q does not start with /", r.PathPrefix)
		}
		c.path = cleanPath(r.PathPrefix)
	}
	c.text = ruleText(r, c)
	return c, nil
}

func ruleText(r rung.NetworkRule, c rule) string {
	s := string(r.Action)
	if !c.domain.zero() {
		s += " domain " + c.domain.String()
	}
	if c.prefix.IsValid() {
		s += " cidr " + c.prefix.String()
	}
	if c.ports != nil {
		s += " ports " + c.ports.String()
	}
	if c.methods != nil {
		s += " methods " + strings.Join(c.methods, ",")
	}
	if c.path != "" {
		s += " path " + c.path
	}
	return s
}

// domainPattern is an exact name or, with wild set, every name strictly
// below base. The zero value matches nothing and means "no domain".
type domainPattern struct {
	base string // lower case, no trailing dot
	wild bool
}

func (d domainPattern) zero() bool { return d.base == "" }

func (d domainPattern) match(host string) bool {
	if d.wild {
		return len(host) > len(d.base)+1 && strings.HasSuffix(host, d.base) && host[len(host)-len(d.base)-1] == '.'
	}
	return host == d.base
}

func (d domainPattern) String() string {
	if d.wild {
		return "*." + d.base
	}
	return d.base
}

// parseDomain parses "name" or "*.name".
func parseDomain(s string) (domainPattern, error) {
	var d domainPattern
	name := s
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		d.wild, name = true, rest
	}
	name = normalName(name)
	if _, err := netip.ParseAddr(name); err == nil {
		return d, fmt.Errorf("domain %q is an address: use cidr %q", s, name+"/32")
	}
	if err := checkName(name); err != nil {
		return d, fmt.Errorf("domain %q: %v", s, err)
	}
	d.base = name
	return d, nil
}

// checkName checks a host name's syntax: dot-separated labels of letters,
// digits, '-' and '_' (1-63 bytes each, 253 in all). A '*' anywhere is an
// error: wildcards are "*." in front only.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if len(name) > 253 {
		return errors.New("longer than 253 bytes")
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("label %q is empty or longer than 63 bytes", label)
		}
		for _, c := range []byte(label) {
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			case c == '*':
				return errors.New(`a wildcard is "*." at the start only`)
			default:
				return fmt.Errorf("label %q has %q", label, c)
			}
		}
	}
	return nil
}

// normalName lower-cases a host name and drops one trailing dot.
func normalName(s string) string {
	return strings.ToLower(strings.TrimSuffix(s, "."))
}

func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		if a, aerr := netip.ParseAddr(s); aerr == nil {
			return p, fmt.Errorf("cidr %q has no prefix length: %q for the one address", s, netip.PrefixFrom(a, a.BitLen()).String())
		}
		return p, fmt.Errorf("cidr %q is not an address range", s)
	}
	if p.Addr().Zone() != "" {
		return p, fmt.Errorf("cidr %q has a zone", s)
	}
	if m := p.Masked(); m != p {
		return p, fmt.Errorf("cidr %q has host bits set: %q", s, m.String())
	}
	if p.Addr().Is4In6() {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p, nil
}

// portSet is a sorted list of inclusive port ranges.
type portSet [][2]uint16

func (s portSet) has(port uint16) bool {
	for _, r := range s {
		if port >= r[0] && port <= r[1] {
			return true
		}
	}
	return false
}

func (s portSet) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		if r[0] == r[1] {
			parts[i] = strconv.Itoa(int(r[0]))
		} else {
			parts[i] = fmt.Sprintf("%d-%d", r[0], r[1])
		}
	}
	return strings.Join(parts, ",")
}

// parsePorts parses "443", "80,443", "8000-8100".
func parsePorts(s string) (portSet, error) {
	var set portSet
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parsePort(lo)
		if err != nil {
			return nil, fmt.Errorf("ports %q: %v", s, err)
		}
		b := a
		if isRange {
			if b, err = parsePort(hi); err != nil {
				return nil, fmt.Errorf("ports %q: %v", s, err)
			}
			if b < a {
				return nil, fmt.Errorf("ports %q: range %q runs backwards", s, part)
			}
		}
		set = append(set, [2]uint16{a, b})
	}
	slices.SortFunc(set, func(x, y [2]uint16) int { return int(x[0]) - int(y[0]) })
	return set, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%q is not a port (1-65535)", s)
	}
	return uint16(n), nil
}

// isToken reports whether s is an HTTP token (RFC 9110), as methods and
// header names are.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// headerRule is a compiled [rung.HeaderRule].
type headerRule struct {
	domain domainPattern
	header string // canonical
	value  string // may hold {{secret:NAME}}
}

// secretRef finds {{secret:NAME}} in a header value.
var secretRef = regexp.MustCompile(`\{\{secret:([A-Za-z0-9_.-]+)\}\}`)

// unsettable are headers a header rule may not set: they frame the
// message or route it, and the proxy owns them.
var unsettable = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "Te", "Trailer", "Keep-Alive", "Proxy-Connection"}

func compileHeader(h rung.HeaderRule) (headerRule, error) {
	var c headerRule
	d, err := parseDomain(h.Domain)
	if err != nil {
		return c, err
	}
	if !isToken(h.Header) {
		return c, fmt.Errorf("header %q is not a header name", h.Header)
	}
	name := http.CanonicalHeaderKey(h.Header)
	if slices.Contains(unsettable, name) {
		return c, fmt.Errorf("header %s is set by the proxy, not by rules", name)
	}
	if strings.ContainsAny(h.Value, "\r\n\x00") {
		return c, fmt.Errorf("header %s: value has a line break or NUL", name)
	}
	rest := secretRef.ReplaceAllString(h.Value, "")
	if strings.Contains(rest, "{{secret:") {
		return c, fmt.Errorf("header %s: malformed {{secret:NAME}} (NAME is letters, digits, '_', '.', '-')", name)
	}
	return headerRule{domain: d, header: name, value: h.Value}, nil
}
