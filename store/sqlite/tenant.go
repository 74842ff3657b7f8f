package sqlite

import (
	"context"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// CreateTenant implements [store.Store].
func (db *DB) CreateTenant(ctx context.Context, t store.Tenant) error {
	if !rung.ValidName(string(t.ID)) {
		return rung.Errorf(rung.ErrInvalid, "invalid tenant name %q", t.ID)
	}
	return db.write(ctx, func(tx tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tenants(id, created) VALUES(?, ?)`, string(t.ID), nanos(t.CreatedAt))
		return classify(err, "tenant "+string(t.ID))
	})
}

// GetTenant implements [store.Store].
func (db *DB) GetTenant(ctx context.Context, id rung.TenantID) (store.Tenant, error) {
	var t store.Tenant
	err := db.read(ctx, func(tx tx) error {
		var created int64
		err := tx.QueryRowContext(ctx, `SELECT created FROM tenants WHERE id = ?`, string(id)).Scan(&created)
		t = store.Tenant{ID: id, CreatedAt: fromNanos(created)}
		return classify(err, "tenant "+string(id))
	})
	return t, err
}

// ListTenants implements [store.Store].
func (db *DB) ListTenants(ctx context.Context) ([]store.Tenant, error) {
	var out []store.Tenant
	err := db.read(ctx, func(tx tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, created FROM tenants ORDER BY id`)
		if err != nil {
			return classify(err, "list tenants")
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var created int64
			if err := rows.Scan(&id, &created); err != nil {
				return classify(err, "list tenants")
			}
			out = append(out, store.Tenant{ID: rung.TenantID(id), CreatedAt: fromNanos(created)})
		}
		return classify(rows.Err(), "list tenants")
	})
	return out, err
}

// CreateToken implements [store.Store].
func (db *DB) CreateToken(ctx context.Context, t store.Token) error {
	return db.write(ctx, func(tx tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens(id, tenant, hash, admin, created) VALUES(?, ?, ?, ?, ?)`,
			t.ID, string(t.Tenant), t.Hash[:], t.Admin, nanos(t.CreatedAt))
		return classify(err, "token "+t.ID)
	})
}

// TokenByHash implements [store.Store].
func (db *DB) TokenByHash(ctx context.Context, hash [32]byte) (store.Token, error) {
	t := store.Token{Hash: hash}
	err := db.read(ctx, func(tx tx) error {
		var tenant string
		var created int64
		err := tx.QueryRowContext(ctx, `SELECT id, tenant, admin, created FROM tokens WHERE hash = ?`, hash[:]).
			Scan(&t.ID, &tenant, &t.Admin, &created)
		t.Tenant, t.CreatedAt = rung.TenantID(tenant), fromNanos(created)
		return classify(err, "token")
	})
	return t, err
}
