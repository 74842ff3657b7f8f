package e2b

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"rung.dev/rung"
)

func TestPolicyOf(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	allow := func(domain, cidr string) rung.NetworkRule {
		return rung.NetworkRule{Action: rung.RuleAllow, Domain: domain, CIDR: cidr}
	}
	deny := func(cidr string) rung.NetworkRule { return rung.NetworkRule{Action: rung.RuleDeny, CIDR: cidr} }
	egress := func(rules ...rung.NetworkRule) *rung.NetworkPolicy {
		return &rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: rules}
	}
	for _, tc := range []struct {
		name     string
		internet *bool
		n        *networkIn
		want     *rung.NetworkPolicy
		err      bool
	}{
		{name: "nothing asked", want: nil},
		{name: "internet", internet: &yes, want: egress()},
		{name: "no internet", internet: &no, want: &rung.NetworkPolicy{Mode: rung.NetworkNone}},
		{name: "no internet but some", internet: &no, n: &networkIn{AllowOut: []string{"api.example.com", "1.2.3.4"}},
			want: egress(allow("api.example.com", ""), allow("", "1.2.3.4/32"))},
		{name: "deny all but some", n: &networkIn{AllowOut: []string{"*.Example.com", "10.0.0.0/8"}, DenyOut: []string{allTraffic}},
			want: egress(allow("*.example.com", ""), allow("", "10.0.0.0/8"))},
		{name: "deny all", n: &networkIn{DenyOut: []string{allTraffic}}, want: &rung.NetworkPolicy{Mode: rung.NetworkNone}},
		{name: "deny some", n: &networkIn{DenyOut: []string{"8.8.8.8", "192.0.2.0/24"}}, want: egress(deny("8.8.8.8/32"), deny("192.0.2.0/24"))},
		{name: "allow outside the denied", n: &networkIn{AllowOut: []string{"1.1.1.1"}, DenyOut: []string{"8.8.8.0/24"}}, want: egress(deny("8.8.8.0/24"))},
		{name: "allow alone", n: &networkIn{AllowOut: []string{"1.1.1.1"}}, want: egress()},
		{name: "allow inside the denied", n: &networkIn{AllowOut: []string{"8.8.8.8"}, DenyOut: []string{"8.8.8.0/24"}}, err: true},
		{name: "domain without deny all", n: &networkIn{AllowOut: []string{"example.com"}}, err: true},
		{name: "domain denied", n: &networkIn{DenyOut: []string{"example.com"}}, err: true},
		{name: "transform rules", n: &networkIn{Rules: map[string]json.RawMessage{"a.com": json.RawMessage(`[]`)}}, err: true},
		{name: "egress proxy", n: &networkIn{EgressProxy: []byte(`{"address":"x"}`)}, err: true},
		{name: "host mask", n: &networkIn{MaskRequestHost: ptr("${PORT}-app.example.com")}, err: true},
		{name: "empty host mask", n: &networkIn{MaskRequestHost: ptr("")}, want: nil},
		{name: "private traffic alone", n: &networkIn{AllowPublicTraffic: &no}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := policyOf(tc.internet, tc.n)
			if tc.err {
				if !errors.Is(err, rung.ErrInvalid) {
					t.Errorf("policyOf = %v, %v; want invalid_argument", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("policyOf (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
