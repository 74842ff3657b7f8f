package e2b

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// allTraffic is E2B's ALL_TRAFFIC: a denyOut holding it blocks everything
// allowOut does not allow.
const allTraffic = "0.0.0.0/0"

// networkIn is the part of E2B's network configuration (create's
// "network", the body of PUT /sandboxes/{id}/network) rung applies.
type networkIn struct {
	AllowOut []string `json:"allowOut"`
	DenyOut  []string `json:"denyOut"`
	// Rules (header transforms) and EgressProxy are E2B features rung
	// serves differently (its own network headers and secrets); a request
	// that sets them is refused rather than half applied.
	Rules       map[string]json.RawMessage `json:"rules"`
	EgressProxy json.RawMessage            `json:"egressProxy"`
	// AllowInternetAccess is the update body's allow_internet_access.
	AllowInternetAccess *bool `json:"allow_internet_access"`
	// AllowPublicTraffic false at create gives the sandbox a traffic
	// access token (secure.go). Its ports need a credential either way:
	// rung serves no port without one (docs/API.md).
	AllowPublicTraffic *bool `json:"allowPublicTraffic"`
	// MaskRequestHost would be the Host header of requests to the
	// sandbox's ports; rung's proxy sends Host: localhost:{port}, so a
	// mask is refused rather than ignored.
	MaskRequestHost *string `json:"maskRequestHost"`
}

// policyOf maps E2B's egress settings onto rung's network policy (see
// docs/API.md, "E2B compatibility"). E2B's rule is that an allowed
// destination wins over a denied one, and that denyOut names addresses
// only; rung's is that a deny rule wins and that, once any allow rule
// exists, everything else is denied. So:
//   - allowInternet false, or denyOut holding 0.0.0.0/0: only allowOut is
//     allowed (rung allow rules; none at all is network mode none);
//   - otherwise denyOut becomes deny rules, and an allowOut entry inside a
//     denied range, which rung could not let through, is invalid_argument;
//     allowOut entries outside every denied range are allowed anyway.
//
// It returns nil when nothing was asked, leaving rung's default.
func policyOf(allowInternet *bool, n *networkIn) (*rung.NetworkPolicy, error) {
	if n == nil {
		n = &networkIn{}
	}
	if len(n.Rules) > 0 {
		return nil, rung.Errorf(rung.ErrInvalid, "network rules (header transforms) are not served by rung's E2B API: use rung's network headers and secrets")
	}
	if len(n.EgressProxy) > 0 && string(n.EgressProxy) != "null" {
		return nil, rung.Errorf(rung.ErrInvalid, "egressProxy is not served by rung: its own egress proxy polices the sandbox")
	}
	if n.MaskRequestHost != nil && *n.MaskRequestHost != "" {
		return nil, rung.Errorf(rung.ErrInvalid, "maskRequestHost is not served by rung: requests reach a sandbox's port with Host: localhost:{port}")
	}
	if allowInternet == nil && n.AllowOut == nil && n.DenyOut == nil {
		return nil, nil
	}
	blockAll := allowInternet != nil && !*allowInternet
	var denied []netip.Prefix
	for _, d := range n.DenyOut {
		if d == allTraffic {
			blockAll = true
			continue
		}
		p, ok := prefixOf(d)
		if !ok {
			return nil, rung.Errorf(rung.ErrInvalid, "invalid denied CIDR %q: denyOut takes IP addresses and CIDR blocks", clip(d))
		}
		denied = append(denied, p)
	}
	pol := &rung.NetworkPolicy{Mode: rung.NetworkEgress}
	for _, a := range n.AllowOut {
		p, isAddr := prefixOf(a)
		switch {
		case !isAddr && !blockAll:
			return nil, rung.Errorf(rung.ErrInvalid, "allowOut holds the domain %q: domains need denyOut to include 0.0.0.0/0 (ALL_TRAFFIC)", clip(a))
		case !isAddr:
			pol.Rules = append(pol.Rules, rung.NetworkRule{Action: rung.RuleAllow, Domain: strings.ToLower(a)})
		case blockAll:
			pol.Rules = append(pol.Rules, rung.NetworkRule{Action: rung.RuleAllow, CIDR: p.String()})
		default:
			for _, d := range denied {
				if d.Overlaps(p) {
					return nil, rung.Errorf(rung.ErrInvalid, "allowOut %q lies in denyOut %q: rung's deny rules win over its allow rules, so it cannot let it through", clip(a), d)
				}
			}
		}
	}
	if blockAll {
		if len(pol.Rules) == 0 {
			return &rung.NetworkPolicy{Mode: rung.NetworkNone}, nil
		}
		return pol, nil
	}
	for _, d := range denied {
		pol.Rules = append(pol.Rules, rung.NetworkRule{Action: rung.RuleDeny, CIDR: d.String()})
	}
	return pol, nil
}

// prefixOf parses an IP address (as its /32 or /128) or a CIDR block.
func prefixOf(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// updateNetwork is PUT /sandboxes/{id}/network: the body replaces the
// sandbox's egress settings (a field left out is cleared, as on E2B, so
// an empty body allows the internet again), applied to its running
// container at once.
func (s *Server) updateNetwork(w http.ResponseWriter, r *http.Request, c caller) error {
	var in networkIn
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	pol, err := policyOf(in.AllowInternetAccess, &in)
	if err != nil {
		return err
	}
	if pol == nil {
		pol = &rung.NetworkPolicy{Mode: rung.NetworkEgress}
	}
	if _, err := s.ctrl.Update(r.Context(), c.tenant, r.PathValue("id"), controller.UpdateRequest{Network: pol}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
