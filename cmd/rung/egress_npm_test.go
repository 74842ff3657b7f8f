package main

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/internal/nettest"
	"rung.dev/rung/internal/testenv"
	"rung.dev/rung/network"
)

// The design's first example, against the real npm registry (the one
// outside host this machine reaches): in a base sandbox with an allow
// rule for the registry, `npm install lodash` and require('lodash')
// work; without one, npm fails fast and the journal says why.
func TestEgressNPM(t *testing.T) {
	ensureBase(t)
	lease := nettest.Take(t)
	up := newUpstreamNet(t, lease)
	tlsAddr, roots := up.serveTLS(t, "secure.example.test")
	c, _, _ := startContainerDaemonWith(t, DaemonConfig{DefaultImage: "base", ImageDir: testenv.ImageCache,
		Network:     &network.Config{Range: lease.Range, Table: lease.Table},
		netResolver: namesTo{names: map[string]netip.Addr{"secure.example.test": tlsAddr.Addr()}, fallback: true}, netRootCAs: roots})
	ctx := t.Context()
	run := func(id, cmd string) client.ExecResult {
		t.Helper()
		res, err := c.Exec(ctx, id, client.ExecRequest{Command: cmd, Backend: rung.BackendContainer, TimeoutMS: 240000})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	allowed, err := c.Create(ctx, client.CreateRequest{Network: rung.NetworkPolicy{Mode: rung.NetworkEgress,
		Rules: []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "registry.npmjs.org", Ports: "443"}}}})
	if err != nil {
		t.Fatal(err)
	}
	res := run(string(allowed.ID), "cd /workspace && npm install --no-audit --no-fund lodash 2>&1 && node -e \"console.log(require('lodash').chunk([1,2,3,4],2).length)\"")
	if res.ExitCode != 0 || !strings.HasSuffix(res.Stdout, "2\n") {
		t.Fatalf("npm install with the registry allowed: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}

	// HTTPS with a header rule: intercepted with the sandbox's own CA,
	// which curl, Python and Node in the container trust through the
	// system store and the CA variables; the upstream gets the secret,
	// the sandbox never does.
	const value = "https-secret-9c1e"
	if _, err := c.PutSecret(ctx, "UP_TOKEN", value, []string{"secure.example.test"}); err != nil {
		t.Fatal(err)
	}
	secure, err := c.Create(ctx, client.CreateRequest{Network: rung.NetworkPolicy{Mode: rung.NetworkEgress,
		Rules:   []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "secure.example.test"}},
		Headers: []rung.HeaderRule{{Domain: "secure.example.test", Header: "Authorization", Value: "Bearer {{secret:UP_TOKEN}}"}}}})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://secure.example.test:%d/tls", tlsAddr.Port())
	for _, cmd := range []string{
		"curl -sS " + url,
		"python3 -c \"import urllib.request; print(urllib.request.urlopen('" + url + "').read().decode(), end='')\"",
		"node -e \"require('https').get('" + url + "', r => r.pipe(process.stdout)).on('error', e => { console.error(e.message); process.exit(1) })\"",
	} {
		res := run(string(secure.ID), cmd)
		if res.ExitCode != 0 || res.Stdout != "hello from upstream GET /tls\n" {
			t.Errorf("%s: exit %d, %q %q", strings.Fields(cmd)[0], res.ExitCode, res.Stdout, res.Stderr)
			continue
		}
		if h := <-up.seen; h.Get("Authorization") != "Bearer "+value {
			t.Errorf("%s: upstream saw Authorization %q", strings.Fields(cmd)[0], h.Get("Authorization"))
		}
	}

	denied, err := c.Create(ctx, client.CreateRequest{Network: rung.NetworkPolicy{Mode: rung.NetworkEgress,
		Rules: []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "example.com"}}}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res = run(string(denied.ID), "cd /workspace && npm install --no-audit --no-fund --fetch-retries=0 lodash 2>&1")
	took := time.Since(start)
	if res.ExitCode == 0 {
		t.Fatalf("npm install without a rule for the registry succeeded:\n%s", res.Stdout)
	}
	if took > 60*time.Second {
		t.Errorf("npm took %s to fail: the refusal should be fast", took)
	}
	found := false
	evs, _ := c.Journal(ctx, string(denied.ID), 0)
	for _, e := range evs {
		if e.Type == string(rung.EntryEgressDenied) && strings.Contains(string(e.Data), "registry.npmjs.org") {
			found = true
		}
	}
	if !found {
		t.Errorf("no egress.denied entry names the registry; npm said:\n%s", res.Stdout)
	}
}
