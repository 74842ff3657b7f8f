package controller

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"rung.dev/rung"
)

// SnapshotPolicy is how long a tenant's snapshots are kept and how many
// it may hold.
type SnapshotPolicy struct {
	// Retention is how long a snapshot lives after it is taken, and
	// again after each restore or fork from it, unless it was taken with
	// a TTL of its own or is pinned.
	Retention time.Duration
	// MaxSnapshots caps how many snapshots the tenant holds; 0: no cap.
	MaxSnapshots int
	// MaxBytes caps the sum of its snapshots' ExclusiveBytes; 0: no cap.
	MaxBytes int64
}

// DefaultSnapshotPolicy is the policy of a tenant no configuration names:
// 30 days of retention (as Cloudflare's and Vercel's snapshots), at most
// 1,000 snapshots, no byte cap beyond the pool's.
var DefaultSnapshotPolicy = SnapshotPolicy{Retention: 30 * 24 * time.Hour, MaxSnapshots: 1000}

// SnapshotPolicies is every tenant's snapshot policy (`rung serve` reads
// it from <data>/snapshots.json with [ParseSnapshotPolicies]). The zero
// value gives every tenant [DefaultSnapshotPolicy].
type SnapshotPolicies struct {
	// Tenants maps a tenant to its policy; "*" is the policy of tenants
	// not named.
	Tenants map[rung.TenantID]SnapshotPolicy
}

// For returns tenant's policy.
func (p SnapshotPolicies) For(tenant rung.TenantID) SnapshotPolicy {
	if sp, ok := p.Tenants[tenant]; ok {
		return sp
	}
	if sp, ok := p.Tenants["*"]; ok {
		return sp
	}
	return DefaultSnapshotPolicy
}

// ParseSnapshotPolicies reads a snapshot policy file:
//
//	{"tenants": {
//	  "*":    {"retention": "168h"},
//	  "acme": {"retention": "2160h", "max_snapshots": 5000, "max_bytes": "500GiB"}}}
//
// retention is a Go duration of at least a minute; max_snapshots a
// positive integer; max_bytes as in sizes.json (an integer, or a string
// such as "50GiB"). A field left out is taken from "*", and "*"'s from
// [DefaultSnapshotPolicy]. An error names the field.
func ParseSnapshotPolicies(b []byte) (SnapshotPolicies, error) {
	var top map[string]json.RawMessage
	if err := strictJSON(b, &top); err != nil {
		return SnapshotPolicies{}, err
	}
	for k := range top {
		if k != "tenants" {
			return SnapshotPolicies{}, fmt.Errorf("unknown field %q (want \"tenants\")", k)
		}
	}
	var raw map[string]json.RawMessage
	if err := strictJSON(top["tenants"], &raw); err != nil {
		return SnapshotPolicies{}, fmt.Errorf("tenants: %w", err)
	}
	parse := func(name string, p SnapshotPolicy) (SnapshotPolicy, error) {
		entry := map[string]json.RawMessage{}
		if b, ok := raw[name]; ok {
			if err := strictJSON(b, &entry); err != nil {
				return p, fmt.Errorf("tenants[%q]: %w", name, err)
			}
		}
		for _, f := range slices.Sorted(maps.Keys(entry)) {
			var err error
			switch f {
			case "retention":
				var s string
				if err = json.Unmarshal(entry[f], &s); err == nil {
					p.Retention, err = time.ParseDuration(s)
				}
				if err == nil && p.Retention < time.Minute {
					err = fmt.Errorf("%s is less than a minute", s)
				}
			case "max_snapshots":
				if err = json.Unmarshal(entry[f], &p.MaxSnapshots); err == nil && p.MaxSnapshots <= 0 {
					err = fmt.Errorf("got %d, want a positive integer", p.MaxSnapshots)
				}
			case "max_bytes":
				p.MaxBytes, err = parsePolicyValue(f, entry[f])
			default:
				return p, fmt.Errorf("tenants[%q]: unknown field %q (want retention, max_snapshots or max_bytes)", name, f)
			}
			if err != nil {
				return p, fmt.Errorf("tenants[%q].%s: %w", name, f, err)
			}
		}
		return p, nil
	}
	def, err := parse("*", DefaultSnapshotPolicy)
	if err != nil {
		return SnapshotPolicies{}, err
	}
	out := SnapshotPolicies{Tenants: map[rung.TenantID]SnapshotPolicy{"*": def}}
	for name := range raw {
		if name == "*" {
			continue
		}
		if !rung.ValidName(name) {
			return SnapshotPolicies{}, fmt.Errorf("tenants: invalid tenant name %q", name)
		}
		if out.Tenants[rung.TenantID(name)], err = parse(name, def); err != nil {
			return SnapshotPolicies{}, err
		}
	}
	return out, nil
}
