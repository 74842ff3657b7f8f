package controller

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// A share is a signed, expiring, revocable URL to one port of a sandbox,
// for showing a preview to someone without a token. The URL carries a
// share token: the share's ID, its expiry and an HMAC over both, the
// sandbox and the port, under a key derived from the server's key. A
// token is checked by its signature and expiry first (no store read for
// a forged or stale one), then by its row (revocation).

// Bounds of a share's lifetime.
const (
	DefaultShareTTL = 24 * time.Hour
	MaxShareTTL     = 30 * 24 * time.Hour
)

// ShareTokenParam is the query parameter that carries a share token.
const ShareTokenParam = "rung_share"

// Share is a shared port as the API shows it; Token is set only in the
// answer of the create.
type Share struct {
	ID        string
	Sandbox   rung.SandboxID
	Port      int
	CreatedAt time.Time
	ExpiresAt time.Time
	RevokedAt time.Time // zero while valid
	Token     string
}

func shareOf(sh store.Share) Share {
	return Share{ID: sh.ID, Sandbox: sh.Sandbox, Port: sh.Port, CreatedAt: sh.CreatedAt, ExpiresAt: sh.ExpiresAt, RevokedAt: sh.RevokedAt}
}

func (c *Controller) shareSig(id string, sb rung.SandboxID, port int, expires int64) (string, error) {
	k, err := c.subkey("shares")
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, k)
	m.Write([]byte(id + "\x00" + string(sb) + "\x00" + strconv.Itoa(port) + "\x00" + strconv.FormatInt(expires, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// SharePort makes a share of port of tenant's sandbox ref, valid for ttl
// (0: DefaultShareTTL).
func (c *Controller) SharePort(ctx context.Context, tenant rung.TenantID, ref string, port int, ttl time.Duration) (Share, error) {
	if port <= 0 || port > 65535 {
		return Share{}, rung.Errorf(rung.ErrInvalid, "port %d out of range", port)
	}
	if ttl == 0 {
		ttl = DefaultShareTTL
	}
	if ttl < time.Second || ttl > MaxShareTTL {
		return Share{}, rung.Errorf(rung.ErrInvalid, "ttl %s out of range (1s to %s)", ttl, MaxShareTTL)
	}
	sb, err := c.Get(ctx, tenant, ref)
	if err != nil {
		return Share{}, err
	}
	now := time.Now().UTC()
	sh := store.Share{ID: rung.NewShareID(), Tenant: tenant, Sandbox: sb.ID, Port: port, CreatedAt: now, ExpiresAt: now.Add(ttl).Truncate(time.Second)}
	sig, err := c.shareSig(sh.ID, sh.Sandbox, port, sh.ExpiresAt.Unix())
	if err != nil {
		return Share{}, err
	}
	if err := c.st.CreateShare(ctx, sh); err != nil {
		return Share{}, err
	}
	c.journal(ctx, sb.ID, rung.EntryPortShared, PortShared{Expires: sh.ExpiresAt, Port: port, Share: sh.ID})
	out := shareOf(sh)
	out.Token = sh.ID + "." + strconv.FormatInt(sh.ExpiresAt.Unix(), 10) + "." + sig
	return out, nil
}

// errBadShare is every failed share check's answer, alike so a caller
// learns nothing about which part failed.
var errBadShare = rung.Errorf(rung.ErrUnauthenticated, "invalid, expired or revoked share token")

// CheckShare verifies a share token for sandbox sb's port and returns
// the share's tenant.
func (c *Controller) CheckShare(ctx context.Context, token string, sb rung.SandboxID, port int) (rung.TenantID, error) {
	parts := strings.Split(token, ".")
	if len(token) > 200 || len(parts) != 3 || !rung.ValidShareID(parts[0]) {
		return "", errBadShare
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || time.Now().Unix() >= exp {
		return "", errBadShare
	}
	want, err := c.shareSig(parts[0], sb, port, exp)
	if err != nil {
		return "", err
	}
	if !hmac.Equal([]byte(want), []byte(parts[2])) {
		return "", errBadShare
	}
	sh, err := c.st.GetShare(ctx, "", parts[0])
	if errors.Is(err, rung.ErrNotFound) || err == nil && (!sh.RevokedAt.IsZero() || sh.Sandbox != sb || sh.Port != port) {
		return "", errBadShare
	}
	if err != nil {
		return "", err
	}
	return sh.Tenant, nil
}

// ListShares returns the shares of tenant's sandbox ref, revoked and
// expired ones included.
func (c *Controller) ListShares(ctx context.Context, tenant rung.TenantID, ref string) ([]Share, error) {
	sb, err := c.Get(ctx, tenant, ref)
	if err != nil {
		return nil, err
	}
	rows, err := c.st.ListShares(ctx, tenant, sb.ID)
	out := make([]Share, len(rows))
	for i, r := range rows {
		out[i] = shareOf(r)
	}
	return out, err
}

// RevokeShare ends a share at once.
func (c *Controller) RevokeShare(ctx context.Context, tenant rung.TenantID, id string) error {
	if !rung.ValidShareID(id) {
		return rung.Errorf(rung.ErrInvalid, "invalid share id %q", clip(id))
	}
	sh, err := c.st.GetShare(ctx, tenant, id)
	if err != nil {
		return err
	}
	if err := c.st.RevokeShare(ctx, tenant, id, time.Now().UTC()); err != nil {
		return err
	}
	if sh.RevokedAt.IsZero() {
		c.journal(ctx, sh.Sandbox, rung.EntryPortShareRevoked, PortShareRevoked{Port: sh.Port, Share: id})
	}
	return nil
}
