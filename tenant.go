package rung

import "time"

// Tenant is a customer of the server: it owns sandboxes, snapshots,
// secrets and API tokens, and every lookup is scoped by it. Its ID is a
// name an admin chose (see [ValidName]).
type Tenant struct {
	ID        TenantID  `json:"id"`
	CreatedAt time.Time `json:"created_at"`
}
