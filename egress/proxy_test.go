package egress

import (
	"bufio"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"

	"rung.dev/rung"
)

func rules(rs ...rung.NetworkRule) rung.NetworkPolicy {
	return rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: rs}
}

func TestHTTPPolicy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	get := func(path string) rung.NetworkRule {
		return rung.NetworkRule{Action: rung.RuleAllow, Domain: "api.example.test", Methods: []string{"GET"}, PathPrefix: path}
	}
	tests := []struct {
		name   string
		policy rung.NetworkPolicy
		method string
		url    string
		status int
		body   string // substring
	}{
		{"no rules allow", rules(), "GET", "http://api.example.test/x", 200, `"host":"api.example.test"`},
		{"exact allowed", rules(allow("api.example.test", "", "")), "GET", "http://api.example.test/x", 200, `"path":"/x"`},
		{"default deny", rules(allow("api.example.test", "", ""), allow("*.npmjs.org", "", "")), "GET", "http://www.example.test/", 403,
			"rung: egress to www.example.test denied by policy; allowed: api.example.test, *.npmjs.org"},
		{"wildcard", rules(allow("*.example.test", "", "")), "GET", "http://www.example.test/", 200, `"host":"www.example.test"`},
		{"wildcard not apex", rules(allow("*.example.test", "", "")), "GET", "http://other.test/", 403, "denied by policy"},
		{"deny wins", rules(allow("*.example.test", "", ""), deny("www.example.test", "", "")), "GET", "http://www.example.test/", 403,
			"denied by policy rule 1 (deny domain www.example.test)"},
		{"port allowed", rules(allow("api.example.test", "", "80")), "GET", "http://api.example.test/", 200, ""},
		{"port denied over https", rules(allow("api.example.test", "", "80")), "GET", "https://api.example.test/", 403, "denied by policy"},
		{"cidr allows", rules(allow("", "203.0.113.0/24", "80")), "GET", "http://api.example.test/", 200, ""},
		{"cidr deny on the resolved address", rules(deny("", "203.0.113.11/32", "")), "GET", "http://www.example.test/", 403, "rule 0 (deny cidr 203.0.113.11/32)"},
		{"method allowed", rules(get("/repos/")), "GET", "http://api.example.test/repos/a", 200, ""},
		{"method denied", rules(get("/repos/")), "POST", "http://api.example.test/repos/a", 403, "api.example.test (POST /repos/a)"},
		{"path denied", rules(get("/repos/")), "GET", "http://api.example.test/admin", 403, "(GET /admin)"},
		{"path dot segments", rules(get("/repos/")), "GET", "http://api.example.test/repos/%2e%2e/admin", 403, "(GET /admin)"},
		{"method rule over https", rules(get("/repos/")), "GET", "https://api.example.test/repos/a", 200, `"scheme":"https"`},
		{"method denied over https", rules(get("/repos/")), "DELETE", "https://api.example.test/repos/a", 403, "(DELETE /repos/a)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, w, tc.policy)
			req, _ := http.NewRequest(tc.method, tc.url, nil)
			resp, body := sb.do(req)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.body) {
				t.Fatalf("%s %s = %d %q, want %d with %q", tc.method, tc.url, resp.StatusCode, body, tc.status, tc.body)
			}
			if resp.StatusCode == 403 && resp.Header.Get("X-Rung-Egress") != "denied" {
				t.Errorf("denial without X-Rung-Egress: %v", resp.Header)
			}
			ev := sb.ev.wait(t, "request event", func(e Event) bool { return e.Kind == EventRequest })
			if ev.Status != tc.status || ev.Method != tc.method {
				t.Errorf("event %+v, want status %d method %s", ev, tc.status, tc.method)
			}
			if (tc.status == 403) != (ev.Verdict == VerdictDenied) {
				t.Errorf("event verdict %s for status %d", ev.Verdict, tc.status)
			}
		})
	}
}

// TestTLSPassThrough: an allowed host with nothing to look inside is not
// intercepted, and the proxy connects to the SNI name, not to the
// address the sandbox dialed.
func TestTLSPassThrough(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules(allow("*.example.test", "", "443")))
	resp, body := sb.get("https://api.example.test/p")
	if resp.StatusCode != 200 || resp.TLS.PeerCertificates[0].Issuer.CommonName != w.upCA.String() {
		t.Fatalf("status %d, issuer %q: want 200 from the upstream's own certificate", resp.StatusCode, resp.TLS.PeerCertificates[0].Issuer.CommonName)
	}
	if resp.ProtoMajor != 2 {
		t.Errorf("passed-through TLS spoke %s, want HTTP/2 negotiated end to end", resp.Proto)
	}
	if info := echoOf(t, body); info.SNI != "api.example.test" {
		t.Errorf("upstream saw SNI %q", info.SNI)
	}
	ev := sb.ev.wait(t, "tls connection", func(e Event) bool { return e.Kind == EventConnection && e.Protocol == ProtoTLS })
	if ev.Host != "api.example.test" || ev.Verdict != VerdictAllowed || ev.Rule != 0 || ev.BytesDown == 0 || ev.BytesUp == 0 {
		t.Errorf("event %+v", ev)
	}

	// A connection to other.test's address that names www.example.test
	// goes to www.example.test.
	c, err := sb.connect(netip.MustParseAddrPort("203.0.113.12:443"))
	if err != nil {
		t.Fatal(err)
	}
	tc := tlsClient(sb, c, "www.example.test")
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	tc.Close()
	if !w.dialedAny("203.0.113.11:443") || w.dialedAny("203.0.113.12:") {
		t.Errorf("dialed %v, want www.example.test's address only", w.dialed)
	}
}

// TestTLSDenied: a denied HTTPS host is intercepted so that the program
// reads rung's 403, not a bare reset.
func TestTLSDenied(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules(allow("api.example.test", "", "")))
	resp, body := sb.get("https://www.example.test/")
	if resp.StatusCode != 403 || !strings.Contains(body, "rung: egress to www.example.test denied by policy; allowed: api.example.test") {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if resp.TLS.PeerCertificates[0].Issuer.CommonName != sb.ca.String() {
		t.Errorf("denial signed by %q, want the sandbox CA", resp.TLS.PeerCertificates[0].Issuer.CommonName)
	}
	if w.dialedAny("203.0.113.11") {
		t.Error("proxy dialed the denied host")
	}
	if w.res.lookedUp("www.example.test") {
		t.Error("proxy resolved a name the policy denies")
	}
	ev := sb.ev.wait(t, "connection event", func(e Event) bool { return e.Kind == EventConnection })
	if ev.Protocol != ProtoHTTPS || ev.Verdict != VerdictDenied || ev.Host != "www.example.test" {
		t.Errorf("connection event %+v", ev)
	}
}

// TestTLSDeniedWithoutCA: with no CA the proxy cannot say why in HTTP,
// so it resets at once.
func TestTLSDeniedWithoutCA(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules(allow("api.example.test", "", "")), func(c *Config) { c.CA = nil })
	c, err := sb.connect(netip.MustParseAddrPort("203.0.113.11:443"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := tlsClient(sb, c, "www.example.test").Handshake(); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("handshake: %v, want a reset", err)
	}
}

// TestUpstreamFailures: what cannot be reached is said so, in rung's
// words.
func TestUpstreamFailures(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules())
	for host, want := range map[string]string{
		"nx.example.test":       "rung: egress to nx.example.test failed: cannot resolve nx.example.test",
		"api.example.test:8080": "rung: egress to api.example.test:8080 failed: cannot connect",
	} {
		port := uint16(80)
		if strings.HasSuffix(host, ":8080") {
			port = 8080
		}
		c, err := sb.connect(netip.AddrPortFrom(netip.MustParseAddr("203.0.113.10"), port))
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		c.Close()
		if resp.StatusCode != 502 || strings.TrimSpace(string(body)) != want {
			t.Errorf("%s: %d %q, want 502 %q", host, resp.StatusCode, body, want)
		}
	}
	// Raw TCP to a port nothing listens on is reset.
	c, err := sb.connect(netip.MustParseAddrPort("203.0.113.20:9"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := roundTrip(c, "x\n"); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("raw to a closed port: %v, want a reset", err)
	}
	ev := sb.ev.wait(t, "failed connection", func(e Event) bool { return e.Kind == EventConnection && e.Port == 9 })
	if ev.Verdict != VerdictFailed || ev.Message != "rung: egress to 203.0.113.20:9 failed: cannot connect" {
		t.Errorf("event %+v", ev)
	}
}

func TestHTTPSHeaderInjection(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	secret := "s3cr3t-value-do-not-leak"
	pol := rules()
	pol.Headers = []rung.HeaderRule{{Domain: "api.example.test", Header: "Authorization", Value: "Bearer {{secret:TOKEN}}"}}
	src := StaticSecrets{{Name: "TOKEN", Hosts: []string{"api.example.test"}, Value: secret}}
	sb := newSandbox(t, w, pol, func(c *Config) { c.Secrets = src })
	for _, scheme := range []string{"http", "https"} {
		resp, body := sb.get(scheme + "://api.example.test/h")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %q", scheme, resp.StatusCode, body)
		}
		if strings.Contains(body, secret) {
			t.Errorf("%s: the upstream's echo of the secret reached the sandbox: %q", scheme, body)
		}
		if got := w.received(t, scheme, "api.example.test", "/h").Header.Get("Authorization"); got != "Bearer "+secret {
			t.Errorf("%s: upstream got Authorization %q", scheme, got)
		}
		if scheme == "https" && resp.TLS.PeerCertificates[0].Issuer.CommonName != sb.ca.String() {
			t.Errorf("https with a header rule was not intercepted")
		}
		ev := sb.ev.wait(t, scheme+" request", func(e Event) bool {
			return e.Kind == EventRequest && e.Protocol == Protocol(scheme)
		})
		if len(ev.Secrets) != 1 || ev.Secrets[0] != "TOKEN" {
			t.Errorf("%s event secrets %v, want [TOKEN]", scheme, ev.Secrets)
		}
	}
	// Another host gets no header.
	sb.get("https://www.example.test/h")
	if got := w.received(t, "https", "www.example.test", "/h").Header.Get("Authorization"); got != "" {
		t.Errorf("www.example.test got Authorization %q", got)
	}
	// The echo of the secret is masked.
	resp, body := sb.get("https://api.example.test/echo-auth")
	if strings.Contains(body, secret) || strings.Contains(resp.Header.Get("X-Echo"), secret) {
		t.Errorf("response echoed the secret: %q %q", body, resp.Header.Get("X-Echo"))
	}
	assertNoSecret(t, sb, secret)
}

// TestHeaderRuleUnboundSecret: a header rule may not send a secret to a
// host it is not bound to.
func TestHeaderRuleUnboundSecret(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	secret := "unbound-secret-value"
	pol := rules()
	pol.Headers = []rung.HeaderRule{{Domain: "www.example.test", Header: "X-Key", Value: "{{secret:TOKEN}}"}}
	src := StaticSecrets{{Name: "TOKEN", Hosts: []string{"api.example.test"}, Value: secret}}
	sb := newSandbox(t, w, pol, func(c *Config) { c.Secrets = src })
	resp, body := sb.get("http://www.example.test/")
	if resp.StatusCode != 403 || !strings.Contains(body, "secret TOKEN is not bound to www.example.test") {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	assertNoSecret(t, sb, secret)
}

func TestPlaceholders(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	secret := "ghp_real/value+with&chars"
	ph := "RUNG_PLACEHOLDER_GITHUB_TOKEN_7f3a"
	src := StaticSecrets{{Name: "GITHUB_TOKEN", Hosts: []string{"*.example.test"}, Placeholder: ph, Value: secret}}
	sb := newSandbox(t, w, rules(), func(c *Config) { c.Secrets = src })
	for _, scheme := range []string{"http", "https"} {
		url := scheme + "://api.example.test/p?token=" + ph
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "token "+ph)
		resp, body := sb.do(req)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %q", url, resp.StatusCode, body)
		}
		info := w.received(t, scheme, "api.example.test", "/p")
		if got := info.Header.Get("Authorization"); got != "token "+secret {
			t.Errorf("%s: upstream Authorization %q", url, got)
		}
		if info.Query != "token=ghp_real%2Fvalue%2Bwith%26chars" {
			t.Errorf("%s: upstream query %q", url, info.Query)
		}
	}
	// To a host the secret is not bound to, the placeholder leaves as it is.
	req, _ := http.NewRequest("GET", "http://other.test/p?token="+ph, nil)
	req.Header.Set("Authorization", "token "+ph)
	sb.do(req)
	info := w.received(t, "http", "other.test", "/p")
	if info.Header.Get("Authorization") != "token "+ph || info.Query != "token="+ph {
		t.Errorf("unbound host got %q and %q, want the placeholder", info.Header.Get("Authorization"), info.Query)
	}
	ev := sb.ev.wait(t, "request to other.test", func(e Event) bool { return e.Kind == EventRequest && e.Host == "other.test" })
	if len(ev.Secrets) != 0 {
		t.Errorf("request to other.test used secrets %v", ev.Secrets)
	}
	// HTTPS to a host a secret is bound to is intercepted; to others not.
	resp, _ := sb.get("https://other.test/")
	if resp.TLS.PeerCertificates[0].Issuer.CommonName != w.upCA.String() {
		t.Error("other.test was intercepted")
	}
	assertNoSecret(t, sb, secret)
}

// assertNoSecret checks every event for a secret's value.
func assertNoSecret(t *testing.T, sb *sandbox, secret string) {
	t.Helper()
	// Close first so that every connection's event is in.
	sb.p.Close()
	b, _ := json.Marshal(sb.ev.all)
	if strings.Contains(string(b), secret) {
		t.Errorf("an event holds the secret: %s", b)
	}
}

// TestDenialNeverHoldsSecret: a request with a placeholder to a denied
// host, and a denied request to a bound host, answer without the value.
func TestDenialNeverHoldsSecret(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	secret := "value-that-must-not-appear"
	ph := "PH_TOKEN_1"
	src := StaticSecrets{{Name: "TOKEN", Hosts: []string{"api.example.test"}, Placeholder: ph, Value: secret}}
	pol := rules(rung.NetworkRule{Action: rung.RuleAllow, Domain: "api.example.test", Methods: []string{"GET"}})
	pol.Headers = []rung.HeaderRule{{Domain: "api.example.test", Header: "X-Key", Value: "{{secret:TOKEN}}"}}
	sb := newSandbox(t, w, pol, func(c *Config) { c.Secrets = src })
	for _, u := range []string{"http://api.example.test/" + ph, "https://api.example.test/" + ph, "https://www.example.test/" + ph} {
		req, _ := http.NewRequest("POST", u+"?q="+ph, strings.NewReader(ph))
		resp, body := sb.do(req)
		if resp.StatusCode != 403 {
			t.Errorf("POST %s = %d, want 403", u, resp.StatusCode)
		}
		if strings.Contains(body, secret) || strings.Contains(strings.Join(headerValues(resp.Header), " "), secret) {
			t.Errorf("denial of %s holds the secret: %q %v", u, body, resp.Header)
		}
	}
	assertNoSecret(t, sb, secret)
}

func headerValues(h http.Header) []string {
	var out []string
	for _, vs := range h {
		out = append(out, vs...)
	}
	return out
}

func TestSNIHostMismatch(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	pol := rules()
	pol.Headers = []rung.HeaderRule{{Domain: "*.example.test", Header: "X-Tag", Value: "v"}}
	sb := newSandbox(t, w, pol)
	c, err := sb.connect(netip.MustParseAddrPort("203.0.113.10:443"))
	if err != nil {
		t.Fatal(err)
	}
	tc := tlsClient(sb, c, "api.example.test")
	defer tc.Close()
	io.WriteString(tc, "GET / HTTP/1.1\r\nHost: other.test\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(string(body), `Host "other.test" does not match the TLS server name "api.example.test"`) {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if w.dialedAny("203.0.113.12") {
		t.Error("proxy dialed other.test")
	}
}

func TestRawTCP(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tests := []struct {
		name   string
		policy rung.NetworkPolicy
		lookup string // a name the program looks up first, "" for none
		dest   string
		ok     bool
	}{
		{"no rules", rules(), "", "203.0.113.20:7", true},
		{"by looked-up name", rules(allow("echo.example.test", "", "7")), "echo.example.test", "203.0.113.20:7", true},
		{"name needs the lookup", rules(allow("echo.example.test", "", "7")), "", "203.0.113.20:7", false},
		{"wrong port", rules(allow("echo.example.test", "", "7")), "echo.example.test", "203.0.113.20:22", false},
		{"by cidr and port", rules(allow("", "203.0.113.0/24", "22")), "", "203.0.113.20:22", true},
		{"denied cidr", rules(deny("", "203.0.113.20/32", "")), "", "203.0.113.20:7", false},
		{"loopback refused", rules(), "", "127.0.0.1:7", false},
		{"metadata refused", rules(), "", "169.254.169.254:80", false},
		{"private refused", rules(), "", "10.1.2.3:5432", false},
		{"private by explicit cidr", rules(allow("", "10.0.0.0/8", "5432")), "", "10.1.2.3:5432", true},
		{"private not by a name rule", rules(allow("db.internal.test", "", "")), "db.internal.test", "10.1.2.3:5432", false},
		{"private by name and cidr", rules(allow("db.internal.test", "", ""), allow("", "10.1.2.3/32", "")), "db.internal.test", "10.1.2.3:5432", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, w, tc.policy)
			if tc.lookup != "" {
				if _, err := sb.resolver().LookupNetIP(t.Context(), "ip4", tc.lookup); err != nil {
					t.Fatalf("lookup %s: %v", tc.lookup, err)
				}
			}
			c, err := sb.connect(netip.MustParseAddrPort(tc.dest))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			line, err := roundTrip(c, "\x00\x01ping\n")
			if tc.ok {
				if err != nil || line != "\x00\x01ping\n" {
					t.Fatalf("echo = %q, %v", line, err)
				}
				return
			}
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("denied connection read %q, %v; want a reset", line, err)
			}
			ev := sb.ev.wait(t, "denied connection", func(e Event) bool { return e.Kind == EventConnection })
			if ev.Verdict != VerdictDenied || ev.Protocol != ProtoTCP || !strings.HasPrefix(ev.Message, "rung: egress to ") {
				t.Errorf("event %+v", ev)
			}
		})
	}
}

// TestServerFirst: a protocol whose server speaks first still works: the
// proxy stops waiting for the client after PeekTimeout.
func TestServerFirst(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules(), func(c *Config) { c.PeekTimeout = 1 }) // 1ns: at once
	c, err := sb.connect(netip.MustParseAddrPort("203.0.113.20:25"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "220 greetings\r\n" {
		t.Fatalf("greeting %q, %v", line, err)
	}
}

// TestRebinding: an allowed name that resolves to a loopback or metadata
// address is refused, by HTTP, TLS and DNS alike, and never dialed.
func TestRebinding(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules(allow("*.example.test", "", "")))
	for _, u := range []string{"http://rebind.example.test/", "https://rebind.example.test/", "http://meta.example.test/latest/meta-data/"} {
		resp, body := sb.get(u)
		if resp.StatusCode != 403 || !strings.Contains(body, "refused") {
			t.Errorf("GET %s = %d %q, want 403 refused", u, resp.StatusCode, body)
		}
	}
	resp, body := sb.get("http://rebind.example.test/")
	if !strings.Contains(body, "127.0.0.1 is a loopback address") {
		t.Errorf("message %q does not say why", body)
	}
	_ = resp
	// The program's own connection to the address it was given is refused too.
	c, err := sb.connect(netip.MustParseAddrPort("127.0.0.1:80"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	r, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || r.StatusCode != 403 {
		t.Fatalf("HTTP to 127.0.0.1: %v %v", r, err)
	}
}

// TestProgramIgnoresProxyVariables: a program that looks a name up and
// connects to the address, with proxy variables set that it ignores, is
// still governed: the kernel's redirect, not the program, sends it to
// the proxy.
func TestProgramIgnoresProxyVariables(t *testing.T) {
	w := newWorld(t)
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	sb := newSandbox(t, w, rules(allow("api.example.test", "", "")))
	for name, want := range map[string]string{"api.example.test": "HTTP/1.1 200", "www.example.test": ""} {
		addrs, err := sb.resolver().LookupNetIP(t.Context(), "ip4", name)
		if want == "" {
			if err == nil {
				t.Errorf("%s resolved to %v; want NXDOMAIN", name, addrs)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		c, err := sb.connect(netip.AddrPortFrom(addrs[0], 80))
		if err != nil {
			t.Fatal(err)
		}
		line, err := roundTrip(c, "GET /x HTTP/1.1\r\nHost: "+name+"\r\nConnection: close\r\n\r\n")
		c.Close()
		if err != nil || !strings.HasPrefix(line, want) {
			t.Errorf("%s: %q, %v", name, line, err)
		}
	}
}

func TestUpgrade(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules(allow("api.example.test", "", "80")))
	c, err := sb.connect(netip.MustParseAddrPort("203.0.113.10:80"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: api.example.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	for _, msg := range []string{"hello\n", "again\n"} {
		io.WriteString(c, msg)
		line, err := br.ReadString('\n')
		if err != nil || line != "echo: "+msg {
			t.Fatalf("after upgrade: %q, %v", line, err)
		}
	}
	c.Close()
	ev := sb.ev.wait(t, "upgrade request", func(e Event) bool { return e.Kind == EventRequest })
	if ev.Status != 101 || ev.BytesUp < 12 || ev.BytesDown < 24 {
		t.Errorf("event %+v", ev)
	}
}

func TestCloseEndsConnections(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules())
	c, err := sb.connect(netip.MustParseAddrPort("203.0.113.20:7"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := roundTrip(c, "x\n"); err != nil {
		t.Fatal(err)
	}
	sb.p.Close()
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection open after Close")
	}
	sb.ev.wait(t, "connection event", func(e Event) bool { return e.Kind == EventConnection })
	if err := sb.p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOriginalDstWithoutRedirect(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Without conntrack's NAT there is no original destination; with it
	// loaded and no rule, it is the address itself.
	ap, err := OriginalDst(s.(*net.TCPConn))
	if err == nil && ap.String() != l.Addr().String() {
		t.Errorf("OriginalDst = %v, want an error or %s", ap, l.Addr())
	}
}

// TestConcurrentSwap runs requests of every kind while the policy flips,
// for the race detector: each answer is one policy's or the other's.
func TestConcurrentSwap(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	open := rules()
	open.Headers = []rung.HeaderRule{{Domain: "api.example.test", Header: "X-A", Value: "1"}}
	closed := rules(allow("echo.example.test", "", ""))
	sb := newSandbox(t, w, open)
	var wg sync.WaitGroup
	for _, u := range []string{"http://api.example.test/small", "https://api.example.test/small", "https://www.example.test/small"} {
		wg.Go(func() {
			c := sb.client()
			defer c.CloseIdleConnections()
			for range 20 {
				resp, err := c.Get(u)
				if err != nil {
					t.Errorf("GET %s: %v", u, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 && resp.StatusCode != 403 {
					t.Errorf("GET %s: %d", u, resp.StatusCode)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 40 {
			pol := open
			if i%2 == 0 {
				pol = closed
			}
			if err := sb.p.SetPolicy(pol); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
}

// TestForbidden: the caller's forbidden ranges (the daemon's address)
// are refused like loopback, unless a rule allows their CIDR.
func TestForbidden(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	daemon := func(c *Config) { c.Forbidden = []netip.Prefix{netip.MustParsePrefix("203.0.113.20/32")} }
	for _, tc := range []struct {
		policy rung.NetworkPolicy
		ok     bool
	}{{rules(), false}, {rules(allow("", "203.0.113.20/32", "7")), true}} {
		sb := newSandbox(t, w, tc.policy, daemon)
		c, err := sb.connect(netip.MustParseAddrPort("203.0.113.20:7"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = roundTrip(c, "x\n")
		c.Close()
		if (err == nil) != tc.ok {
			t.Errorf("policy %v: %v, want ok %v", tc.policy.Rules, err, tc.ok)
		}
	}
}

// TestUntrustedUpstream: an intercepted upstream whose certificate the
// daemon does not trust is a 502 that says so.
func TestUntrustedUpstream(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	pol := rules()
	pol.Headers = []rung.HeaderRule{{Domain: "api.example.test", Header: "X-A", Value: "1"}}
	sb := newSandbox(t, w, pol, func(c *Config) { c.RootCAs = x509.NewCertPool() })
	resp, body := sb.get("https://api.example.test/")
	if resp.StatusCode != 502 || !strings.Contains(body, "rung: egress to api.example.test failed: the server's certificate is not trusted") {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	ev := sb.ev.wait(t, "request", func(e Event) bool { return e.Kind == EventRequest })
	if ev.Verdict != VerdictFailed || ev.Status != 502 {
		t.Errorf("event %+v", ev)
	}
}

// TestPlainUpstream: plain HTTP keeps upstream connections alive, replaces
// one the server closed while it was idle, and copies a large body socket
// to socket without losing a byte or the sandbox's keep-alive.
func TestPlainUpstream(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules())
	c := sb.client()
	get := func(url string) []byte {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
		}
		return b
	}
	get("http://api.example.test/small")
	get("http://api.example.test/small")
	if n := w.dials("203.0.113.10:80"); n != 1 {
		t.Errorf("two requests dialed upstream %d times, want 1", n)
	}
	// The one-shot server closes after each response: the second request
	// goes out on a new connection.
	get("http://api.example.test:81/")
	get("http://api.example.test:81/")
	if n := w.dials("203.0.113.10:81"); n != 2 {
		t.Errorf("one-shot server dialed %d times, want 2", n)
	}
	size := spliceMin*4 + 12345
	for range 2 {
		b := get(fmt.Sprintf("http://api.example.test/bytes/%d", size))
		if len(b) != size || checkPattern(b) != -1 {
			t.Fatalf("got %d bytes, first wrong at %d", len(b), checkPattern(b))
		}
	}
	c.CloseIdleConnections()
	sb.p.Close()
	conns, bulk := 0, 0
	for _, e := range sb.ev.all {
		switch {
		case e.Kind == EventConnection && e.Port == 80:
			conns++
		case e.Kind == EventRequest && e.BytesDown == int64(size):
			bulk++
		}
	}
	if conns != 1 || bulk != 2 {
		t.Errorf("%d connections to port 80 and %d full bulk events, want 1 and 2: %s", conns, bulk, sb.ev.dump())
	}
}

// TestSandboxGivesUp: a request whose upstream never answers ends when the
// sandbox closes its connection, and is journaled.
func TestSandboxGivesUp(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sb := newSandbox(t, w, rules())
	c, err := sb.connect(netip.MustParseAddrPort("203.0.113.10:82"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n")
	w.waitDial(t, "203.0.113.10:82")
	c.Close()
	ev := sb.ev.wait(t, "abandoned request", func(e Event) bool { return e.Kind == EventRequest })
	if ev.Verdict != VerdictFailed || ev.Message != "rung: the sandbox closed the request" {
		t.Errorf("event %+v", ev)
	}
}
