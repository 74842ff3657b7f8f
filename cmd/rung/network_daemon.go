package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"

	"rung.dev/rung"
	"rung.dev/rung/containers"
	"rung.dev/rung/controller"
	"rung.dev/rung/network"
	"rung.dev/rung/networks"
	"rung.dev/rung/store"
)

// openNetwork opens the network tier, or logs why it cannot (no
// nftables, not root): the host's links (reconciled with
// what an earlier daemon left: the links of sandboxes whose rows say
// running are kept for adoption, the rest go) and the tier over them,
// which the controller opens with its events.
func (d *Daemon) openNetwork(ctx context.Context, cfg DaemonConfig, tc *containers.Config, ccfg *controller.Config) error {
	ncfg := *cfg.Network
	ncfg.StateDir = cmp.Or(ncfg.StateDir, filepath.Join(cfg.Data, "network"))
	ncfg.Logger = d.log
	links, err := network.Open(ncfg)
	if err != nil {
		// As without a container runtime: serve, with what works.
		d.log.WarnContext(ctx, "network tier unavailable: every sandbox's network is none (loopback only)", "err", err)
		return nil
	}
	running, err := d.store.ListSandboxes(ctx, store.Filter{State: rung.StateRunning})
	if err != nil {
		links.Close()
		return err
	}
	keep := map[rung.SandboxID]bool{}
	for _, sb := range running {
		keep[sb.ID] = true
	}
	if removed, err := links.Reconcile(ctx, func(id rung.SandboxID) bool { return keep[id] }); err != nil {
		d.log.WarnContext(ctx, "network reconcile", "removed", removed, "err", err)
	}
	tenants, err := loadNetworkPolicies(filepath.Join(cfg.Data, "network.json"))
	if err != nil {
		links.Close()
		return err
	}
	d.links = links
	proxyPort, dnsPort := cmp.Or(ncfg.ProxyPort, network.DefaultProxyPort), cmp.Or(ncfg.DNSPort, network.DefaultDNSPort)
	ccfg.Network = func(ev controller.NetworkEvents) controller.NetworkTier {
		t, err := networks.New(networks.Config{Dir: filepath.Join(ncfg.StateDir, "ca"), Links: links, ProxyPort: proxyPort, DNSPort: dnsPort,
			OpenTenants: cfg.OpenNetworkTenants, Tenants: tenants, Resolver: cfg.netResolver, RootCAs: cfg.netRootCAs, Forbidden: []netip.Prefix{cmp.Or(ncfg.Range, network.DefaultRange)}, Logger: d.log}, ev)
		if err != nil {
			d.log.ErrorContext(ctx, "network tier unavailable: every sandbox's network is none", "err", err)
			return nil
		}
		d.networks = t
		return t
	}
	return nil
}

// loadNetworkPolicies reads the tenants' network policies from path
// (see networks.ParseTenantPolicies), once: a change takes effect at the
// next start. No file: no tenant rules, the default limits. A malformed
// file stops the daemon with the file and what is wrong named.
func loadNetworkPolicies(path string) (networks.TenantPolicies, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return networks.TenantPolicies{}, nil
	}
	if err != nil {
		return networks.TenantPolicies{}, fmt.Errorf("network policy: %w", err)
	}
	p, err := networks.ParseTenantPolicies(b)
	if err != nil {
		return networks.TenantPolicies{}, fmt.Errorf("network policy %s: %w", path, err)
	}
	return p, nil
}

// closeNetwork stops the proxies; the links stay for the next daemon
// (they are removed with their containers, or by its Reconcile).
func (d *Daemon) closeNetwork() {
	if d.networks != nil {
		d.networks.Close()
	}
	if d.links != nil {
		d.links.Close()
	}
}

// networkConfig is `rung serve`'s network tier: its range and table
// (defaults when ""), or none with --no-network.
func networkConfig(off bool, rangeStr, table string) (*network.Config, error) {
	if off {
		return nil, nil
	}
	cfg := &network.Config{Table: table}
	if rangeStr != "" {
		p, err := netip.ParsePrefix(rangeStr)
		if err != nil || !p.Addr().Is4() {
			return nil, fmt.Errorf("--network-range %q: want an IPv4 prefix such as 10.231.0.0/16", rangeStr)
		}
		cfg.Range = p
	}
	return cfg, nil
}

func tenantIDs(ss []string) []rung.TenantID {
	out := make([]rung.TenantID, len(ss))
	for i, s := range ss {
		out[i] = rung.TenantID(s)
	}
	return out
}
