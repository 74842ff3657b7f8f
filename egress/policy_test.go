package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"rung.dev/rung"
)

func allow(domain, cidr, ports string) rung.NetworkRule {
	return rung.NetworkRule{Action: rung.RuleAllow, Domain: domain, CIDR: cidr, Ports: ports}
}

func deny(domain, cidr, ports string) rung.NetworkRule {
	return rung.NetworkRule{Action: rung.RuleDeny, Domain: domain, CIDR: cidr, Ports: ports}
}

func mustCompile(t testing.TB, rules ...rung.NetworkRule) *Policy {
	t.Helper()
	p, err := Compile(rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecide(t *testing.T) {
	t.Parallel()
	ip := netip.MustParseAddr
	get := func(host, path string) Target {
		return Target{Host: host, IP: ip("203.0.113.5"), Port: 443, Method: "GET", Path: path}
	}
	tests := []struct {
		name     string
		rules    []rung.NetworkRule
		target   Target
		allow    bool
		rule     int
		inMsg    string // a substring of the message, for denials
		notInMsg string
	}{
		{"no rules allow everything", nil, Target{Host: "example.com", Port: 443}, true, -1, "", ""},
		{"no rules allow raw", nil, Target{IP: ip("203.0.113.5"), Port: 22}, true, -1, "", ""},
		{"exact allow", []rung.NetworkRule{allow("api.github.com", "", "")}, Target{Host: "api.github.com", Port: 443}, true, 0, "", ""},
		{"exact is case and dot blind", []rung.NetworkRule{allow("API.GitHub.com.", "", "")}, Target{Host: "api.github.COM.", Port: 443}, true, 0, "", ""},
		{"default deny once an allow exists", []rung.NetworkRule{allow("api.github.com", "", "")}, Target{Host: "example.com", Port: 443}, false, -1,
			"rung: egress to example.com denied by policy; allowed: api.github.com", ""},
		{"exact does not match below", []rung.NetworkRule{allow("github.com", "", "")}, Target{Host: "api.github.com", Port: 443}, false, -1, "", ""},
		{"wildcard matches below", []rung.NetworkRule{allow("*.npmjs.org", "", "")}, Target{Host: "registry.npmjs.org", Port: 443}, true, 0, "", ""},
		{"wildcard matches deep", []rung.NetworkRule{allow("*.npmjs.org", "", "")}, Target{Host: "a.b.npmjs.org", Port: 443}, true, 0, "", ""},
		{"wildcard not the apex", []rung.NetworkRule{allow("*.npmjs.org", "", "")}, Target{Host: "npmjs.org", Port: 443}, false, -1, "", ""},
		{"wildcard not a suffix", []rung.NetworkRule{allow("*.npmjs.org", "", "")}, Target{Host: "evilnpmjs.org", Port: 443}, false, -1, "", ""},
		{"deny wins over earlier allow", []rung.NetworkRule{allow("*.example.com", "", ""), deny("bad.example.com", "", "")},
			Target{Host: "bad.example.com", Port: 443}, false, 1, "denied by policy rule 1 (deny domain bad.example.com)", ""},
		{"deny alone leaves default allow", []rung.NetworkRule{deny("bad.example.com", "", "")}, Target{Host: "good.example.com", Port: 443}, true, -1, "", ""},
		{"deny by cidr on a named target", []rung.NetworkRule{allow("*.example.com", "", ""), deny("", "203.0.113.0/24", "")},
			Target{Host: "a.example.com", IP: ip("203.0.113.9"), Port: 443}, false, 1, "", ""},
		{"port rule matches", []rung.NetworkRule{allow("example.com", "", "80,443")}, Target{Host: "example.com", Port: 80}, true, 0, "", ""},
		{"port rule range", []rung.NetworkRule{allow("example.com", "", "8000-8100")}, Target{Host: "example.com", Port: 8080}, true, 0, "", ""},
		{"port rule misses", []rung.NetworkRule{allow("example.com", "", "443")}, Target{Host: "example.com", Port: 22}, false, -1, "example.com:22", ""},
		{"cidr allows raw", []rung.NetworkRule{allow("", "198.51.100.0/24", "5432")}, Target{IP: ip("198.51.100.7"), Port: 5432}, true, 0, "", ""},
		{"cidr needs the address", []rung.NetworkRule{allow("", "198.51.100.0/24", "")}, Target{Host: "db.example.com", Port: 5432}, false, -1, "", ""},
		{"cidr matches mapped v4", []rung.NetworkRule{allow("", "198.51.100.0/24", "")}, Target{IP: ip("::ffff:198.51.100.7"), Port: 1}, true, 0, "", ""},
		{"cidr v6", []rung.NetworkRule{allow("", "2001:db8::/32", "")}, Target{IP: ip("2001:db8::1"), Port: 1}, true, 0, "", ""},
		{"domain and cidr both needed", []rung.NetworkRule{allow("example.com", "203.0.113.0/24", "")}, Target{Host: "example.com", IP: ip("198.51.100.1"), Port: 443}, false, -1, "", ""},
		{"raw matched on looked-up name", []rung.NetworkRule{allow("db.example.com", "", "5432")}, Target{Host: "db.example.com", IP: ip("203.0.113.5"), Port: 5432}, true, 0, "", ""},
		{"no name, no domain rule", []rung.NetworkRule{allow("db.example.com", "", "")}, Target{IP: ip("203.0.113.5"), Port: 5432}, false, -1, "203.0.113.5:5432", ""},
		{"method rule never matches a connection", []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "api.example.com", Methods: []string{"GET"}}},
			Target{Host: "api.example.com", Port: 443}, false, -1, "", ""},
		{"method rule matches", []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "api.example.com", Methods: []string{"get", "HEAD"}}},
			get("api.example.com", "/x"), true, 0, "", ""},
		{"method rule misses", []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "api.example.com", Methods: []string{"GET"}}},
			Target{Host: "api.example.com", Port: 443, Method: "POST", Path: "/x"}, false, -1, "api.example.com (POST /x)", ""},
		{"path prefix matches", []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "api.example.com", PathPrefix: "/public/"}},
			get("api.example.com", "/public/a"), true, 0, "", ""},
		{"path prefix dot segments", []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "api.example.com", PathPrefix: "/public/"}},
			get("api.example.com", "/public/../admin"), false, -1, "(GET /admin)", ""},
		{"path prefix double slash", []rung.NetworkRule{{Action: rung.RuleDeny, Domain: "api.example.com", PathPrefix: "/admin"}},
			get("api.example.com", "//admin/x"), false, 0, "", ""},
		{"path deny wins", []rung.NetworkRule{allow("api.example.com", "", ""), {Action: rung.RuleDeny, Domain: "api.example.com", Methods: []string{"DELETE"}}},
			Target{Host: "api.example.com", Port: 443, Method: "DELETE", Path: "/repo"}, false, 1, "", ""},
		{"path deny leaves other methods", []rung.NetworkRule{allow("api.example.com", "", ""), {Action: rung.RuleDeny, Domain: "api.example.com", Methods: []string{"DELETE"}}},
			get("api.example.com", "/repo"), true, 0, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := mustCompile(t, tc.rules...).Decide(tc.target)
			if d.Allow != tc.allow || d.Rule != tc.rule {
				t.Fatalf("Decide(%+v) = %+v, want allow %v by rule %d", tc.target, d, tc.allow, tc.rule)
			}
			if d.RuleText == "" {
				t.Errorf("Decide(%+v) has no rule text", tc.target)
			}
			if !d.Allow && !strings.Contains(d.Message, tc.inMsg) {
				t.Errorf("message %q, want it to contain %q", d.Message, tc.inMsg)
			}
			if d.Allow && d.Message != "" {
				t.Errorf("allowed with message %q", d.Message)
			}
		})
	}
}

func TestNameVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rules []rung.NetworkRule
		host  string
		want  nameVerdict
	}{
		{"no rules", nil, "example.com", nameAllowed},
		{"denied name", []rung.NetworkRule{deny("*.example.com", "", "")}, "a.example.com", nameDenied},
		{"deny with ports still resolves", []rung.NetworkRule{deny("a.example.com", "", "22")}, "a.example.com", nameAllowed},
		{"allowed name", []rung.NetworkRule{allow("a.example.com", "", "443")}, "a.example.com", nameAllowed},
		{"method rule allows the name", []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "a.example.com", Methods: []string{"GET"}}}, "a.example.com", nameAllowed},
		{"not allowed", []rung.NetworkRule{allow("a.example.com", "", "")}, "b.example.com", nameDenied},
		{"only cidr could allow", []rung.NetworkRule{allow("a.example.com", "", ""), allow("", "198.51.100.0/24", "")}, "b.example.com", nameByCIDR},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got, _ := mustCompile(t, tc.rules...).name(tc.host); got != tc.want {
				t.Errorf("name(%q) = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy rung.NetworkPolicy
		want   string // substring of the error; "" for valid
	}{
		{"empty", rung.NetworkPolicy{}, ""},
		{"good", rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: []rung.NetworkRule{
			allow("*.npmjs.org", "", "443"), deny("", "10.0.0.0/8", ""), allow("x.y", "", "80, 8000-8100"),
			{Action: rung.RuleAllow, Domain: "api.github.com", Methods: []string{"GET"}, PathPrefix: "/repos/"},
		}, Headers: []rung.HeaderRule{{Domain: "api.github.com", Header: "authorization", Value: "Bearer {{secret:GITHUB_TOKEN}}"}}}, ""},
		{"bad mode", rung.NetworkPolicy{Mode: "wide"}, `network mode "wide"`},
		{"empty rule", rung.NetworkPolicy{Rules: []rung.NetworkRule{{Action: rung.RuleAllow}}}, "rule 0: needs a domain or a cidr"},
		{"bad action", rung.NetworkPolicy{Rules: []rung.NetworkRule{{Action: "permit", Domain: "a.b"}}}, `rule 0: action "permit"`},
		{"bad cidr", rung.NetworkPolicy{Rules: []rung.NetworkRule{allow("", "10.0.0.0/33", "")}}, `rule 0: cidr "10.0.0.0/33"`},
		{"cidr host bits", rung.NetworkPolicy{Rules: []rung.NetworkRule{allow("", "10.0.0.1/8", "")}}, `"10.0.0.0/8"`},
		{"cidr bare address", rung.NetworkPolicy{Rules: []rung.NetworkRule{allow("", "10.0.0.1", "")}}, `"10.0.0.1/32"`},
		{"bad ports", rung.NetworkPolicy{Rules: []rung.NetworkRule{allow("a.b", "", "80-")}}, `rule 0: ports "80-"`},
		{"port zero", rung.NetworkPolicy{Rules: []rung.NetworkRule{allow("a.b", "", "0")}}, `ports "0"`},
		{"port too big", rung.NetworkPolicy{Rules: []rung.NetworkRule{allow("a.b", "", "65536")}}, `ports "65536"`},
		{"backwards range", rung.NetworkPolicy{Rules: []rung.NetworkRule{allow("a.b", "", "90-80")}}, "runs backwards"},
		{"bad wildcard", rung.NetworkPolicy{Rules: []rung.NetworkRule{allow("a.*.b", "", "")}}, `rule 0: domain "a.*.b"`},
		{"bare star", rung.NetworkPolicy{Rules: []rung.NetworkRule{allow("*", "", "")}}, `domain "*"`},
		{"double wildcard", rung.NetworkPolicy{Rules: []rung.NetworkRule{allow("*.*.b", "", "")}}, `domain "*.*.b"`},
		{"domain is an address", rung.NetworkPolicy{Rules: []rung.NetworkRule{allow("1.2.3.4", "", "")}}, "use cidr"},
		{"domain bad char", rung.NetworkPolicy{Rules: []rung.NetworkRule{allow("exa mple.com", "", "")}}, "has ' '"},
		{"bad method", rung.NetworkPolicy{Rules: []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "a.b", Methods: []string{"GE T"}}}}, "method"},
		{"bad path", rung.NetworkPolicy{Rules: []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "a.b", PathPrefix: "x"}}}, "path prefix"},
		{"second rule named", rung.NetworkPolicy{Rules: []rung.NetworkRule{allow("a.b", "", ""), allow("", "", "")}}, "rule 1:"},
		{"header host", rung.NetworkPolicy{Headers: []rung.HeaderRule{{Domain: "a.b", Header: "Host", Value: "x"}}}, "header rule 0: header Host"},
		{"header bad secret", rung.NetworkPolicy{Headers: []rung.HeaderRule{{Domain: "a.b", Header: "X-Key", Value: "{{secret:A B}}"}}}, "malformed"},
		{"header newline", rung.NetworkPolicy{Headers: []rung.HeaderRule{{Domain: "a.b", Header: "X-Key", Value: "a\r\nb"}}}, "line break"},
		{"header bad domain", rung.NetworkPolicy{Headers: []rung.HeaderRule{{Domain: "", Header: "X-Key", Value: "v"}}}, "header rule 0: domain"},
		{"negative limit", rung.NetworkPolicy{Limits: rung.NetworkLimits{MaxConnections: -1}}, "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tc.policy)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
			if !errors.Is(err, rung.ErrInvalid) {
				t.Errorf("Validate = %v, want it to wrap rung.ErrInvalid", err)
			}
		})
	}
}

func TestSecretNames(t *testing.T) {
	t.Parallel()
	p := rung.NetworkPolicy{Headers: []rung.HeaderRule{
		{Domain: "a.b", Header: "Authorization", Value: "Bearer {{secret:B}}"},
		{Domain: "a.b", Header: "X-Both", Value: "{{secret:A}}:{{secret:B}}"},
	}}
	if got := strings.Join(SecretNames(p), ","); got != "A,B" {
		t.Errorf("SecretNames = %q, want A,B", got)
	}
}

// TestModeNone: a policy of mode none denies every name and target, its
// rules notwithstanding, with a message that says why.
func TestModeNone(t *testing.T) {
	t.Parallel()
	p, err := Compile(rung.NetworkPolicy{Mode: rung.NetworkNone, Rules: []rung.NetworkRule{allow("a.example.com", "", "")}})
	if err != nil {
		t.Fatal(err)
	}
	if v, d := p.name("a.example.com"); v != nameDenied || d.Allow || !strings.Contains(d.Message, "mode is none") {
		t.Errorf("name in mode none = %v, %+v; want denied, saying so", v, d)
	}
	d := p.Decide(Target{Host: "a.example.com", IP: netip.MustParseAddr("198.51.100.7"), Port: 443})
	if d.Allow || !strings.Contains(d.Message, "a.example.com") || !strings.Contains(d.Message, "mode is none") {
		t.Errorf("Decide in mode none = %+v; want denied, naming the host and the mode", d)
	}
}
