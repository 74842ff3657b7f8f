package controller

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// Secrets are a tenant's credentials for the egress proxy to put into
// requests (docs/API.md, "Secrets"). The value is sealed with AES-256-GCM
// under a key derived from the server's key, bound to its tenant and
// name, before it reaches the store; the API never returns it, and
// nothing of it enters a sandbox: a sandbox's env gets the secret's
// placeholder, which the proxy replaces on the way out to the secret's
// hosts only.

// MaxSecretBytes bounds one secret's value.
const MaxSecretBytes = 64 << 10

// maxSecretHosts bounds the hosts one secret is bound to.
const maxSecretHosts = 64

// subkey derives a purpose's key from the server's key.
func (c *Controller) subkey(purpose string) ([]byte, error) {
	if len(c.cfg.Key) < 32 {
		return nil, rung.Errorf(rung.ErrUnavailable, "this server has no secret key configured")
	}
	m := hmac.New(sha256.New, c.cfg.Key)
	m.Write([]byte("rung " + purpose + " v1"))
	return m.Sum(nil), nil
}

func (c *Controller) secretAEAD() (cipher.AEAD, error) {
	k, err := c.subkey("secrets")
	if err != nil {
		return nil, err
	}
	b, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// secretAD binds a sealed value to its row: a value copied to another
// tenant's or name's row does not open.
func secretAD(tenant rung.TenantID, name string) []byte {
	return []byte(string(tenant) + "\x00" + name)
}

// hostPattern is a host name, or "*." and one.
var hostPattern = regexp.MustCompile(`^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)

// ValidHostPattern reports whether p is an exact host name or a "*."
// wildcard over one, in lower case.
func ValidHostPattern(p string) bool { return len(p) <= 253 && hostPattern.MatchString(p) }

// PutSecret creates or replaces tenant's secret name with value, bound to
// hosts, and reports whether it is new. A replaced secret keeps its
// placeholder, so sandboxes holding it keep working.
func (c *Controller) PutSecret(ctx context.Context, tenant rung.TenantID, name string, value []byte, hosts []string) (rung.Secret, bool, error) {
	if !rung.ValidSecretName(name) {
		return rung.Secret{}, false, rung.Errorf(rung.ErrInvalid, "invalid secret name %q: 1 to 64 of [A-Za-z0-9_], not starting with a digit", clip(name))
	}
	if len(value) == 0 {
		return rung.Secret{}, false, rung.Errorf(rung.ErrInvalid, "secret %s: empty value", name)
	}
	if len(value) > MaxSecretBytes {
		return rung.Secret{}, false, &rung.LimitError{Limit: rung.Limit("secret_bytes"), Max: MaxSecretBytes, TooLarge: true}
	}
	if len(hosts) > maxSecretHosts {
		return rung.Secret{}, false, rung.Errorf(rung.ErrInvalid, "secret %s: %d hosts, at most %d", name, len(hosts), maxSecretHosts)
	}
	for _, h := range hosts {
		if !ValidHostPattern(h) {
			return rung.Secret{}, false, rung.Errorf(rung.ErrInvalid, "secret %s: invalid host %q (want a lower-case host name or *.name)", name, clip(h))
		}
	}
	aead, err := c.secretAEAD()
	if err != nil {
		return rung.Secret{}, false, err
	}
	now := time.Now().UTC()
	sec := rung.Secret{Name: name, Tenant: tenant, Hosts: append([]string{}, hosts...), CreatedAt: now, UpdatedAt: now}
	if old, err := c.st.GetSecret(ctx, tenant, name); err == nil {
		sec.Placeholder = old.Placeholder
	} else if !errors.Is(err, rung.ErrNotFound) {
		return rung.Secret{}, false, err
	}
	if sec.Placeholder == "" {
		var b [16]byte
		rand.Read(b[:])
		sec.Placeholder = "rung_secret_" + hex.EncodeToString(b[:])
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(value)+aead.Overhead())
	rand.Read(nonce)
	sealed := aead.Seal(nonce, nonce, value, secretAD(tenant, name))
	created, err := c.st.PutSecret(ctx, store.SecretRow{Secret: sec, Sealed: sealed})
	if err != nil {
		return rung.Secret{}, false, err
	}
	if !created {
		if got, err := c.st.GetSecret(ctx, tenant, name); err == nil {
			sec.CreatedAt = got.CreatedAt
		}
	}
	return sec, created, nil
}

// GetSecret returns a secret's description, never its value.
func (c *Controller) GetSecret(ctx context.Context, tenant rung.TenantID, name string) (rung.Secret, error) {
	row, err := c.st.GetSecret(ctx, tenant, name)
	return row.Secret, err
}

// ListSecrets returns tenant's secrets' descriptions, by name.
func (c *Controller) ListSecrets(ctx context.Context, tenant rung.TenantID) ([]rung.Secret, error) {
	rows, err := c.st.ListSecrets(ctx, tenant)
	out := make([]rung.Secret, len(rows))
	for i, r := range rows {
		out[i] = r.Secret
	}
	return out, err
}

// DeleteSecret removes a secret. Sandboxes holding its placeholder keep
// it; the proxy no longer replaces it.
func (c *Controller) DeleteSecret(ctx context.Context, tenant rung.TenantID, name string) error {
	return c.st.DeleteSecret(ctx, tenant, name)
}

// SecretValue opens tenant's secret name for the egress proxy: the value,
// the hosts it may be sent to, and its placeholder. Nothing else may call
// it, and what it returns must not reach a sandbox, the journal or a log.
func (c *Controller) SecretValue(ctx context.Context, tenant rung.TenantID, name string) (value []byte, sec rung.Secret, err error) {
	row, err := c.st.GetSecret(ctx, tenant, name)
	if err != nil {
		return nil, rung.Secret{}, err
	}
	aead, err := c.secretAEAD()
	if err != nil {
		return nil, rung.Secret{}, err
	}
	if len(row.Sealed) < aead.NonceSize() {
		return nil, rung.Secret{}, fmt.Errorf("secret %s: sealed value too short", name)
	}
	value, err = aead.Open(nil, row.Sealed[:aead.NonceSize()], row.Sealed[aead.NonceSize():], secretAD(tenant, name))
	if err != nil {
		return nil, rung.Secret{}, fmt.Errorf("secret %s does not open with this server's key", name)
	}
	return value, row.Secret, nil
}

// secretRef is {{secret:NAME}} in an env value or a header rule.
var secretRef = regexp.MustCompile(`\{\{secret:([^}]*)\}\}`)

// sandboxEnv returns a copy of a create's env with secrets' placeholders
// filled in (see fillPlaceholders).
func (c *Controller) sandboxEnv(ctx context.Context, tenant rung.TenantID, env map[string]string) (map[string]string, error) {
	if env == nil {
		return nil, nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = v
	}
	return out, c.fillPlaceholders(ctx, tenant, out)
}

// fillPlaceholders replaces every {{secret:NAME}} in env's values with
// the secret's placeholder; an unknown or malformed name is
// rung.ErrInvalid naming it.
func (c *Controller) fillPlaceholders(ctx context.Context, tenant rung.TenantID, env map[string]string) error {
	for k, v := range env {
		if !strings.Contains(v, "{{secret:") {
			continue
		}
		var ferr error
		env[k] = secretRef.ReplaceAllStringFunc(v, func(m string) string {
			name := secretRef.FindStringSubmatch(m)[1]
			row, err := c.st.GetSecret(ctx, tenant, name)
			if err != nil {
				if ferr == nil {
					if errors.Is(err, rung.ErrNotFound) {
						ferr = rung.Errorf(rung.ErrInvalid, "env %s: no secret named %q", k, clip(name))
					} else {
						ferr = err
					}
				}
				return m
			}
			return row.Placeholder
		})
		if ferr != nil {
			return ferr
		}
	}
	return nil
}
