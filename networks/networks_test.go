package networks

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/internal/nettest"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/network"
)

func newTier(t *testing.T, dir string, open ...rung.TenantID) *Tier {
	t.Helper()
	testenv.Require(t, "root")
	lease := nettest.Take(t)
	links, err := network.Open(network.Config{StateDir: filepath.Join(dir, "links"), Range: lease.Range, Table: lease.Table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { links.Uninstall(t.Context()); links.Close() })
	tr, err := New(Config{Dir: filepath.Join(dir, "ca"), Links: links, OpenTenants: open}, controller.NetworkEvents{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// Check refuses what egress refuses, and mode open to a tenant the
// server does not allow it.
func TestCheck(t *testing.T) {
	tr := newTier(t, t.TempDir(), "trusted")
	if err := tr.Check("a", rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: []rung.NetworkRule{{Action: "maybe", Domain: "x.com"}}}); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("an unknown action: %v", err)
	}
	if err := tr.Check("a", rung.NetworkPolicy{Mode: rung.NetworkOpen}); !errors.Is(err, rung.ErrPermission) {
		t.Errorf("open for a tenant not allowed it: %v", err)
	}
	if err := tr.Check("trusted", rung.NetworkPolicy{Mode: rung.NetworkOpen}); err != nil {
		t.Errorf("open for an allowed tenant: %v", err)
	}
	lp := linkPolicy(rung.NetworkPolicy{Mode: rung.NetworkOpen, Rules: []rung.NetworkRule{
		{Action: rung.RuleAllow, CIDR: "10.1.0.0/16"}, {Action: rung.RuleDeny, CIDR: "10.2.0.0/16"}, {Action: rung.RuleAllow, Domain: "x.com"}}})
	if len(lp.Allow) != 1 || lp.Allow[0] != netip.MustParsePrefix("10.1.0.0/16") {
		t.Errorf("open mode's allowed private prefixes: %v", lp.Allow)
	}
}

// A sandbox's CA is made once, kept with its key readable only by the
// daemon, loaded again by a new tier (a restarted daemon), in the
// container's store, and removed by Forget.
func TestCAKept(t *testing.T) {
	dir := t.TempDir()
	tr := newTier(t, dir)
	sb := rung.Sandbox{ID: rung.NewSandboxID(), Tenant: "a", Network: rung.NetworkPolicy{Mode: rung.NetworkNone}}
	netns, resolv, bundle, err := tr.Prepare(t.Context(), sb)
	if err != nil || netns != "" || resolv != filepath.Join(dir, "ca", string(sb.ID)+".resolv") {
		t.Fatalf("Prepare in mode none: %q %q %v", netns, resolv, err)
	}
	if b, err := os.ReadFile(resolv); err != nil || strings.Contains(string(b), "nameserver") {
		t.Errorf("mode none's resolv.conf names a server: %q, %v", b, err)
	}
	crt, err := os.ReadFile(filepath.Join(dir, "ca", string(sb.ID)+".crt"))
	if err != nil || !strings.HasSuffix(string(bundle), string(crt)) {
		t.Fatalf("the bundle does not end with the sandbox's CA: %v", err)
	}
	if strings.Contains(string(bundle), "PRIVATE KEY") {
		t.Fatal("the bundle holds a key")
	}
	st, err := os.Stat(filepath.Join(dir, "ca", string(sb.ID)+".key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", st, err)
	}
	again, err := New(Config{Dir: filepath.Join(dir, "ca"), Links: tr.cfg.Links}, controller.NetworkEvents{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, bundle2, err := again.Prepare(t.Context(), sb)
	if err != nil || string(bundle2) != string(bundle) {
		t.Errorf("a new tier made another CA: %v", err)
	}
	again.Forget(sb.ID)
	for _, ext := range []string{".key", ".crt", ".resolv"} {
		if _, err := os.Stat(filepath.Join(dir, "ca", string(sb.ID)+ext)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Forget left the %s: %v", ext, err)
		}
	}
}

// SweepCAs removes the CAs of sandboxes that no longer exist, and only
// those, with the temporary files a write left.
func TestSweepCAs(t *testing.T) {
	dir := t.TempDir()
	tr := newTier(t, dir)
	kept := rung.Sandbox{ID: rung.NewSandboxID(), Tenant: "a", Network: rung.NetworkPolicy{Mode: rung.NetworkNone}}
	gone := rung.Sandbox{ID: rung.NewSandboxID(), Tenant: "a", Network: rung.NetworkPolicy{Mode: rung.NetworkNone}}
	for _, sb := range []rung.Sandbox{kept, gone} {
		if _, _, _, err := tr.Prepare(t.Context(), sb); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(dir, "ca", ".tmp-123")
	if err := os.WriteFile(tmp, []byte("half a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := tr.SweepCAs(func(id rung.SandboxID) (bool, error) { return id == kept.ID, nil })
	if err != nil || n != 1 {
		t.Fatalf("SweepCAs = %d, %v; want 1 sandbox's files removed", n, err)
	}
	for _, ext := range []string{".crt", ".key", ".resolv"} {
		if _, err := os.Stat(filepath.Join(dir, "ca", string(gone.ID)+ext)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the deleted sandbox's %s stayed: %v", ext, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "ca", string(kept.ID)+ext)); err != nil {
			t.Errorf("a live sandbox's %s went: %v", ext, err)
		}
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a temporary file stayed: %v", err)
	}
	if _, err := tr.SweepCAs(func(rung.SandboxID) (bool, error) { return false, errors.New("store down") }); err == nil {
		t.Error("a store error was not reported")
	}
	if _, err := os.Stat(filepath.Join(dir, "ca", string(kept.ID)+".key")); err != nil {
		t.Errorf("a store error removed a CA: %v", err)
	}
}

// A tenant's rules go with every sandbox's; limits come from the
// sandbox, else the tenant, else the defaults; network.json is checked.
func TestTenantPolicies(t *testing.T) {
	ps, err := ParseTenantPolicies([]byte(`{"tenants": {"*": {"rules": [{"action": "deny", "domain": "*.internal.example"}], "limits": {"requests_per_second": 50}},
		"acme": {"open": true, "limits": {"max_connections": 8}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	own := rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "api.example.com"}}, Limits: rung.NetworkLimits{BytesPerSecond: 1000}}
	e := ps.effective("other", own)
	if len(e.Rules) != 2 || e.Rules[0].Action != rung.RuleDeny || e.Rules[1].Domain != "api.example.com" {
		t.Errorf("rules %+v: want the tenant's then the sandbox's", e.Rules)
	}
	if e.Limits != (rung.NetworkLimits{MaxConnections: DefaultLimits.MaxConnections, RequestsPerSecond: 50, BytesPerSecond: 1000}) {
		t.Errorf("limits %+v", e.Limits)
	}
	if a := ps.effective("acme", own); a.Limits.MaxConnections != 8 || len(a.Rules) != 1 || !ps.of("acme").Open {
		t.Errorf("acme's own entry: %+v", a)
	}
	for _, bad := range []string{`{"tenants": {"*": {"rules": [{"action": "allow", "cidr": "10.0.0.1/8"}]}}}`, `{"tenants": {"*": {"nope": 1}}}`, `{"tenants": {"Bad Name": {}}}`} {
		if _, err := ParseTenantPolicies([]byte(bad)); err == nil {
			t.Errorf("ParseTenantPolicies(%s) took it", bad)
		}
	}
}
