package networks

import (
	"bytes"
	"encoding/json"
	"fmt"

	"rung.dev/rung"
	"rung.dev/rung/egress"
)

// TenantPolicy is what a server's configuration says of one tenant's
// sandboxes' networks (<data>/network.json): whether they may use mode
// open, rules and header rules that go with every sandbox's own, and
// limits for the fields a sandbox leaves zero.
type TenantPolicy struct {
	Open    bool               `json:"open,omitempty"`
	Rules   []rung.NetworkRule `json:"rules,omitempty"`
	Headers []rung.HeaderRule  `json:"headers,omitempty"`
	Limits  rung.NetworkLimits `json:"limits,omitzero"`
}

// TenantPolicies are the tenants' network policies; "*" is every tenant
// without an entry of its own.
type TenantPolicies struct {
	Tenants map[rung.TenantID]TenantPolicy `json:"tenants"`
}

// DefaultLimits are the limits of a sandbox whose policy and tenant
// leave them zero: enough connections for a package manager's parallel
// downloads, not enough to exhaust the daemon's descriptors.
var DefaultLimits = rung.NetworkLimits{MaxConnections: 1024}

// ParseTenantPolicies reads network.json: unknown fields and invalid
// rules are errors naming them.
func ParseTenantPolicies(b []byte) (TenantPolicies, error) {
	var p TenantPolicies
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return TenantPolicies{}, err
	}
	for name, tp := range p.Tenants {
		if name != "*" && !rung.ValidName(string(name)) {
			return TenantPolicies{}, fmt.Errorf("tenant %q: invalid name", name)
		}
		if err := egress.Validate(rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: tp.Rules, Headers: tp.Headers, Limits: tp.Limits}); err != nil {
			return TenantPolicies{}, fmt.Errorf("tenant %s: %w", name, err)
		}
	}
	return p, nil
}

// of returns tenant's policy: its own entry, else "*"'s, else none.
func (ps TenantPolicies) of(tenant rung.TenantID) TenantPolicy {
	if tp, ok := ps.Tenants[tenant]; ok {
		return tp
	}
	return ps.Tenants["*"]
}

// effective is the policy a sandbox of tenant runs under: the tenant's
// rules and header rules first, then the sandbox's (a deny from either
// wins; an allow from either allows), and each limit from the sandbox,
// else the tenant, else DefaultLimits.
func (ps TenantPolicies) effective(tenant rung.TenantID, p rung.NetworkPolicy) rung.NetworkPolicy {
	tp := ps.of(tenant)
	out := p
	out.Rules = append(append([]rung.NetworkRule{}, tp.Rules...), p.Rules...)
	out.Headers = append(append([]rung.HeaderRule{}, tp.Headers...), p.Headers...)
	pick := func(vals ...int64) int64 {
		for _, v := range vals {
			if v != 0 {
				return v
			}
		}
		return 0
	}
	out.Limits = rung.NetworkLimits{
		MaxConnections:    int(pick(int64(p.Limits.MaxConnections), int64(tp.Limits.MaxConnections), int64(DefaultLimits.MaxConnections))),
		RequestsPerSecond: int(pick(int64(p.Limits.RequestsPerSecond), int64(tp.Limits.RequestsPerSecond), int64(DefaultLimits.RequestsPerSecond))),
		BytesPerSecond:    pick(p.Limits.BytesPerSecond, tp.Limits.BytesPerSecond, DefaultLimits.BytesPerSecond),
	}
	return out
}
