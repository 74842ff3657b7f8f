package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/internal/testenv"
)

// TestDashboardEgress drives the egress log of the dashboard's network
// tab in headless Chromium: a sandbox in mode egress, behind a real link,
// makes a request its policy allows and two it denies (a name no rule
// allows, an address by itself) to an upstream server in a network
// namespace of the test's own, and the tab lists each with its host and
// decision, the allowed one with its method, path and status; one more,
// made while the tab is open, shows up without a reload. (TestDashboard
// runs the daemon as a process, whose resolver the test cannot set; the
// names here need the test's.)
func TestDashboardEgress(t *testing.T) {
	testenv.Require(t, "chromium")
	c, d, addr, _, up := egressDaemon(t, "api.example.test", "other.example.test")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	policy := rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "api.example.test"}}}
	sb, err := c.Create(ctx, client.CreateRequest{Name: "egress-log", Network: policy})
	if err != nil {
		t.Fatal(err)
	}
	port := up.addr.Port()
	run := func(cmd string) client.ExecResult {
		t.Helper()
		res, err := c.Exec(ctx, string(sb.ID), client.ExecRequest{Command: cmd, Backend: rung.BackendContainer, TimeoutMS: 30000})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(fmt.Sprintf("wget -q -O - http://api.example.test:%d/allowed", port)); res.ExitCode != 0 {
		t.Fatalf("the allowed request: exit %d, %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if res := run(fmt.Sprintf("wget -q -O - http://other.example.test:%d/", port)); res.ExitCode == 0 {
		t.Fatalf("a name no rule allows answered: %q", res.Stdout)
	}
	if res := run(fmt.Sprintf("wget -q -O - http://%s/", up.addr)); res.ExitCode == 0 {
		t.Fatalf("an address no rule allows answered: %q", res.Stdout)
	}

	b := startBrowser(t, 1400, 1000)
	dashboardLogin(ctx, b, "http://"+addr, d.Token)
	b.navigate(ctx, "http://"+addr+"/#/s/"+string(sb.ID)+"/network")
	b.waitFor(ctx, "the network tab", `document.querySelector("#net-mode")?.textContent === "egress"`)
	// row finds the egress log's row of type typ whose host is host and
	// whose detail has detail, and says its decision.
	row := func(typ, host, detail string) string {
		return fmt.Sprintf(`[...document.querySelectorAll("#egress tbody tr[data-type='%s']")].find((r) => r.querySelector("td.host").textContent === %q &&
			r.lastElementChild.textContent.includes(%q))?.querySelector("td.decision").textContent`, typ, host, detail)
	}
	b.waitFor(ctx, "the allowed request", row("egress.request", "api.example.test", "GET /allowed → 200")+` === "allowed"`)
	b.waitFor(ctx, "the denied name", row("egress.denied", "other.example.test", "")+` === "denied"`)
	b.waitFor(ctx, "the denied address", row("egress.denied", up.addr.Addr().String(), "")+` === "denied"`)
	var styled bool
	b.eval(ctx, `[...document.querySelectorAll("#egress tbody tr[data-type='egress.denied']")].every((r) => r.classList.contains("denied"))`, &styled)
	if !styled {
		t.Errorf("a denied entry's row is not marked denied")
	}
	// The log follows the events stream: a request made now is added.
	if res := run(fmt.Sprintf("wget -q -O - http://api.example.test:%d/later", port)); res.ExitCode != 0 {
		t.Fatalf("the later request: exit %d, %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	b.waitFor(ctx, "the later request", row("egress.request", "api.example.test", "GET /later → 200")+` === "allowed"`)
	if dir := artifactDir(t); dir != "" {
		b.screenshot(ctx, filepath.Join(dir, "egress-log.png"))
	}
	if f := b.pageFaults(); len(f) > 0 {
		t.Errorf("the page reported faults:\n%s", strings.Join(f, "\n"))
	}
}

// dashboardLogin opens the dashboard at base and logs in with token.
func dashboardLogin(ctx context.Context, b *browser, base, token string) {
	b.navigate(ctx, base+"/")
	b.waitFor(ctx, "the login form", `document.querySelector("#token")`)
	b.typeInto(ctx, "#token", token)
	b.click(ctx, "#login button[type=submit]")
	b.waitFor(ctx, "the sandbox list", `document.querySelector("#sandbox-rows tr")`)
}
