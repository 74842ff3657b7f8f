package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"rung.dev/rung"
)

// CreateSnapshot implements [store.Store].
func (db *DB) CreateSnapshot(ctx context.Context, s rung.Snapshot) error {
	doc, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode snapshot %s: %w", s.ID, err)
	}
	return db.write(ctx, func(tx tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO snapshots(id, tenant, sandbox, created, doc) VALUES(?, ?, ?, ?, ?)`,
			string(s.ID), string(s.Tenant), string(s.Sandbox), nanos(s.CreatedAt), string(doc))
		return classify(err, "snapshot "+string(s.ID))
	})
}

// GetSnapshot implements [store.Store].
func (db *DB) GetSnapshot(ctx context.Context, tenant rung.TenantID, id rung.SnapshotID) (rung.Snapshot, error) {
	var s rung.Snapshot
	err := db.read(ctx, func(tx tx) error {
		var doc string
		err := tx.QueryRowContext(ctx, `SELECT doc FROM snapshots WHERE id = ? AND (? = '' OR tenant = ?)`,
			string(id), string(tenant), string(tenant)).Scan(&doc)
		if err != nil {
			return classify(err, "snapshot "+string(id))
		}
		return json.Unmarshal([]byte(doc), &s)
	})
	return s, err
}

// ListSnapshots implements [store.Store].
func (db *DB) ListSnapshots(ctx context.Context, tenant rung.TenantID, sandbox rung.SandboxID) ([]rung.Snapshot, error) {
	var out []rung.Snapshot
	err := db.read(ctx, func(tx tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT doc FROM snapshots WHERE tenant = ? AND (? = '' OR sandbox = ?) ORDER BY created, id`,
			string(tenant), string(sandbox), string(sandbox))
		if err != nil {
			return classify(err, "list snapshots")
		}
		defer rows.Close()
		for rows.Next() {
			var doc string
			var s rung.Snapshot
			if err := rows.Scan(&doc); err != nil {
				return classify(err, "list snapshots")
			}
			if err := json.Unmarshal([]byte(doc), &s); err != nil {
				return fmt.Errorf("decode snapshot: %w", err)
			}
			out = append(out, s)
		}
		return classify(rows.Err(), "list snapshots")
	})
	return out, err
}

// DeleteSnapshot implements [store.Store].
func (db *DB) DeleteSnapshot(ctx context.Context, id rung.SnapshotID) error {
	return db.write(ctx, func(tx tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM snapshots WHERE id = ?`, string(id))
		if err != nil {
			return classify(err, "delete snapshot "+string(id))
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return rung.Errorf(rung.ErrNotFound, "snapshot %s not found", id)
		}
		return nil
	})
}
