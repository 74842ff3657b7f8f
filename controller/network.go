package controller

import (
	"context"
	"time"

	"rung.dev/rung"
)

// NetworkTier gives sandboxes' containers the network their policies
// say: none (loopback only), egress (everything through rung's proxy and
// DNS, by the policy's rules) or open. Package networks implements it;
// cmd/rung wires it through [Config].Network. Without one, only mode
// none exists. Implementations are safe for concurrent use.
type NetworkTier interface {
	// Check validates p for tenant: its rules, header rules and limits,
	// and whether tenant may use its mode. rung.ErrInvalid names what is
	// wrong; rung.ErrPermission a mode the tenant may not use.
	Check(tenant rung.TenantID, p rung.NetworkPolicy) error
	// Apply makes the network of sb's running container what sb.Network
	// says, at once and without restarting it; a sandbox without a
	// running container gets it at its next start.
	Apply(ctx context.Context, sb rung.Sandbox) error
	// Env is what every command of sb gets in its environment, in both
	// tiers (where the sandbox's certificate authority is for the tools
	// that do not read the system's store), or nil.
	Env(sb rung.Sandbox) map[string]string
	// Forget: sandbox id is deleted; what the tier kept for it (its
	// certificate authority) goes.
	Forget(id rung.SandboxID)
}

// NetworkEvents is what a network tier reports to the controller, which
// journals it. The tier calls it from its own goroutines.
type NetworkEvents struct {
	// Egress: one outbound connection or request of sandbox id ended, or
	// was denied.
	Egress func(id rung.SandboxID, typ rung.EntryType, e Egress)
	// Secret opens tenant's secret name for the egress proxy (value,
	// hosts, placeholder); Secrets lists tenant's secrets without values.
	// What they return must reach neither a sandbox, a log nor the
	// journal.
	Secret  func(ctx context.Context, tenant rung.TenantID, name string) ([]byte, rung.Secret, error)
	Secrets func(ctx context.Context, tenant rung.TenantID) ([]rung.Secret, error)
}

// Egress is the data of the egress entries ([rung.EntryEgressConnection],
// [rung.EntryEgressRequest], [rung.EntryEgressDenied]). A secret is named,
// never shown.
type Egress struct {
	BytesIn    int64     `json:"bytes_in,omitempty"`
	BytesOut   int64     `json:"bytes_out,omitempty"`
	DurationMS int64     `json:"duration_ms,omitempty"`
	Host       string    `json:"host,omitempty"`
	IP         string    `json:"ip,omitempty"`
	Message    string    `json:"message,omitempty"`
	Method     string    `json:"method,omitempty"`
	Path       string    `json:"path,omitempty"`
	Port       int       `json:"port"`
	Protocol   string    `json:"protocol"` // tcp, tls, http, https, dns
	Rule       string    `json:"rule,omitempty"`
	Secret     string    `json:"secret,omitempty"`
	Status     int       `json:"status,omitempty"`
	Time       time.Time `json:"time"`
}

// NetworkUpdated is the data of a [rung.EntryNetworkUpdated] entry.
type NetworkUpdated struct {
	Headers int              `json:"headers"`
	Mode    rung.NetworkMode `json:"mode"`
	Rules   int              `json:"rules"`
}

// maxNetworkRules bounds a policy's rules and header rules, each.
const maxNetworkRules = 256

// checkNetwork validates a create's or an update's network policy.
func (c *Controller) checkNetwork(tenant rung.TenantID, p rung.NetworkPolicy) error {
	switch p.Mode {
	case "", rung.NetworkNone, rung.NetworkEgress, rung.NetworkOpen:
	default:
		return rung.Errorf(rung.ErrInvalid, "unknown network mode %q (want none, egress or open)", clip(string(p.Mode)))
	}
	if len(p.Rules) > maxNetworkRules || len(p.Headers) > maxNetworkRules {
		return rung.Errorf(rung.ErrInvalid, "network: %d rules and %d header rules, at most %d each", len(p.Rules), len(p.Headers), maxNetworkRules)
	}
	if c.net == nil {
		if p.Mode == "" || p.Mode == rung.NetworkNone {
			if len(p.Rules) > 0 || len(p.Headers) > 0 {
				return rung.Errorf(rung.ErrUnavailable, "network rules need the egress proxy, which this server does not run")
			}
			return nil
		}
		return rung.Errorf(rung.ErrUnavailable, "network mode %s is not available on this server (no egress proxy)", p.Mode)
	}
	return c.net.Check(tenant, p)
}

// networkEgress journals what the network tier reports.
func (c *Controller) networkEgress(id rung.SandboxID, typ rung.EntryType, e Egress) {
	if c.cfg.Observer.Egress != nil {
		c.cfg.Observer.Egress(typ, e)
	}
	c.journal(c.ctx, id, typ, e)
}

// envOf is sb's environment as its commands get it in both tiers: the
// network tier's (certificate authority paths) under the sandbox's own.
func (c *Controller) envOf(sb rung.Sandbox) map[string]string {
	if c.net == nil {
		return sb.Env
	}
	extra := c.net.Env(sb)
	if len(extra) == 0 {
		return sb.Env
	}
	env := make(map[string]string, len(extra)+len(sb.Env))
	for k, v := range extra {
		env[k] = v
	}
	for k, v := range sb.Env {
		env[k] = v
	}
	return env
}
