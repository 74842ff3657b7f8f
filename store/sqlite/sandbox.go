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

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// CreateSandbox implements [store.Store].
func (db *DB) CreateSandbox(ctx context.Context, s store.Sandbox, maxPerTenant int, evs ...store.Event) error {
	doc, labels, err := encodeSandbox(s)
	if err != nil {
		return err
	}
	what := "sandbox " + string(s.ID)
	if s.Name != "" {
		what = "sandbox " + s.Name
	}
	return db.write(ctx, func(tx tx) error {
		if maxPerTenant > 0 {
			var n int
			err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sandboxes WHERE tenant = ?`, string(s.Tenant)).Scan(&n)
			if err != nil {
				return classify(err, "count sandboxes")
			}
			if n >= maxPerTenant {
				return &rung.LimitError{Limit: "sandboxes", Max: int64(maxPerTenant)}
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO sandboxes(id, tenant, name, state, labels, doc, created, expires, idle_at, alarm)
			VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			string(s.ID), string(s.Tenant), s.Name, string(s.State), labels, doc,
			nanos(s.CreatedAt), nanos(s.ExpiresAt), nanos(s.IdleAt), nanos(s.Alarm()))
		if err != nil || len(evs) == 0 {
			return classify(err, what)
		}
		_, err = appendEvents(ctx, tx, s.ID, evs)
		return err
	})
}

func encodeSandbox(s store.Sandbox) (doc, labels string, err error) {
	d, err := json.Marshal(s.Sandbox)
	if err != nil {
		return "", "", fmt.Errorf("encode sandbox %s: %w", s.ID, err)
	}
	l := s.Labels
	if l == nil {
		l = map[string]string{}
	}
	lb, err := json.Marshal(l)
	if err != nil {
		return "", "", fmt.Errorf("encode sandbox %s labels: %w", s.ID, err)
	}
	return string(d), string(lb), nil
}

const sandboxCols = `doc, state, expires, idle_at, execs_isolate, execs_container`

func scanSandbox(sc interface{ Scan(...any) error }) (store.Sandbox, error) {
	var doc, state string
	var expires, idle int64
	var execs rung.ExecCounts
	if err := sc.Scan(&doc, &state, &expires, &idle, &execs.Isolate, &execs.Container); err != nil {
		return store.Sandbox{}, err
	}
	var s store.Sandbox
	if err := json.Unmarshal([]byte(doc), &s.Sandbox); err != nil {
		return store.Sandbox{}, fmt.Errorf("decode sandbox: %w", err)
	}
	s.State = rung.State(state)
	s.ExpiresAt, s.IdleAt = fromNanos(expires), fromNanos(idle)
	s.Execs = execs
	return s, nil
}

// GetSandbox implements [store.Store].
func (db *DB) GetSandbox(ctx context.Context, tenant rung.TenantID, id rung.SandboxID) (store.Sandbox, error) {
	var s store.Sandbox
	err := db.read(ctx, func(tx tx) error {
		var err error
		s, err = scanSandbox(tx.QueryRowContext(ctx, `SELECT `+sandboxCols+` FROM sandboxes WHERE id = ? AND (? = '' OR tenant = ?)`,
			string(id), string(tenant), string(tenant)))
		return classify(err, "sandbox "+string(id))
	})
	return s, err
}

// SandboxByName implements [store.Store].
func (db *DB) SandboxByName(ctx context.Context, tenant rung.TenantID, name string) (store.Sandbox, error) {
	var s store.Sandbox
	err := db.read(ctx, func(tx tx) error {
		var err error
		s, err = scanSandbox(tx.QueryRowContext(ctx, `SELECT `+sandboxCols+` FROM sandboxes WHERE tenant = ? AND name = ? AND name <> ''`,
			string(tenant), name))
		return classify(err, "sandbox "+name)
	})
	return s, err
}

// SandboxStates implements [store.Store].
func (db *DB) SandboxStates(ctx context.Context) (map[rung.State]int, error) {
	out := map[rung.State]int{}
	err := db.read(ctx, func(tx tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT state, count(*) FROM sandboxes GROUP BY state`)
		if err != nil {
			return classify(err, "count sandboxes")
		}
		defer rows.Close()
		for rows.Next() {
			var state string
			var n int
			if err := rows.Scan(&state, &n); err != nil {
				return classify(err, "count sandboxes")
			}
			out[rung.State(state)] = n
		}
		return classify(rows.Err(), "count sandboxes")
	})
	return out, err
}

// ListSandboxes implements [store.Store].
func (db *DB) ListSandboxes(ctx context.Context, f store.Filter) ([]store.Sandbox, error) {
	var where []string
	var args []any
	if f.Tenant != "" {
		where, args = append(where, "tenant = ?"), append(args, string(f.Tenant))
	}
	if f.State != "" {
		where, args = append(where, "state = ?"), append(args, string(f.State))
	}
	for k, v := range f.Labels {
		where = append(where, "EXISTS (SELECT 1 FROM json_each(sandboxes.labels) WHERE key = ? AND value = ?)")
		args = append(args, k, v)
	}
	if f.After != nil {
		cmp := ">"
		if f.Desc {
			cmp = "<"
		}
		where, args = append(where, "(created, id) "+cmp+" (?, ?)"), append(args, nanos(f.After.Created), string(f.After.ID))
	}
	if !f.CreatedFrom.IsZero() {
		where, args = append(where, "created >= ?"), append(args, nanos(f.CreatedFrom))
	}
	q := `SELECT ` + sandboxCols + ` FROM sandboxes`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	// LIMIT is a parameter so the statement cache sees one query per
	// filter shape, not one per limit value.
	if f.Desc {
		q += " ORDER BY created DESC, id DESC LIMIT ?"
	} else {
		q += " ORDER BY created, id LIMIT ?"
	}
	limit := -1
	if f.Limit > 0 {
		limit = f.Limit
	}
	args = append(args, limit)
	var out []store.Sandbox
	err := db.read(ctx, func(tx tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return classify(err, "list sandboxes")
		}
		defer rows.Close()
		for rows.Next() {
			s, err := scanSandbox(rows)
			if err != nil {
				return classify(err, "list sandboxes")
			}
			out = append(out, s)
		}
		return classify(rows.Err(), "list sandboxes")
	})
	return out, err
}

// UpdateSandbox implements [store.Store].
func (db *DB) UpdateSandbox(ctx context.Context, s store.Sandbox) error {
	return db.write(ctx, func(tx tx) error {
		old, err := scanSandbox(tx.QueryRowContext(ctx, `SELECT `+sandboxCols+` FROM sandboxes WHERE id = ?`, string(s.ID)))
		if err != nil {
			return classify(err, "sandbox "+string(s.ID))
		}
		n := old
		n.Name, n.Labels, n.State = s.Name, s.Labels, s.State
		n.IdleTimeout, n.TTL, n.UpdatedAt = s.IdleTimeout, s.TTL, s.UpdatedAt
		n.ExpiresAt, n.IdleAt = s.ExpiresAt, s.IdleAt
		n.Origin = s.Origin   // a rollback changes where the files came from
		n.Network = s.Network // changed on the running sandbox (PATCH, E2B's updateNetwork)
		doc, labels, err := encodeSandbox(n)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE sandboxes SET name = ?, state = ?, labels = ?, doc = ?, expires = ?, idle_at = ?, alarm = ?
			WHERE id = ?`, n.Name, string(n.State), labels, doc, nanos(n.ExpiresAt), nanos(n.IdleAt), nanos(n.Alarm()), string(s.ID))
		return classify(err, "sandbox "+n.Name)
	})
}

// PostponeExpiry implements [store.Store].
func (db *DB) PostponeExpiry(ctx context.Context, id rung.SandboxID, at time.Time) error {
	return db.write(ctx, func(tx tx) error {
		n, err := scanSandbox(tx.QueryRowContext(ctx, `SELECT `+sandboxCols+` FROM sandboxes WHERE id = ?`, string(id)))
		if err != nil {
			return classify(err, "sandbox "+string(id))
		}
		n.ExpiresAt = at
		doc, _, err := encodeSandbox(n)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE sandboxes SET doc = ?, expires = ?, alarm = ? WHERE id = ?`,
			doc, nanos(n.ExpiresAt), nanos(n.Alarm()), string(id))
		return classify(err, "sandbox "+string(id))
	})
}

// DeleteSandbox implements [store.Store].
func (db *DB) DeleteSandbox(ctx context.Context, id rung.SandboxID) error {
	return db.write(ctx, func(tx tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM sandboxes WHERE id = ?`, string(id))
		if err != nil {
			return classify(err, "delete sandbox "+string(id))
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return rung.Errorf(rung.ErrNotFound, "sandbox %s not found", id)
		}
		for _, t := range []string{"running", "execs", "events", "effects", "shares"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+t+` WHERE sandbox = ?`, string(id)); err != nil {
				return classify(err, "delete sandbox "+string(id))
			}
		}
		return nil
	})
}

// NextAlarm implements [store.Store].
func (db *DB) NextAlarm(ctx context.Context) (time.Time, bool, error) {
	var at sql.NullInt64
	err := db.read(ctx, func(tx tx) error {
		return classify(tx.QueryRowContext(ctx, `SELECT min(alarm) FROM sandboxes WHERE alarm > 0`).Scan(&at), "next alarm")
	})
	if err != nil || !at.Valid {
		return time.Time{}, false, err
	}
	return fromNanos(at.Int64), true, nil
}

// DueSandboxes implements [store.Store].
func (db *DB) DueSandboxes(ctx context.Context, now time.Time) ([]store.Sandbox, error) {
	var out []store.Sandbox
	err := db.read(ctx, func(tx tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+sandboxCols+` FROM sandboxes WHERE alarm > 0 AND alarm <= ? ORDER BY alarm`, now.UnixNano())
		if err != nil {
			return classify(err, "due sandboxes")
		}
		defer rows.Close()
		for rows.Next() {
			s, err := scanSandbox(rows)
			if err != nil {
				return classify(err, "due sandboxes")
			}
			out = append(out, s)
		}
		return classify(rows.Err(), "due sandboxes")
	})
	return out, err
}
