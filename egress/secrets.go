package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"rung.dev/rung"
)

// Secret is a tenant's secret as the proxy uses it.
type Secret struct {
	Name string
	// Hosts are the names the secret may be sent to, exact or "*."
	// wildcard, as in rules.
	Hosts []string
	// Placeholder is what the sandbox's env holds instead of the value;
	// "" for none.
	Placeholder string
	// Value is the secret itself; empty in [SecretSource.Bindings].
	Value string
}

// String prints the secret without its value.
func (s Secret) String() string { return "secret " + s.Name + " [redacted]" }

// GoString prints the secret without its value.
func (s Secret) GoString() string { return s.String() }

// LogValue logs the secret without its value.
func (s Secret) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", s.Name), slog.String("value", "[redacted]"))
}

// boundTo reports whether the secret may be sent to host.
func (s Secret) boundTo(host string) bool {
	for _, h := range s.Hosts {
		if d, err := parseDomain(h); err == nil && d.match(host) {
			return true
		}
	}
	return false
}

// SecretSource is one tenant's secrets. The proxy asks for values only
// when it fills one in. Implementations must be safe for concurrent use
// and quick: they are called for every HTTP request.
type SecretSource interface {
	// Secret returns the named secret, value included, or an error
	// wrapping [rung.ErrNotFound].
	Secret(ctx context.Context, name string) (Secret, error)
	// Bindings returns the tenant's secrets that have hosts, without their
	// values: the proxy looks for their placeholders in requests to those
	// hosts, and intercepts TLS to them.
	Bindings(ctx context.Context) ([]Secret, error)
}

// StaticSecrets is a [SecretSource] over a fixed list, for tests and
// simple setups.
type StaticSecrets []Secret

// Secret implements [SecretSource].
func (s StaticSecrets) Secret(_ context.Context, name string) (Secret, error) {
	for _, x := range s {
		if x.Name == name {
			return x, nil
		}
	}
	return Secret{}, fmt.Errorf("secret %s: %w", name, rung.ErrNotFound)
}

// Bindings implements [SecretSource].
func (s StaticSecrets) Bindings(context.Context) ([]Secret, error) {
	out := make([]Secret, 0, len(s))
	for _, x := range s {
		if len(x.Hosts) > 0 {
			x.Value = ""
			out = append(out, x)
		}
	}
	return out, nil
}

// filled records what credential brokering did to one request.
type filled struct {
	names  []string // secrets used, by name
	values []string // their values, to mask in the response
}

func (f *filled) add(s Secret) {
	for _, n := range f.names {
		if n == s.Name {
			return
		}
	}
	f.names = append(f.names, s.Name)
	f.values = append(f.values, s.Value)
}

// errBroker is a request the proxy refuses because of its secrets; its
// message is for the sandbox and never holds a value.
type errBroker struct{ msg string }

func (e *errBroker) Error() string { return e.msg }

// broker fills r (the outgoing request to host) in place: the policy's
// header rules for host, and placeholders of secrets bound to host in the
// headers and the URL. Bodies are left as they are: rewriting them would
// mean buffering, recomputing lengths and breaking signatures. A
// placeholder in a request to a host its secret is not bound to leaves
// unchanged.
func (p *Proxy) broker(ctx context.Context, pol *Policy, host string, r *http.Request) (filled, error) {
	var f filled
	for _, h := range pol.headers {
		if !h.domain.match(host) {
			continue
		}
		v, err := p.fillRefs(ctx, host, h.value, &f)
		if err != nil {
			return f, err
		}
		r.Header.Set(h.header, v)
	}
	if p.cfg.Secrets == nil {
		return f, nil
	}
	bound, err := p.cfg.Secrets.Bindings(ctx)
	if err != nil {
		return f, &errBroker{"rung: secrets are unavailable; try again"}
	}
	for _, b := range bound {
		if b.Placeholder == "" || !b.boundTo(host) || !requestHas(r, b.Placeholder) {
			continue
		}
		s, err := p.cfg.Secrets.Secret(ctx, b.Name)
		if err != nil {
			return f, &errBroker{fmt.Sprintf("rung: secret %s is unavailable", b.Name)}
		}
		replaceInRequest(r, s.Placeholder, s.Value)
		f.add(s)
	}
	return f, nil
}

// fillRefs replaces each {{secret:NAME}} in v. A secret must exist and be
// bound to host.
func (p *Proxy) fillRefs(ctx context.Context, host, v string, f *filled) (string, error) {
	var err error
	out := secretRef.ReplaceAllStringFunc(v, func(ref string) string {
		if err != nil {
			return ""
		}
		name := secretRef.FindStringSubmatch(ref)[1]
		if p.cfg.Secrets == nil {
			err = &errBroker{fmt.Sprintf("rung: a header rule for %s names secret %s, and this sandbox has no secrets", host, name)}
			return ""
		}
		s, e := p.cfg.Secrets.Secret(ctx, name)
		switch {
		case errors.Is(e, rung.ErrNotFound):
			err = &errBroker{fmt.Sprintf("rung: a header rule for %s names secret %s, which does not exist", host, name)}
		case e != nil:
			err = &errBroker{fmt.Sprintf("rung: secret %s is unavailable", name)}
		case !s.boundTo(host):
			err = &errBroker{fmt.Sprintf("rung: secret %s is not bound to %s", name, host)}
		default:
			f.add(s)
			return s.Value
		}
		return ""
	})
	return out, err
}

// requestHas reports whether the placeholder appears in r's headers or URL.
func requestHas(r *http.Request, ph string) bool {
	if strings.Contains(r.URL.Path, ph) || strings.Contains(r.URL.RawPath, ph) || strings.Contains(r.URL.RawQuery, ph) {
		return true
	}
	for _, vs := range r.Header {
		for _, v := range vs {
			if strings.Contains(v, ph) {
				return true
			}
		}
	}
	return false
}

// replaceInRequest puts value for placeholder in r's headers, path and
// query, escaped for where it lands.
func replaceInRequest(r *http.Request, ph, value string) {
	for k, vs := range r.Header {
		for i, v := range vs {
			if strings.Contains(v, ph) {
				r.Header[k][i] = strings.ReplaceAll(v, ph, value)
			}
		}
	}
	if strings.Contains(r.URL.Path, ph) || strings.Contains(r.URL.RawPath, ph) {
		r.URL.Path = strings.ReplaceAll(r.URL.Path, ph, value)
		if r.URL.RawPath != "" {
			r.URL.RawPath = strings.ReplaceAll(r.URL.RawPath, ph, url.PathEscape(value))
		}
	}
	if strings.Contains(r.URL.RawQuery, ph) {
		r.URL.RawQuery = strings.ReplaceAll(r.URL.RawQuery, ph, url.QueryEscape(value))
	}
}

// maskHeader replaces each of values in h with asterisks of its length.
func maskHeader(h http.Header, values []string) {
	for k, vs := range h {
		for i, v := range vs {
			for _, s := range values {
				if s != "" && strings.Contains(v, s) {
					v = strings.ReplaceAll(v, s, strings.Repeat("*", len(s)))
				}
			}
			h[k][i] = v
		}
	}
}

// maskReader masks secret values in a stream with asterisks of the same
// length, so that a Content-Length stays right. It holds back the last
// longest-1 bytes of each read in case a value spans two reads.
type maskReader struct {
	r       io.ReadCloser
	values  [][]byte
	longest int
	tmp     []byte
	hold    []byte // read, not yet released: may begin a value
	out     []byte // masked, ready to return
	err     error  // from r, returned once hold and out are empty
}

func newMaskReader(r io.ReadCloser, values []string) *maskReader {
	m := &maskReader{r: r, tmp: make([]byte, 32<<10)}
	for _, v := range values {
		if v != "" {
			m.values = append(m.values, []byte(v))
			m.longest = max(m.longest, len(v))
		}
	}
	return m
}

func (m *maskReader) Read(p []byte) (int, error) {
	for len(m.out) == 0 {
		if m.err != nil {
			if len(m.hold) > 0 {
				m.out, m.hold = m.hold, nil
				break
			}
			return 0, m.err
		}
		n, err := m.r.Read(m.tmp)
		data := append(m.hold, m.tmp[:n]...)
		for _, v := range m.values {
			for i := 0; ; {
				j := bytes.Index(data[i:], v)
				if j < 0 {
					break
				}
				for k := range v {
					data[i+j+k] = '*'
				}
				i += j + len(v)
			}
		}
		keep := m.longest - 1
		if err != nil {
			keep = 0
			m.err = err
		}
		if len(data) > keep {
			m.out = data[:len(data)-keep]
			m.hold = append([]byte(nil), data[len(data)-keep:]...)
		} else {
			m.hold = data
		}
	}
	n := copy(p, m.out)
	m.out = m.out[n:]
	return n, nil
}

func (m *maskReader) Close() error { return m.r.Close() }
