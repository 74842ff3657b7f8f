package sqlite

import (
	"context"
	"encoding/json"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// CreateShare implements [store.Store].
func (db *DB) CreateShare(ctx context.Context, sh store.Share) error {
	return db.write(ctx, func(tx tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO shares(id, tenant, sandbox, port, created, expires, revoked) VALUES(?, ?, ?, ?, ?, ?, ?)`,
			sh.ID, string(sh.Tenant), string(sh.Sandbox), sh.Port, nanos(sh.CreatedAt), nanos(sh.ExpiresAt), nanos(sh.RevokedAt))
		return classify(err, "share "+sh.ID)
	})
}

const shareCols = `id, tenant, sandbox, port, created, expires, revoked`

func scanShare(sc interface{ Scan(...any) error }) (store.Share, error) {
	var sh store.Share
	var tenant, sandbox string
	var created, expires, revoked int64
	err := sc.Scan(&sh.ID, &tenant, &sandbox, &sh.Port, &created, &expires, &revoked)
	sh.Tenant, sh.Sandbox = rung.TenantID(tenant), rung.SandboxID(sandbox)
	sh.CreatedAt, sh.ExpiresAt, sh.RevokedAt = fromNanos(created), fromNanos(expires), fromNanos(revoked)
	return sh, err
}

// GetShare implements [store.Store].
func (db *DB) GetShare(ctx context.Context, tenant rung.TenantID, id string) (store.Share, error) {
	var sh store.Share
	err := db.read(ctx, func(tx tx) error {
		var err error
		sh, err = scanShare(tx.QueryRowContext(ctx, `SELECT `+shareCols+` FROM shares WHERE id = ? AND (? = '' OR tenant = ?)`, id, string(tenant), string(tenant)))
		return classify(err, "share "+id)
	})
	return sh, err
}

// ListShares implements [store.Store].
func (db *DB) ListShares(ctx context.Context, tenant rung.TenantID, sandbox rung.SandboxID) ([]store.Share, error) {
	var out []store.Share
	err := db.read(ctx, func(tx tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+shareCols+` FROM shares WHERE sandbox = ? AND tenant = ? ORDER BY created, id`, string(sandbox), string(tenant))
		if err != nil {
			return classify(err, "list shares")
		}
		defer rows.Close()
		for rows.Next() {
			sh, err := scanShare(rows)
			if err != nil {
				return classify(err, "list shares")
			}
			out = append(out, sh)
		}
		return classify(rows.Err(), "list shares")
	})
	return out, err
}

// RevokeShare implements [store.Store].
func (db *DB) RevokeShare(ctx context.Context, tenant rung.TenantID, id string, at time.Time) error {
	return db.write(ctx, func(tx tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE shares SET revoked = CASE WHEN revoked = 0 THEN ? ELSE revoked END WHERE id = ? AND tenant = ?`, nanos(at), id, string(tenant))
		if err != nil {
			return classify(err, "revoke share "+id)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return rung.Errorf(rung.ErrNotFound, "share %s not found", id)
		}
		return nil
	})
}

// PutSecret implements [store.Store].
func (db *DB) PutSecret(ctx context.Context, sec store.SecretRow) (bool, error) {
	if !rung.ValidSecretName(sec.Name) {
		return false, rung.Errorf(rung.ErrInvalid, "invalid secret name %q", sec.Name)
	}
	hosts, err := json.Marshal(sec.Hosts)
	if err != nil {
		return false, err
	}
	created := false
	err = db.write(ctx, func(tx tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE secrets SET hosts = ?, placeholder = ?, sealed = ?, updated = ? WHERE tenant = ? AND name = ?`,
			string(hosts), sec.Placeholder, sec.Sealed, nanos(sec.UpdatedAt), string(sec.Tenant), sec.Name)
		if err != nil {
			return classify(err, "secret "+sec.Name)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			return nil
		}
		created = true
		_, err = tx.ExecContext(ctx, `INSERT INTO secrets(tenant, name, hosts, placeholder, sealed, created, updated) VALUES(?, ?, ?, ?, ?, ?, ?)`,
			string(sec.Tenant), sec.Name, string(hosts), sec.Placeholder, sec.Sealed, nanos(sec.CreatedAt), nanos(sec.UpdatedAt))
		return classify(err, "secret "+sec.Name)
	})
	return created, err
}

const secretCols = `tenant, name, hosts, placeholder, sealed, created, updated`

func scanSecret(sc interface{ Scan(...any) error }) (store.SecretRow, error) {
	var sec store.SecretRow
	var tenant, hosts string
	var created, updated int64
	if err := sc.Scan(&tenant, &sec.Name, &hosts, &sec.Placeholder, &sec.Sealed, &created, &updated); err != nil {
		return sec, err
	}
	sec.Tenant, sec.CreatedAt, sec.UpdatedAt = rung.TenantID(tenant), fromNanos(created), fromNanos(updated)
	return sec, json.Unmarshal([]byte(hosts), &sec.Hosts)
}

// GetSecret implements [store.Store].
func (db *DB) GetSecret(ctx context.Context, tenant rung.TenantID, name string) (store.SecretRow, error) {
	var sec store.SecretRow
	err := db.read(ctx, func(tx tx) error {
		var err error
		sec, err = scanSecret(tx.QueryRowContext(ctx, `SELECT `+secretCols+` FROM secrets WHERE tenant = ? AND name = ?`, string(tenant), name))
		return classify(err, "secret "+name)
	})
	return sec, err
}

// ListSecrets implements [store.Store].
func (db *DB) ListSecrets(ctx context.Context, tenant rung.TenantID) ([]store.SecretRow, error) {
	var out []store.SecretRow
	err := db.read(ctx, func(tx tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+secretCols+` FROM secrets WHERE tenant = ? ORDER BY name`, string(tenant))
		if err != nil {
			return classify(err, "list secrets")
		}
		defer rows.Close()
		for rows.Next() {
			sec, err := scanSecret(rows)
			if err != nil {
				return classify(err, "list secrets")
			}
			out = append(out, sec)
		}
		return classify(rows.Err(), "list secrets")
	})
	return out, err
}

// DeleteSecret implements [store.Store].
func (db *DB) DeleteSecret(ctx context.Context, tenant rung.TenantID, name string) error {
	return db.write(ctx, func(tx tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM secrets WHERE tenant = ? AND name = ?`, string(tenant), name)
		if err != nil {
			return classify(err, "delete secret "+name)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return rung.Errorf(rung.ErrNotFound, "secret %s not found", name)
		}
		return nil
	})
}
