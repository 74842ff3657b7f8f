package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"rung.dev/rung"
)

// DefaultSizePolicy is the size policy of a tenant that no configuration
// names. It allows every preset (the largest, standard-4, is 4 vCPU,
// 12 GiB, 20 GB; the memory per vCPU of the presets runs from 3 GiB
// (standard-4) to 8 GiB (standard-1)) with headroom for custom sizes, and
// refuses sizes no sandbox on one host should get. 8 GiB per vCPU is the
// usual cloud ceiling (AWS Fargate, Cloudflare's standard-1); 128 MiB per
// vCPU only refuses many CPUs starved of memory, and keeps small custom
// sizes such as 0.5 vCPU with 128 MiB possible.
var DefaultSizePolicy = rung.SizePolicy{
	MaxMilliCPU:      8000,
	MaxMemoryBytes:   32 << 30,
	MaxDiskBytes:     100 << 30,
	MinMemoryPerVCPU: 128 << 20,
	MaxMemoryPerVCPU: 8 << 30,
}

// SizePolicies is every tenant's size policy (`rung serve` reads it from
// <data>/sizes.json with [ParseSizePolicies]). The zero value gives every
// tenant [DefaultSizePolicy].
type SizePolicies struct {
	// Tenants maps a tenant to its policy; "*" is the policy of tenants
	// not named, and without "*" they get DefaultSizePolicy. Each entry
	// is complete: a zero field means no bound.
	Tenants map[rung.TenantID]rung.SizePolicy
}

// For returns tenant's policy.
func (p SizePolicies) For(tenant rung.TenantID) rung.SizePolicy {
	if sp, ok := p.Tenants[tenant]; ok {
		return sp
	}
	if sp, ok := p.Tenants["*"]; ok {
		return sp
	}
	return DefaultSizePolicy
}

// policyFields are the keys of one tenant's entry in sizes.json.
var policyFields = []string{"max_milli_cpu", "max_memory_bytes", "max_disk_bytes", "min_memory_per_vcpu_bytes", "max_memory_per_vcpu_bytes"}

func policyField(p *rung.SizePolicy, name string) *int64 {
	switch name {
	case "max_milli_cpu":
		return &p.MaxMilliCPU
	case "max_memory_bytes":
		return &p.MaxMemoryBytes
	case "max_disk_bytes":
		return &p.MaxDiskBytes
	case "min_memory_per_vcpu_bytes":
		return &p.MinMemoryPerVCPU
	case "max_memory_per_vcpu_bytes":
		return &p.MaxMemoryPerVCPU
	}
	return nil
}

// ParseSizePolicies reads a size policy file:
//
//	{"tenants": {
//	  "*":    {"max_milli_cpu": 4000, "max_memory_bytes": "16GiB"},
//	  "acme": {"max_milli_cpu": 8000, "max_memory_bytes": "32GiB", "max_disk_bytes": "50GiB",
//	           "min_memory_per_vcpu_bytes": "1GiB", "max_memory_per_vcpu_bytes": "8GiB"}}}
//
// max_milli_cpu is an integer; the byte fields are an integer or a string
// of an integer and a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB). Every
// value must be positive. A field left out is taken from "*", and "*"'s
// from [DefaultSizePolicy]. An error names the field, such as
// `tenants["acme"].max_memory_bytes: ...`.
func ParseSizePolicies(b []byte) (SizePolicies, error) {
	var top map[string]json.RawMessage
	if err := strictJSON(b, &top); err != nil {
		return SizePolicies{}, err
	}
	for k := range top {
		if k != "tenants" {
			return SizePolicies{}, fmt.Errorf("unknown field %q (want \"tenants\")", k)
		}
	}
	var raw map[string]json.RawMessage
	if err := strictJSON(top["tenants"], &raw); err != nil {
		return SizePolicies{}, fmt.Errorf("tenants: %w", err)
	}
	parse := func(name string, base rung.SizePolicy) (rung.SizePolicy, error) {
		p := base
		entry := map[string]json.RawMessage{}
		if b, ok := raw[name]; ok {
			if err := strictJSON(b, &entry); err != nil {
				return p, fmt.Errorf("tenants[%q]: %w", name, err)
			}
		}
		for _, f := range slices.Sorted(maps.Keys(entry)) {
			dst := policyField(&p, f)
			if dst == nil {
				return p, fmt.Errorf("tenants[%q]: unknown field %q (want one of %s)", name, f, strings.Join(policyFields, ", "))
			}
			v, err := parsePolicyValue(f, entry[f])
			if err != nil {
				return p, fmt.Errorf("tenants[%q].%s: %w", name, f, err)
			}
			*dst = v
		}
		if p.MinMemoryPerVCPU > p.MaxMemoryPerVCPU {
			return p, fmt.Errorf("tenants[%q]: min_memory_per_vcpu_bytes %d is above max_memory_per_vcpu_bytes %d", name, p.MinMemoryPerVCPU, p.MaxMemoryPerVCPU)
		}
		return p, nil
	}
	def, err := parse("*", DefaultSizePolicy)
	if err != nil {
		return SizePolicies{}, err
	}
	out := SizePolicies{Tenants: map[rung.TenantID]rung.SizePolicy{"*": def}}
	for name := range raw {
		if name == "*" {
			continue
		}
		if !rung.ValidName(name) {
			return SizePolicies{}, fmt.Errorf("tenants: invalid tenant name %q", name)
		}
		p, err := parse(name, def)
		if err != nil {
			return SizePolicies{}, err
		}
		out.Tenants[rung.TenantID(name)] = p
	}
	return out, nil
}

// strictJSON decodes b into v, refusing a missing value (null, or
// nothing) and trailing data.
func strictJSON(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 || string(bytes.TrimSpace(b)) == "null" {
		return fmt.Errorf("missing value")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}

var byteUnits = map[string]int64{
	"": 1, "B": 1,
	"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
}

// parsePolicyValue reads one field's value: a positive integer, or for
// a byte field also a string such as "8GiB".
func parsePolicyValue(field string, raw json.RawMessage) (int64, error) {
	limit, unitsOK := int64(rung.MaxSizeBytes), true
	if field == "max_milli_cpu" {
		limit, unitsOK = rung.MaxMilliCPU, false
	}
	want := "a positive integer"
	if unitsOK {
		want = `a positive integer of bytes or a string such as "512MiB" or "8GiB"`
	}
	var n int64
	var s string
	switch {
	case json.Unmarshal(raw, &n) == nil:
	case unitsOK && json.Unmarshal(raw, &s) == nil:
		digits := strings.TrimSpace(s)
		i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' })
		unit := ""
		if i >= 0 {
			digits, unit = digits[:i], strings.TrimSpace(digits[i:])
		}
		mul, ok := byteUnits[unit]
		v, err := strconv.ParseInt(digits, 10, 64)
		if !ok || err != nil {
			return 0, fmt.Errorf("got %s, want %s", raw, want)
		}
		if v > limit/mul {
			return 0, fmt.Errorf("%s is out of range (at most %d bytes)", raw, limit)
		}
		n = v * mul
	default:
		return 0, fmt.Errorf("got %s, want %s", raw, want)
	}
	if n <= 0 {
		return 0, fmt.Errorf("got %s, want %s", raw, want)
	}
	if n > limit {
		return 0, fmt.Errorf("%s is out of range (at most %d)", raw, limit)
	}
	return n, nil
}
