package controller

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// TokenRequest asks for an API bearer token.
type TokenRequest struct {
	Tenant rung.TenantID
	Admin  bool // the token may also manage tenants and tokens
	// E2B makes the token in the E2B SDK's API key form, "e2b_" and 40
	// hex digits (the SDK checks keys against ^e2b_[0-9a-f]+$). It is the
	// same kind of token in the same table: the form only changes how it
	// is spelled.
	E2B bool
}

// Token is an API bearer token just made. Bearer is the token itself: it
// is returned this once and never stored (the store keeps its SHA-256
// hash). Token prints and logs as "[redacted]" in place of Bearer.
type Token struct {
	ID     string // "tok_" + 13 base32 characters, for listing and revocation
	Tenant rung.TenantID
	Admin  bool
	Bearer string // "rung_" + 32 base32 characters, or "e2b_" + 40 hex digits (160 random bits)
}

// String returns the token's ID and tenant, never the bearer token.
func (t Token) String() string { return t.ID + " (tenant " + string(t.Tenant) + ") [redacted]" }

// LogValue implements [slog.LogValuer] without the bearer token.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", t.ID), slog.String("tenant", string(t.Tenant)),
		slog.Bool("admin", t.Admin), slog.String("bearer", "[redacted]"))
}

// tokenEnc is the lowercase base32 of rung's IDs.
var tokenEnc = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// maxTokenLen bounds a bearer token worth looking up; rung's are 37
// bytes, E2B-form ones 44.
const maxTokenLen = 256

// CreateToken makes a token for req.Tenant. A malformed tenant name is
// rung.ErrInvalid; a tenant that does not exist is rung.ErrNotFound.
func (c *Controller) CreateToken(ctx context.Context, req TokenRequest) (Token, error) {
	if !rung.ValidName(string(req.Tenant)) {
		return Token{}, rung.Errorf(rung.ErrInvalid, "invalid tenant name %q", clipName(string(req.Tenant)))
	}
	var b [20]byte
	rand.Read(b[:]) // never fails on Linux (Go 1.24+ crashes instead)
	tok := Token{Tenant: req.Tenant, Admin: req.Admin, Bearer: "rung_" + tokenEnc.EncodeToString(b[:])}
	if req.E2B {
		tok.Bearer = "e2b_" + hex.EncodeToString(b[:])
	}
	sum := sha256.Sum256([]byte(tok.Bearer))
	tok.ID = "tok_" + tokenEnc.EncodeToString(sum[:8])
	// The store's message names the tenant or the token: the caller's, so
	// no wrapping.
	err := c.st.CreateToken(ctx, store.Token{ID: tok.ID, Tenant: tok.Tenant, Hash: sum, Admin: tok.Admin, CreatedAt: time.Now().UTC()})
	if err != nil {
		return Token{}, err
	}
	return tok, nil
}

// clipName shortens an untrusted name for an error message as the API's
// own messages do (120 bytes; invalid UTF-8 replaced).
func clipName(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// Authenticate returns the tenant bearer token belongs to and whether it
// is an admin token. An unknown token is rung.ErrUnauthenticated; any
// other error is the store's. Verified tokens are remembered, so a
// token's next request costs a hash and a map lookup.
func (c *Controller) Authenticate(ctx context.Context, token string) (tenant rung.TenantID, admin bool, err error) {
	if token == "" || len(token) > maxTokenLen {
		return "", false, errUnknownToken()
	}
	sum := sha256.Sum256([]byte(token))
	if b, ok := c.tokens.get(sum); ok {
		return b.tenant, b.admin, nil
	}
	t, err := c.st.TokenByHash(ctx, sum)
	if errors.Is(err, rung.ErrNotFound) {
		return "", false, errUnknownToken()
	}
	if err != nil {
		return "", false, fmt.Errorf("look up token: %w", err)
	}
	// The lookup is by hash; compare the hashes in constant time anyway,
	// so no store's index behaviour can leak timing about other tokens.
	if subtle.ConstantTimeCompare(t.Hash[:], sum[:]) != 1 {
		return "", false, errUnknownToken()
	}
	c.tokens.put(sum, bearer{tenant: t.Tenant, admin: t.Admin})
	return t.Tenant, t.Admin, nil
}

func errUnknownToken() error { return rung.Errorf(rung.ErrUnauthenticated, "unknown token") }

// bearer is who a verified token speaks for.
type bearer struct {
	tenant rung.TenantID
	admin  bool
}

// tokenCache remembers verified tokens by hash. Tokens cannot be revoked
// yet, so an entry never goes stale, and it holds at most one entry per
// token in the store. The zero value is empty and ready; it is safe for
// concurrent use.
type tokenCache struct {
	mu sync.Mutex // guards m
	m  map[[32]byte]bearer
}

func (tc *tokenCache) get(sum [32]byte) (bearer, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	b, ok := tc.m[sum]
	return b, ok
}

func (tc *tokenCache) put(sum [32]byte, b bearer) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.m == nil {
		tc.m = map[[32]byte]bearer{}
	}
	tc.m[sum] = b
}

// DefaultTenant is the tenant the first admin token belongs to.
const DefaultTenant rung.TenantID = "default"

// Bootstrap makes sure an admin token exists. When the file at path holds
// a token the store knows, it returns that token; otherwise (first start,
// or a store made anew) it creates tenant [DefaultTenant] if missing and
// an admin token, and writes the token to path (one line, mode 0600,
// replaced atomically). It returns the token and whether it was created
// now.
func (c *Controller) Bootstrap(ctx context.Context, path string) (token string, created bool, err error) {
	if b, err := os.ReadFile(path); err == nil {
		tok := strings.TrimSpace(string(b))
		if _, err := c.st.TokenByHash(ctx, sha256.Sum256([]byte(tok))); err == nil {
			return tok, false, nil
		}
	}
	if _, err := c.CreateTenant(ctx, DefaultTenant); err != nil && !errors.Is(err, rung.ErrExists) {
		return "", false, fmt.Errorf("bootstrap tenant: %w", err)
	}
	tok, err := c.CreateToken(ctx, TokenRequest{Tenant: DefaultTenant, Admin: true})
	if err != nil {
		return "", false, fmt.Errorf("bootstrap admin token: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(tok.Bearer+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("write admin token: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", false, fmt.Errorf("write admin token: %w", err)
	}
	return tok.Bearer, true, nil
}
