package e2b

import (
	"strings"
	"testing"

	"rung.dev/rung"
)

// TestTrafficToken: a traffic access token opens the one sandbox it was
// made for, as its tenant; no edit of it, no other sandbox's or tenant's,
// no envd access token and no token of another server key passes.
func TestTrafficToken(t *testing.T) {
	s := New(Config{Key: []byte("server key one")})
	defer s.Close()
	other := New(Config{Key: []byte("server key two")})
	defer other.Close()
	id, id2 := rung.SandboxID("sbx_aaaaaaaaaaaaaaaaaaaaaaaaaa"), rung.SandboxID("sbx_bbbbbbbbbbbbbbbbbbbbbbbbbb")
	tok := s.trafficToken("acme", id)
	if tenant, ok := s.TrafficTenant(tok, id); !ok || tenant != "acme" {
		t.Fatalf("TrafficTenant(own token) = %q, %v", tenant, ok)
	}
	i := len(trafficPrefix) + 63 // the MAC's last hex digit
	digit := byte('0')
	if tok[i] == '0' {
		digit = '1'
	}
	flipped := tok[:i] + string(digit) + tok[i+1:]
	for name, bad := range map[string]struct {
		tok string
		id  rung.SandboxID
	}{
		"another sandbox":        {tok, id2},
		"one hex digit changed":  {flipped, id},
		"another tenant named":   {strings.TrimSuffix(tok, "acme") + "evil", id},
		"the envd access token":  {s.accessToken("acme", id), id},
		"another server's token": {other.trafficToken("acme", id), id},
		"no prefix":              {strings.TrimPrefix(tok, trafficPrefix), id},
		"empty":                  {"", id},
		"prefix alone":           {trafficPrefix, id},
		"too long":               {tok + strings.Repeat("x", 300), id},
	} {
		if tenant, ok := s.TrafficTenant(bad.tok, bad.id); ok {
			t.Errorf("%s: passed, as %q", name, tenant)
		}
	}
}
