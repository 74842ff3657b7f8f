package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"rung.dev/rung/wire"
)

// Secrets, shared ports and the ports proxy.

// Secret describes a tenant's secret (never its value).
type Secret = wire.Secret

// Share is a signed, expiring, revocable URL to a sandbox's port.
type Share = wire.Share

// PutSecret creates or replaces the tenant's secret name, to be sent to
// hosts only, and reports whether it was new. The value is never
// returned by the server.
func (c *Client) PutSecret(ctx context.Context, name, value string, hosts []string) (Secret, error) {
	if hosts == nil {
		hosts = []string{}
	}
	var out Secret
	err := c.do(ctx, http.MethodPut, "/v1/secrets/"+url.PathEscape(name), nil, wire.SecretRequest{Value: value, Hosts: hosts}, &out)
	return out, err
}

// GetSecret describes a secret.
func (c *Client) GetSecret(ctx context.Context, name string) (Secret, error) {
	var out Secret
	err := c.do(ctx, http.MethodGet, "/v1/secrets/"+url.PathEscape(name), nil, nil, &out)
	return out, err
}

// ListSecrets lists the tenant's secrets.
func (c *Client) ListSecrets(ctx context.Context) ([]Secret, error) {
	var out wire.SecretList
	err := c.do(ctx, http.MethodGet, "/v1/secrets", nil, nil, &out)
	return out.Secrets, err
}

// DeleteSecret deletes a secret.
func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/secrets/"+url.PathEscape(name), nil, nil, nil)
}

// SharePort makes a URL that opens port of sandbox id without a token
// until ttl passes (0: one day) or it is revoked. Its URL field is the
// only copy of the token.
func (c *Client) SharePort(ctx context.Context, id string, port int, ttl time.Duration) (Share, error) {
	var out Share
	err := c.do(ctx, http.MethodPost, "/v1/sandboxes/"+url.PathEscape(id)+"/shares", nil, wire.ShareRequest{Port: port, TTLMS: ttl.Milliseconds()}, &out)
	return out, err
}

// Shares lists a sandbox's shares.
func (c *Client) Shares(ctx context.Context, id string) ([]Share, error) {
	var out wire.ShareList
	err := c.do(ctx, http.MethodGet, "/v1/sandboxes/"+url.PathEscape(id)+"/shares", nil, nil, &out)
	return out.Shares, err
}

// RevokeShare ends a share at once.
func (c *Client) RevokeShare(ctx context.Context, shareID string) error {
	return c.do(ctx, http.MethodDelete, "/v1/shares/"+url.PathEscape(shareID), nil, nil, nil)
}

// PortURL is the path-based URL of port of sandbox id on this server; a
// request to it needs the client's bearer token.
func (c *Client) PortURL(id string, port int) string {
	return c.base + "/v1/sandboxes/" + url.PathEscape(id) + "/ports/" + strconv.Itoa(port) + "/"
}
