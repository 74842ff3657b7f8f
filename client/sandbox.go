package client

import (
	"context"
	"net/url"
	"strconv"

	"rung.dev/rung"
	"rung.dev/rung/wire"
)

// Create makes a sandbox.
func (c *Client) Create(ctx context.Context, req CreateRequest) (Sandbox, error) {
	var sb Sandbox
	return sb, c.do(ctx, "POST", "/v1/sandboxes", nil, req, &sb)
}

// Get returns a sandbox by ID or name.
func (c *Client) Get(ctx context.Context, id string) (Sandbox, error) {
	var sb Sandbox
	return sb, c.do(ctx, "GET", sbPath(id), nil, nil, &sb)
}

// ListOptions filter [Client.List].
type ListOptions struct {
	Labels map[string]string
	State  rung.State
	Limit  int
	After  string // a page's next cursor (ListPage): the list goes on after it
}

// List returns the caller's sandboxes, oldest first (the first o.Limit
// of them after o.After, when set).
func (c *Client) List(ctx context.Context, o ListOptions) ([]Sandbox, error) {
	l, _, err := c.ListPage(ctx, o)
	return l, err
}

// ListPage returns a page of the caller's sandboxes, oldest first, and
// the cursor of the next page ("" after the last): pass it as o.After.
func (c *Client) ListPage(ctx context.Context, o ListOptions) ([]Sandbox, string, error) {
	q := url.Values{}
	for k, v := range o.Labels {
		q.Add("label", k+"="+v)
	}
	if o.State != "" {
		q.Set("state", string(o.State))
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.After != "" {
		q.Set("after", o.After)
	}
	var out wire.SandboxList
	err := c.do(ctx, "GET", "/v1/sandboxes", q, nil, &out)
	return out.Sandboxes, out.Next, err
}

// Update changes a sandbox's labels or idle timeout.
func (c *Client) Update(ctx context.Context, id string, req UpdateRequest) (Sandbox, error) {
	var sb Sandbox
	return sb, c.do(ctx, "PATCH", sbPath(id), nil, req, &sb)
}

// Delete removes a sandbox and its workspace.
func (c *Client) Delete(ctx context.Context, id string) error {
	return c.do(ctx, "DELETE", sbPath(id), nil, nil, nil)
}

// CreateTenant adds a tenant (admin token only).
func (c *Client) CreateTenant(ctx context.Context, name string) (Tenant, error) {
	var t Tenant
	return t, c.do(ctx, "POST", "/v1/tenants", nil, map[string]string{"name": name}, &t)
}

// ListTenants lists tenants (admin token only).
func (c *Client) ListTenants(ctx context.Context) ([]Tenant, error) {
	var out struct {
		Tenants []Tenant `json:"tenants"`
	}
	return out.Tenants, c.do(ctx, "GET", "/v1/tenants", nil, nil, &out)
}

// CreateToken makes a token for tenant (admin token only).
func (c *Client) CreateToken(ctx context.Context, tenant string, admin bool) (Token, error) {
	var t Token
	return t, c.do(ctx, "POST", "/v1/tokens", nil, map[string]any{"tenant": tenant, "admin": admin}, &t)
}

// CreateE2BKey makes a token for tenant in the E2B SDK's API key form
// ("e2b_" + hex), for E2B_API_KEY (admin token only). It is a rung token
// like any other.
func (c *Client) CreateE2BKey(ctx context.Context, tenant string) (Token, error) {
	var t Token
	return t, c.do(ctx, "POST", "/v1/tokens", nil, map[string]any{"tenant": tenant, "format": "e2b"}, &t)
}
