package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/client"
	"rung.dev/rung/controller"
	"rung.dev/rung/e2b"
	"rung.dev/rung/internal/testenv"
)

// TestE2BWarm: with warm spares for the E2B API (`rung serve --e2b-warm
// base=1`), an E2B create claims a spare whose /home/user was linked to
// /workspace before its container started, and gets the network it asked
// for (egress here; the spare ran without) as the claim ends. Its first
// command runs in that container, sees the home a cold create's command
// sees, and resolves and reaches an allowed name. A rung create of the
// same image, which links nothing, does not take the E2B spare.
func TestE2BWarm(t *testing.T) {
	ensureBase(t)
	c, d, addr, _, up := egressDaemonWith(t, DaemonConfig{DefaultImage: "base", ImageDir: testenv.ImageCache,
		Warm: []controller.WarmSpec{{Image: "base", Count: 1, LinkWorkspace: e2b.Home}}}, "api.example.test")
	ctx := t.Context()
	if _, err := c.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	key, err := c.CreateE2BKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.CreateToken(ctx, "acme", false)
	if err != nil {
		t.Fatal(err)
	}
	acme := client.New(addr, client.WithToken(tok.Token))
	waitWarm(t, d)

	plain, err := acme.Create(ctx, client.CreateRequest{Image: "base"})
	if err != nil {
		t.Fatal(err)
	}
	if plain.State != rung.StateReady || d.ctrl.WarmReady() != 1 {
		t.Errorf("a rung create took the E2B spare: state %s, %d spares left", plain.State, d.ctrl.WarmReady())
	}

	e := e2bWire{t: t, base: "http://" + addr, key: key.Token}
	status, b := e.api("POST", "/v2/sandboxes", map[string]any{"templateID": "base", "timeout": 60, "allow_internet_access": true,
		"network": map[string]any{"allowOut": []string{"api.example.test"}, "denyOut": []string{"0.0.0.0/0"}}})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, b)
	}
	var sbx struct{ SandboxID string }
	json.Unmarshal(b, &sbx)
	id := sbx.SandboxID
	if sb, err := acme.Get(ctx, id); err != nil || sb.State != rung.StateRunning || sb.Network.Mode != rung.NetworkEgress {
		t.Fatalf("after the create: %+v, %v; want running (the spare's container) in mode egress", sb, err)
	}
	if m := journalEntry(t, acme, id, "container.started"); m["warm"] != true {
		t.Errorf("container.started %v, want warm: true", m)
	}

	_, msgs, _ := e.stream(id, "process.Process/Start", envelope(fmt.Sprintf(`{"process":{"cmd":"/bin/bash","args":["-l","-c",`+
		`"readlink /home/user; stat -c '%%a %%U:%%G' /workspace /home /home/user/.bashrc; ls -A /home/user; pwd; `+
		`python3 -c 'import urllib.request as u; print(u.urlopen(\"http://api.example.test:%d/warm\").read().decode(), end=\"\")'"]}}`, up.addr.Port())))
	want := "/workspace\n755 user:user\n755 root:root\n644 user:user\n.bash_logout\n.bashrc\n.profile\n/home/user\nhello from upstream GET /warm\n"
	if got := streamStdout(t, msgs); got != want {
		t.Errorf("first command on the claimed spare:\n%s\nwant\n%s", got, want)
	}
	types := journalTypes(t, acme, id)
	if count(types, "container.started") != 1 || count(types, "container.stopped") != 0 || !strings.Contains(strings.Join(types, " "), "egress.request") {
		t.Errorf("journal %v: want the warm start only, and the request through the proxy", types)
	}
}
