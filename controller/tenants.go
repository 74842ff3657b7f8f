package controller

import (
	"context"
	"time"

	"rung.dev/rung"
)

// CreateTenant adds tenant id and returns it. A name [rung.ValidName]
// refuses is rung.ErrInvalid; a name in use is rung.ErrExists. Safe for
// concurrent use, like every method below.
func (c *Controller) CreateTenant(ctx context.Context, id rung.TenantID) (rung.Tenant, error) {
	t := rung.Tenant{ID: id, CreatedAt: time.Now().UTC()}
	// The store's message ("invalid tenant name", "tenant x already
	// exists") is the caller's: no wrapping.
	if err := c.st.CreateTenant(ctx, t); err != nil {
		return rung.Tenant{}, err
	}
	return t, nil
}

// ListTenants returns every tenant, ordered by name.
func (c *Controller) ListTenants(ctx context.Context) ([]rung.Tenant, error) {
	return c.st.ListTenants(ctx)
}
