package main

import (
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
	c, _, _ := startContainerDaemonWith(t, DaemonConfig{DefaultImage: "base", ImageDir: testenv.ImageCache,
		Network: &network.Config{Range: lease.Range, Table: lease.Table}})
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
