package controller_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/controller/controllertest"
	"rung.dev/rung/store"
	"rung.dev/rung/store/sqlite"
)

// lookups counts the store's token lookups, to tell a cached
// authentication from one that asked the store.
type lookups struct {
	store.Store
	n atomic.Int64
}

func (l *lookups) TokenByHash(ctx context.Context, hash [32]byte) (store.Token, error) {
	l.n.Add(1)
	return l.Store.TokenByHash(ctx, hash)
}

// newTokenEnv returns a controller whose store counts token lookups.
func newTokenEnv(t *testing.T) (*controller.Controller, *lookups) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rung.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l := &lookups{Store: st}
	return controllertest.New(t, controller.Config{Store: l}), l
}

// A refusal is a tenant name a call must refuse with class and, unless
// msg is "", exactly the message msg (the API shows it as is).
type refusal struct {
	name   string
	tenant rung.TenantID
	class  error
	msg    string
}

func refuseNames(t *testing.T, what string, call func(rung.TenantID) error, tests []refusal) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := call(tc.tenant)
			if !errors.Is(err, tc.class) || tc.msg != "" && err.Error() != tc.msg {
				t.Errorf("%s(%.20q) = %v, want %v %q", what, tc.tenant, err, tc.class, tc.msg)
			}
		})
	}
}

func TestTenants(t *testing.T) {
	c, _ := newTokenEnv(t)
	ctx := t.Context()
	for _, id := range []rung.TenantID{"beta", "acme"} {
		got, err := c.CreateTenant(ctx, id)
		if err != nil || got.ID != id || got.CreatedAt.IsZero() {
			t.Fatalf("CreateTenant(%s) = %+v, %v", id, got, err)
		}
	}
	refuseNames(t, "CreateTenant", func(id rung.TenantID) error {
		_, err := c.CreateTenant(ctx, id)
		return err
	}, []refusal{
		{"taken", "acme", rung.ErrExists, ""},
		{"bad name", "Acme!", rung.ErrInvalid, `invalid tenant name "Acme!"`},
		{"empty", "", rung.ErrInvalid, `invalid tenant name ""`},
	})
	list, err := c.ListTenants(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "acme" || list[1].ID != "beta" {
		t.Errorf("ListTenants = %+v, %v; want acme, beta", list, err)
	}
}

func TestTokens(t *testing.T) {
	c, l := newTokenEnv(t)
	ctx := t.Context()
	if _, err := c.CreateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	user, err := c.CreateToken(ctx, controller.TokenRequest{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := c.CreateToken(ctx, controller.TokenRequest{Tenant: "acme", Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []controller.Token{user, admin} {
		if !strings.HasPrefix(tok.ID, "tok_") || len(tok.ID) != 17 || !strings.HasPrefix(tok.Bearer, "rung_") || len(tok.Bearer) != 37 || tok.Tenant != "acme" {
			t.Errorf("CreateToken = %+v", tok)
		}
		// Only the hash is stored, under the ID the caller was given.
		row, err := l.Store.TokenByHash(ctx, sha256.Sum256([]byte(tok.Bearer)))
		if err != nil || row.ID != tok.ID || row.Admin != tok.Admin {
			t.Errorf("stored token of %s = %+v, %v", tok.ID, row, err)
		}
		var logged bytes.Buffer
		slog.New(slog.NewTextHandler(&logged, nil)).Info("made", "token", tok)
		if s := fmt.Sprint(tok) + logged.String(); strings.Contains(s, tok.Bearer) {
			t.Errorf("token printed or logged in clear: %s", s)
		}
	}
	if user.Bearer == admin.Bearer || user.ID == admin.ID {
		t.Errorf("two tokens alike: %s, %s", user.ID, admin.ID)
	}

	auth := []struct {
		name   string
		token  string
		tenant rung.TenantID
		admin  bool
	}{
		{"tenant token", user.Bearer, "acme", false},
		{"admin token", admin.Bearer, "acme", true},
	}
	for _, tc := range auth {
		t.Run(tc.name, func(t *testing.T) {
			before := l.n.Load()
			for range 3 {
				tenant, isAdmin, err := c.Authenticate(ctx, tc.token)
				if err != nil || tenant != tc.tenant || isAdmin != tc.admin {
					t.Fatalf("Authenticate = %s, %v, %v; want %s, %v", tenant, isAdmin, err, tc.tenant, tc.admin)
				}
			}
			// The first call asks the store; the others are answered from
			// the verified tokens.
			if n := l.n.Load() - before; n != 1 {
				t.Errorf("3 authentications looked the token up %d times, want 1", n)
			}
		})
	}

	refused := []struct {
		name  string
		token string
	}{
		{"unknown", "rung_" + strings.Repeat("a", 32)},
		{"empty", ""},
		{"too long", strings.Repeat("x", 257)},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := c.Authenticate(ctx, tc.token); !errors.Is(err, rung.ErrUnauthenticated) || err.Error() != "unknown token" {
				t.Errorf("Authenticate(%.20q) = %v, want unauthenticated \"unknown token\"", tc.token, err)
			}
		})
	}

	refuseNames(t, "CreateToken", func(id rung.TenantID) error {
		_, err := c.CreateToken(ctx, controller.TokenRequest{Tenant: id})
		return err
	}, []refusal{
		{"no such tenant", "nobody", rung.ErrNotFound, ""},
		{"bad name", "No Body", rung.ErrInvalid, `invalid tenant name "No Body"`},
		{"long name", rung.TenantID(strings.Repeat("a", 130)), rung.ErrInvalid,
			`invalid tenant name "` + strings.Repeat("a", 120) + `..."`},
	})
}

func TestBootstrap(t *testing.T) {
	c, _ := newTokenEnv(t)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "token")
	tok, created, err := c.Bootstrap(ctx, path)
	if err != nil || !created {
		t.Fatalf("first Bootstrap = %v, %v; want created", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v; want mode 0600", fi, err)
	}
	if b, _ := os.ReadFile(path); string(b) != tok+"\n" {
		t.Errorf("token file holds %q, want %q", b, tok+"\n")
	}
	if tenant, admin, err := c.Authenticate(ctx, tok); err != nil || tenant != controller.DefaultTenant || !admin {
		t.Errorf("Authenticate(bootstrap token) = %s, %v, %v; want default admin", tenant, admin, err)
	}
	again, created, err := c.Bootstrap(ctx, path)
	if err != nil || created || again != tok {
		t.Errorf("second Bootstrap = %v, %v; want the same token, not created", created, err)
	}

	// A token the store does not know (a store made anew) is replaced;
	// the default tenant may already exist.
	if err := os.WriteFile(path, []byte("rung_stale\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh, created, err := c.Bootstrap(ctx, path)
	if err != nil || !created || fresh == tok || fresh == "rung_stale" {
		t.Fatalf("Bootstrap over a stale file = %v, %v", created, err)
	}
	if b, _ := os.ReadFile(path); string(b) != fresh+"\n" {
		t.Errorf("token file holds %q, want the new token", b)
	}
}

// TestE2BToken: an E2B-form token is "e2b_" and 40 hex digits (what the
// E2B SDK accepts as an API key), and authenticates like any other.
func TestE2BToken(t *testing.T) {
	c, _ := newTokenEnv(t)
	if _, err := c.CreateTenant(t.Context(), "acme"); err != nil {
		t.Fatal(err)
	}
	tok, err := c.CreateToken(t.Context(), controller.TokenRequest{Tenant: "acme", E2B: true})
	if err != nil {
		t.Fatal(err)
	}
	hex, ok := strings.CutPrefix(tok.Bearer, "e2b_")
	if !ok || len(hex) != 40 || strings.Trim(hex, "0123456789abcdef") != "" {
		t.Fatalf("E2B token %q: want e2b_ + 40 lowercase hex digits", tok.Bearer)
	}
	tenant, admin, err := c.Authenticate(t.Context(), tok.Bearer)
	if err != nil || tenant != "acme" || admin {
		t.Fatalf("Authenticate = %q, %v, %v; want acme, false, nil", tenant, admin, err)
	}
}
