package storetest

import (
	"slices"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

func testShares(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "a")
	tenant(t, s, "b")
	sb := sandbox(t, s, "a", "web", nil)
	sh := store.Share{ID: rung.NewShareID(), Tenant: "a", Sandbox: sb.ID, Port: 3000, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	must(t, s.CreateShare(ctx, sh))
	wantErr(t, "duplicate share", s.CreateShare(ctx, sh), rung.ErrExists)
	got, err := s.GetShare(ctx, "a", sh.ID)
	must(t, err)
	if got.Port != 3000 || got.Sandbox != sb.ID || !got.ExpiresAt.Equal(sh.ExpiresAt) || !got.RevokedAt.IsZero() {
		t.Errorf("GetShare = %+v, want %+v", got, sh)
	}
	if _, err := s.GetShare(ctx, "", sh.ID); err != nil {
		t.Errorf("GetShare without a tenant: %v", err)
	}
	_, err = s.GetShare(ctx, "b", sh.ID)
	wantErr(t, "another tenant's share", err, rung.ErrNotFound)
	wantErr(t, "another tenant revokes", s.RevokeShare(ctx, "b", sh.ID, t0), rung.ErrNotFound)
	must(t, s.RevokeShare(ctx, "a", sh.ID, t0.Add(time.Minute)))
	must(t, s.RevokeShare(ctx, "a", sh.ID, t0.Add(2*time.Minute)))
	got, err = s.GetShare(ctx, "a", sh.ID)
	must(t, err)
	if !got.RevokedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("revoked at %v, want the first revocation's time", got.RevokedAt)
	}
	list, err := s.ListShares(ctx, "a", sb.ID)
	must(t, err)
	if len(list) != 1 || list[0].ID != sh.ID {
		t.Errorf("ListShares = %+v", list)
	}
	if list, _ := s.ListShares(ctx, "b", sb.ID); len(list) != 0 {
		t.Errorf("tenant b lists a's shares: %+v", list)
	}
	must(t, s.DeleteSandbox(ctx, sb.ID))
	_, err = s.GetShare(ctx, "a", sh.ID)
	wantErr(t, "share of a deleted sandbox", err, rung.ErrNotFound)
}

func testSecrets(t *testing.T, s store.Store) {
	ctx := t.Context()
	sec := store.SecretRow{Secret: rung.Secret{Name: "GITHUB_TOKEN", Tenant: "a", Hosts: []string{"api.github.com"}, Placeholder: "rung_secret_x",
		CreatedAt: t0, UpdatedAt: t0}, Sealed: []byte{1, 2, 3}}
	created, err := s.PutSecret(ctx, sec)
	must(t, err)
	if !created {
		t.Error("first PutSecret did not report created")
	}
	sec.Hosts, sec.Sealed, sec.UpdatedAt, sec.CreatedAt = []string{"*.github.com"}, []byte{4}, t0.Add(time.Hour), t0.Add(time.Hour)
	created, err = s.PutSecret(ctx, sec)
	must(t, err)
	if created {
		t.Error("replacing PutSecret reported created")
	}
	got, err := s.GetSecret(ctx, "a", "GITHUB_TOKEN")
	must(t, err)
	if !slices.Equal(got.Hosts, []string{"*.github.com"}) || !slices.Equal(got.Sealed, []byte{4}) || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("GetSecret = %+v", got)
	}
	_, err = s.GetSecret(ctx, "b", "GITHUB_TOKEN")
	wantErr(t, "another tenant's secret", err, rung.ErrNotFound)
	_, err = s.PutSecret(ctx, store.SecretRow{Secret: rung.Secret{Name: "bad-name", Tenant: "a"}})
	wantErr(t, "bad secret name", err, rung.ErrInvalid)
	_, err = s.PutSecret(ctx, store.SecretRow{Secret: rung.Secret{Name: "NPM", Tenant: "a", Hosts: []string{}}, Sealed: []byte{9}})
	must(t, err)
	list, err := s.ListSecrets(ctx, "a")
	must(t, err)
	if len(list) != 2 || list[0].Name != "GITHUB_TOKEN" || list[1].Name != "NPM" {
		t.Errorf("ListSecrets = %+v", list)
	}
	wantErr(t, "another tenant deletes", s.DeleteSecret(ctx, "b", "NPM"), rung.ErrNotFound)
	must(t, s.DeleteSecret(ctx, "a", "NPM"))
	wantErr(t, "delete twice", s.DeleteSecret(ctx, "a", "NPM"), rung.ErrNotFound)
}
