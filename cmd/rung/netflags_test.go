package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"rung.dev/rung"
)

// The CLI's network flags make the policy the API takes.
func TestNetFlags(t *testing.T) {
	f := netFlags{allow: []string{"registry.npmjs.org:443", "*.github.com", "1.2.3.4", "10.0.0.0/8:5432"}, deny: []string{"evil.example.com"},
		header: []string{"api.github.com:Authorization=Bearer {{secret:GH}}"}}
	p, err := f.policy()
	if err != nil {
		t.Fatal(err)
	}
	want := rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: []rung.NetworkRule{
		{Action: rung.RuleAllow, Domain: "registry.npmjs.org", Ports: "443"},
		{Action: rung.RuleAllow, Domain: "*.github.com"},
		{Action: rung.RuleAllow, CIDR: "1.2.3.4/32"},
		{Action: rung.RuleAllow, CIDR: "10.0.0.0/8", Ports: "5432"},
		{Action: rung.RuleDeny, Domain: "evil.example.com"},
	}, Headers: []rung.HeaderRule{{Domain: "api.github.com", Header: "Authorization", Value: "Bearer {{secret:GH}}"}}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("policy (-want +got):\n%s", diff)
	}
	if _, err := (&netFlags{header: []string{"no-colon"}}).policy(); err == nil {
		t.Error("a malformed --header was taken")
	}
	if p, _ := (&netFlags{}).policy(); p.Mode != "" || p.Rules != nil {
		t.Errorf("no flags: %+v, want the zero policy", p)
	}
}
