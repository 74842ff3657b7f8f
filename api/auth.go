package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// caller is who made a request.
type caller struct {
	tenant rung.TenantID
	admin  bool
}

// HashToken returns the SHA-256 hash under which a token is stored.
func HashToken(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// NewToken returns a fresh bearer token: "rung_" and 160 random bits.
func NewToken() string {
	var b [20]byte
	rand.Read(b[:])
	return "rung_" + idEnc.EncodeToString(b[:])
}

// tokenCache remembers verified tokens by hash (tokens cannot be revoked
// yet, so an entry never goes stale).
type tokenCache struct {
	mu sync.Mutex // guards m
	m  map[[32]byte]caller
}

func (s *Server) authenticate(r *http.Request) (caller, error) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || tok == "" || len(tok) > 256 {
		return caller{}, rung.Errorf(rung.ErrUnauthenticated, "missing or malformed bearer token (Authorization: Bearer <token>)")
	}
	sum := HashToken(tok)
	s.tokens.mu.Lock()
	c, ok := s.tokens.m[sum]
	s.tokens.mu.Unlock()
	if ok {
		return c, nil
	}
	t, err := s.st.TokenByHash(r.Context(), sum)
	if errors.Is(err, rung.ErrNotFound) {
		return caller{}, rung.Errorf(rung.ErrUnauthenticated, "unknown token")
	}
	if err != nil {
		return caller{}, err
	}
	// The lookup is by hash; compare the hashes in constant time anyway,
	// so no store's index behaviour can leak timing about other tokens.
	if subtle.ConstantTimeCompare(t.Hash[:], sum[:]) != 1 {
		return caller{}, rung.Errorf(rung.ErrUnauthenticated, "unknown token")
	}
	c = caller{tenant: t.Tenant, admin: t.Admin}
	s.tokens.mu.Lock()
	s.tokens.m[sum] = c
	s.tokens.mu.Unlock()
	return c, nil
}

// DefaultTenant is the tenant the first admin token belongs to.
const DefaultTenant rung.TenantID = "default"

// Bootstrap makes sure an admin token exists: on first start (no file at
// path) it creates tenant [DefaultTenant] and an admin token, and writes
// the token to path with mode 0600. It returns the token and whether it
// was created now.
func Bootstrap(ctx context.Context, st store.Store, path string) (string, bool, error) {
	if b, err := os.ReadFile(path); err == nil {
		tok := strings.TrimSpace(string(b))
		if _, err := st.TokenByHash(ctx, HashToken(tok)); err == nil {
			return tok, false, nil
		}
	}
	if err := st.CreateTenant(ctx, store.Tenant{ID: DefaultTenant, CreatedAt: time.Now().UTC()}); err != nil && !errors.Is(err, rung.ErrExists) {
		return "", false, fmt.Errorf("bootstrap tenant: %w", err)
	}
	tok := NewToken()
	sum := HashToken(tok)
	if err := st.CreateToken(ctx, store.Token{ID: "tok_" + idEnc.EncodeToString(sum[:8]), Tenant: DefaultTenant, Hash: sum, Admin: true, CreatedAt: time.Now().UTC()}); err != nil {
		return "", false, fmt.Errorf("bootstrap admin token: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("write admin token: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", false, fmt.Errorf("write admin token: %w", err)
	}
	return tok, true, nil
}
