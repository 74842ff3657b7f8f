package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// migrateSnapshots adds the columns snapshots gained with their API
// (issue 13) to a table made before: queries filter and sort on them, and
// the whole row stays in doc. The table had no writer before, so the
// defaults never describe a real snapshot.
func migrateSnapshots(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info('snapshots')`)
	if err != nil {
		return fmt.Errorf("migrate snapshots: %w", err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return fmt.Errorf("migrate snapshots: %w", err)
		}
		have[n] = true
	}
	rows.Close()
	for _, c := range []struct{ name, def string }{
		{"name", `TEXT NOT NULL DEFAULT ''`},
		{"state", `TEXT NOT NULL DEFAULT 'ready'`},
		{"labels", `TEXT NOT NULL DEFAULT '{}'`},
		{"expires", `INTEGER NOT NULL DEFAULT 0`},
		{"excl", `INTEGER NOT NULL DEFAULT 0`},
	} {
		if have[c.name] {
			continue
		}
		if _, err := db.ExecContext(ctx, `ALTER TABLE snapshots ADD COLUMN `+c.name+` `+c.def); err != nil {
			return fmt.Errorf("migrate snapshots: add %s: %w", c.name, err)
		}
	}
	_, err = db.ExecContext(ctx, `
CREATE UNIQUE INDEX IF NOT EXISTS snapshots_name ON snapshots(tenant, name) WHERE name <> '';
CREATE INDEX IF NOT EXISTS snapshots_expires ON snapshots(expires) WHERE expires > 0;
CREATE INDEX IF NOT EXISTS snapshots_sandbox ON snapshots(sandbox, created, id);`)
	if err != nil {
		return fmt.Errorf("migrate snapshots: %w", err)
	}
	return nil
}

func encodeSnapshot(s store.Snapshot) (doc, labels string, err error) {
	d, err := json.Marshal(s)
	if err != nil {
		return "", "", fmt.Errorf("encode snapshot %s: %w", s.ID, err)
	}
	l := s.Labels
	if l == nil {
		l = map[string]string{}
	}
	lb, err := json.Marshal(l)
	if err != nil {
		return "", "", fmt.Errorf("encode snapshot %s labels: %w", s.ID, err)
	}
	return string(d), string(lb), nil
}

func scanSnapshot(sc interface{ Scan(...any) error }) (store.Snapshot, error) {
	var doc string
	if err := sc.Scan(&doc); err != nil {
		return store.Snapshot{}, err
	}
	var s store.Snapshot
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		return store.Snapshot{}, fmt.Errorf("decode snapshot: %w", err)
	}
	return s, nil
}

func snapshotName(s store.Snapshot) string {
	if s.Name != "" {
		return "snapshot " + s.Name
	}
	return "snapshot " + string(s.ID)
}

// CreateSnapshot implements [store.Store].
func (db *DB) CreateSnapshot(ctx context.Context, s store.Snapshot, maxPerTenant int) error {
	doc, labels, err := encodeSnapshot(s)
	if err != nil {
		return err
	}
	return db.write(ctx, func(tx tx) error {
		if maxPerTenant > 0 {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM snapshots WHERE tenant = ?`, string(s.Tenant)).Scan(&n); err != nil {
				return classify(err, "count snapshots")
			}
			if n >= maxPerTenant {
				return &rung.LimitError{Limit: "snapshots", Max: int64(maxPerTenant)}
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO snapshots(id, tenant, sandbox, created, doc, name, state, labels, expires, excl)
			VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			string(s.ID), string(s.Tenant), string(s.Sandbox), nanos(s.CreatedAt), doc, s.Name, string(s.State), labels,
			nanos(s.ExpiresAt), s.ExclusiveBytes)
		return classify(err, snapshotName(s))
	})
}

// GetSnapshot implements [store.Store].
func (db *DB) GetSnapshot(ctx context.Context, tenant rung.TenantID, id rung.SnapshotID) (store.Snapshot, error) {
	var s store.Snapshot
	err := db.read(ctx, func(tx tx) error {
		var err error
		s, err = scanSnapshot(tx.QueryRowContext(ctx, `SELECT doc FROM snapshots WHERE id = ? AND (? = '' OR tenant = ?)`,
			string(id), string(tenant), string(tenant)))
		return classify(err, "snapshot "+string(id))
	})
	return s, err
}

// SnapshotByName implements [store.Store].
func (db *DB) SnapshotByName(ctx context.Context, tenant rung.TenantID, name string) (store.Snapshot, error) {
	var s store.Snapshot
	err := db.read(ctx, func(tx tx) error {
		var err error
		s, err = scanSnapshot(tx.QueryRowContext(ctx, `SELECT doc FROM snapshots WHERE tenant = ? AND name = ? AND name <> ''`,
			string(tenant), name))
		return classify(err, "snapshot "+name)
	})
	return s, err
}

// ListSnapshots implements [store.Store].
func (db *DB) ListSnapshots(ctx context.Context, f store.SnapshotFilter) ([]store.Snapshot, error) {
	var where []string
	var args []any
	add := func(cond string, a ...any) { where, args = append(where, cond), append(args, a...) }
	if f.Tenant != "" {
		add("tenant = ?", string(f.Tenant))
	}
	if f.Sandbox != "" {
		add("sandbox = ?", string(f.Sandbox))
	}
	if f.Name != "" {
		add("name = ?", f.Name)
	}
	for k, v := range f.Labels {
		add("EXISTS (SELECT 1 FROM json_each(snapshots.labels) WHERE key = ? AND value = ?)", k, v)
	}
	cmp, order := ">", " ORDER BY created, id"
	if f.Newest {
		cmp, order = "<", " ORDER BY created DESC, id DESC"
	}
	if f.After != "" {
		add("(created, id) "+cmp+" (?, ?)", nanos(f.AfterCreated), string(f.After))
	}
	q := `SELECT doc FROM snapshots`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += order + " LIMIT ?" // LIMIT as a parameter: one statement per filter shape
	limit := -1
	if f.Limit > 0 {
		limit = f.Limit
	}
	args = append(args, limit)
	var out []store.Snapshot
	err := db.read(ctx, func(tx tx) error {
		var err error
		out, err = querySnapshots(ctx, tx, q, args...)
		return err
	})
	return out, err
}

func querySnapshots(ctx context.Context, tx tx, q string, args ...any) ([]store.Snapshot, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, classify(err, "list snapshots")
	}
	defer rows.Close()
	var out []store.Snapshot
	for rows.Next() {
		s, err := scanSnapshot(rows)
		if err != nil {
			return nil, classify(err, "list snapshots")
		}
		out = append(out, s)
	}
	return out, classify(rows.Err(), "list snapshots")
}

// UpdateSnapshot implements [store.Store].
func (db *DB) UpdateSnapshot(ctx context.Context, s store.Snapshot) error {
	return db.write(ctx, func(tx tx) error {
		old, err := scanSnapshot(tx.QueryRowContext(ctx, `SELECT doc FROM snapshots WHERE id = ?`, string(s.ID)))
		if err != nil {
			return classify(err, "snapshot "+string(s.ID))
		}
		n := old
		n.State, n.SizeBytes, n.ExclusiveBytes, n.Labels = s.State, s.SizeBytes, s.ExclusiveBytes, s.Labels
		n.ExpiresAt, n.Pinned, n.TTL = s.ExpiresAt, s.Pinned, s.TTL
		doc, labels, err := encodeSnapshot(n)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE snapshots SET doc = ?, state = ?, labels = ?, expires = ?, excl = ? WHERE id = ?`,
			doc, string(n.State), labels, nanos(n.ExpiresAt), n.ExclusiveBytes, string(s.ID))
		return classify(err, snapshotName(n))
	})
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

// SnapshotUsage implements [store.Store].
func (db *DB) SnapshotUsage(ctx context.Context, tenant rung.TenantID) (int, int64, error) {
	var n int
	var bytes int64
	err := db.read(ctx, func(tx tx) error {
		return classify(tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(excl), 0) FROM snapshots WHERE tenant = ?`,
			string(tenant)).Scan(&n, &bytes), "snapshot usage")
	})
	return n, bytes, err
}

// NextSnapshotExpiry implements [store.Store].
func (db *DB) NextSnapshotExpiry(ctx context.Context) (time.Time, bool, error) {
	var at sql.NullInt64
	err := db.read(ctx, func(tx tx) error {
		return classify(tx.QueryRowContext(ctx, `SELECT min(expires) FROM snapshots WHERE expires > 0`).Scan(&at), "next snapshot expiry")
	})
	if err != nil || !at.Valid {
		return time.Time{}, false, err
	}
	return fromNanos(at.Int64), true, nil
}

// ExpiredSnapshots implements [store.Store].
func (db *DB) ExpiredSnapshots(ctx context.Context, now time.Time, limit int) ([]store.Snapshot, error) {
	var out []store.Snapshot
	err := db.read(ctx, func(tx tx) error {
		var err error
		out, err = querySnapshots(ctx, tx, `SELECT doc FROM snapshots WHERE expires > 0 AND expires <= ? ORDER BY expires LIMIT ?`,
			now.UnixNano(), limit)
		return err
	})
	return out, err
}
