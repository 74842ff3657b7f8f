package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/client"
)

// Secrets: the value goes in and never comes out (answers, lists, a
// sandbox's env, its journal, the database file); a sandbox's env gets
// the placeholder; names and hosts are checked; tenants are apart; the
// key file is made once with mode 0600 and a new daemon on the same data
// opens the same secrets.
func TestSecrets(t *testing.T) {
	data := t.TempDir()
	d, addr := startDaemonWith(t, DaemonConfig{Data: data})
	c := client.New(addr, client.WithToken(d.Token))
	ctx := t.Context()
	const value = "ghp_s3cr3t-value-never-returned"
	sec, err := c.PutSecret(ctx, "GITHUB_TOKEN", value, []string{"api.github.com", "*.githubusercontent.com"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sec.Placeholder, "rung_secret_") || strings.Contains(sec.Placeholder, value) {
		t.Errorf("placeholder %q", sec.Placeholder)
	}
	again, err := c.PutSecret(ctx, "GITHUB_TOKEN", value+"2", []string{"api.github.com"})
	if err != nil || again.Placeholder != sec.Placeholder {
		t.Errorf("replace: %+v, %v; want the same placeholder", again, err)
	}
	for _, bad := range []struct {
		name, value string
		hosts       []string
	}{
		{"bad-name", "v", nil},
		{"1ABC", "v", nil},
		{"EMPTY", "", nil},
		{"HOST", "v", []string{"Example.COM"}},
		{"HOST", "v", []string{"a..b"}},
		{"HOST", "v", []string{"*"}},
		{"BIG", strings.Repeat("x", 64<<10+1), nil},
	} {
		if _, err := c.PutSecret(ctx, bad.name, bad.value, bad.hosts); err == nil {
			t.Errorf("PutSecret(%q, %d bytes, %q) succeeded", bad.name, len(bad.value), bad.hosts)
		}
	}

	sb, err := c.Create(ctx, client.CreateRequest{Env: map[string]string{"GH": "{{secret:GITHUB_TOKEN}}", "PLAIN": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, string(sb.ID), client.ExecRequest{Command: "echo $GH $PLAIN", Backend: rung.BackendIsolate})
	if err != nil || res.Stdout != sec.Placeholder+" x\n" {
		t.Errorf("the sandbox's env: %q, %v; want the placeholder", res.Stdout, err)
	}
	if _, err := c.Create(ctx, client.CreateRequest{Env: map[string]string{"X": "{{secret:NOPE}}"}}); !errors.Is(err, rung.ErrInvalid) || !strings.Contains(err.Error(), "NOPE") {
		t.Errorf("env naming an unknown secret: %v", err)
	}

	list, err := c.ListSecrets(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "GITHUB_TOKEN" {
		t.Errorf("ListSecrets = %+v, %v", list, err)
	}
	oc := tenantClient(t, c, addr, "other")
	if _, err := oc.GetSecret(ctx, "GITHUB_TOKEN"); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("another tenant reads the secret: %v", err)
	}
	if _, err := oc.Create(ctx, client.CreateRequest{Env: map[string]string{"X": "{{secret:GITHUB_TOKEN}}"}}); !errors.Is(err, rung.ErrInvalid) {
		t.Errorf("another tenant uses the secret: %v", err)
	}
	if got, err := d.ctrl.ListSecrets(ctx, "other"); err != nil || len(got) != 0 {
		t.Errorf("tenant other lists %+v, %v", got, err)
	}

	// The value opens with the server's key, and is nowhere in clear.
	v, _, err := d.ctrl.SecretValue(ctx, "default", "GITHUB_TOKEN")
	if err != nil || string(v) != value+"2" {
		t.Errorf("SecretValue = %q, %v", v, err)
	}
	evs, err := c.Journal(ctx, string(sb.ID), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if strings.Contains(string(e.Data), value) {
			t.Errorf("journal entry %s holds the value", e.Type)
		}
	}
	st, err := os.Stat(filepath.Join(data, "server.key"))
	if err != nil || st.Mode().Perm() != 0o600 || st.Size() != 32 {
		t.Errorf("server.key: %v, %v", st, err)
	}
	for _, f := range []string{"rung.db", "rung.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(data, f))
		if strings.Contains(string(b), value) {
			t.Errorf("%s holds the secret's value in clear", f)
		}
	}
	if err := c.DeleteSecret(ctx, "GITHUB_TOKEN"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSecret(ctx, "GITHUB_TOKEN"); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
}

// A key file readable by others, or too short, stops the daemon.
func TestServerKeyChecks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k")
	os.WriteFile(p, make([]byte, 32), 0o644)
	if _, err := loadServerKey(p); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Errorf("mode 0644 key: %v", err)
	}
	os.WriteFile(p, make([]byte, 16), 0o600)
	os.Chmod(p, 0o600)
	if _, err := loadServerKey(p); err == nil || !strings.Contains(err.Error(), "16 bytes") {
		t.Errorf("short key: %v", err)
	}
	fresh := filepath.Join(dir, "new")
	k1, err := loadServerKey(fresh)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := loadServerKey(fresh)
	if err != nil || string(k1) != string(k2) {
		t.Errorf("a second load gives another key: %v", err)
	}
}
