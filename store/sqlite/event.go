package sqlite

import (
	"context"
	"database/sql"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// appendEvents inserts evs after the sandbox's last sequence number,
// setting each one's Seq, and returns the last.
func appendEvents(ctx context.Context, tx tx, sandbox rung.SandboxID, evs []store.Event) (int64, error) {
	var last int64
	// One read of the sandbox's last number, then the rows numbered on
	// from it, up to eventsPerInsert in one statement: on every exec's
	// path (its start, output and end), fewer statements than an insert
	// that numbers each row itself.
	err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE sandbox = ?`, string(sandbox)).Scan(&last)
	if err != nil {
		return 0, classify(err, "append events")
	}
	for len(evs) > 0 {
		n := min(len(evs), eventsPerInsert)
		args := make([]any, 0, 6*n)
		for i := range evs[:n] {
			ev := &evs[i]
			last++
			ev.Seq = last
			args = append(args, string(sandbox), ev.Seq, nanos(ev.Time), ev.Type, ev.Journal, []byte(ev.Data))
		}
		if _, err := tx.ExecContext(ctx, insertEvents[n], args...); err != nil {
			return 0, classify(err, "append events")
		}
		evs = evs[n:]
	}
	return last, nil
}

// eventsPerInsert is the most rows one insert of appendEvents writes.
const eventsPerInsert = 16

// insertEvents[n] inserts n events.
var insertEvents = func() [eventsPerInsert + 1]string {
	var qs [eventsPerInsert + 1]string
	q := `INSERT INTO events(sandbox, seq, time, type, journal, data) VALUES (?, ?, ?, ?, ?, ?)`
	for n := 1; n <= eventsPerInsert; n++ {
		qs[n] = q
		q += `, (?, ?, ?, ?, ?, ?)`
	}
	return qs
}()

func sandboxExists(ctx context.Context, tx tx, id rung.SandboxID) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM sandboxes WHERE id = ?`, string(id)).Scan(&one)
	return classify(err, "sandbox "+string(id))
}

// AppendEvents implements [store.Store].
func (db *DB) AppendEvents(ctx context.Context, sandbox rung.SandboxID, evs []store.Event) (int64, error) {
	var last int64
	err := db.write(ctx, func(tx tx) error {
		if err := sandboxExists(ctx, tx, sandbox); err != nil {
			return err
		}
		var err error
		last, err = appendEvents(ctx, tx, sandbox, evs)
		return err
	})
	return last, err
}

// ListEvents implements [store.Store].
func (db *DB) ListEvents(ctx context.Context, sandbox rung.SandboxID, q store.EventQuery) ([]store.Event, error) {
	if q.Limit <= 0 {
		q.Limit = 1000
	}
	var out []store.Event
	err := db.read(ctx, func(tx tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT seq, time, type, journal, data FROM events
			WHERE sandbox = ? AND seq > ? AND (journal = 1 OR ? = 0) ORDER BY seq LIMIT ?`,
			string(sandbox), q.After, q.JournalOnly, q.Limit)
		if err != nil {
			return classify(err, "list events")
		}
		defer rows.Close()
		for rows.Next() {
			var ev store.Event
			var t int64
			var data []byte
			if err := rows.Scan(&ev.Seq, &t, &ev.Type, &ev.Journal, &data); err != nil {
				return classify(err, "list events")
			}
			ev.Time, ev.Data = fromNanos(t), data
			out = append(out, ev)
		}
		return classify(rows.Err(), "list events")
	})
	return out, err
}

// LastSeq implements [store.Store].
func (db *DB) LastSeq(ctx context.Context, sandbox rung.SandboxID) (int64, error) {
	var last int64
	err := db.read(ctx, func(tx tx) error {
		return classify(tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE sandbox = ?`, string(sandbox)).Scan(&last), "last seq")
	})
	return last, err
}

// TrimEvents implements [store.Store].
func (db *DB) TrimEvents(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := db.write(ctx, func(tx tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM events WHERE journal = 0 AND time < ?`, before.UnixNano())
		if err != nil {
			return classify(err, "trim events")
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// DeclareEffect implements [store.Store].
func (db *DB) DeclareEffect(ctx context.Context, e store.Effect, ev store.Event) (store.Effect, bool, error) {
	if e.Key == "" {
		return store.Effect{}, false, rung.Errorf(rung.ErrInvalid, "effect key is empty")
	}
	first, created := e, false
	err := db.write(ctx, func(tx tx) error {
		if err := sandboxExists(ctx, tx, e.Sandbox); err != nil {
			return err
		}
		var t int64
		var result []byte
		err := tx.QueryRowContext(ctx, `SELECT kind, result, seq, created FROM effects WHERE sandbox = ? AND key = ?`,
			string(e.Sandbox), string(e.Key)).Scan(&first.Kind, &result, &first.Seq, &t)
		if err == nil {
			first.Result, first.CreatedAt = result, fromNanos(t)
			return nil
		}
		if err != sql.ErrNoRows {
			return classify(err, "declare effect")
		}
		evs := []store.Event{ev}
		seq, err := appendEvents(ctx, tx, e.Sandbox, evs)
		if err != nil {
			return err
		}
		first.Seq, created = seq, true
		_, err = tx.ExecContext(ctx, `INSERT INTO effects(sandbox, key, kind, result, seq, created) VALUES(?, ?, ?, ?, ?, ?)`,
			string(e.Sandbox), string(e.Key), e.Kind, []byte(e.Result), seq, nanos(e.CreatedAt))
		return classify(err, "effect "+string(e.Key))
	})
	if err != nil {
		return store.Effect{}, false, err
	}
	return first, created, nil
}

// ListEffects implements [store.Store].
func (db *DB) ListEffects(ctx context.Context, sandbox rung.SandboxID) ([]store.Effect, error) {
	var out []store.Effect
	err := db.read(ctx, func(tx tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT key, kind, result, seq, created FROM effects WHERE sandbox = ? ORDER BY seq`, string(sandbox))
		if err != nil {
			return classify(err, "list effects")
		}
		defer rows.Close()
		for rows.Next() {
			e := store.Effect{Sandbox: sandbox}
			var key string
			var t int64
			var result []byte
			if err := rows.Scan(&key, &e.Kind, &result, &e.Seq, &t); err != nil {
				return classify(err, "list effects")
			}
			e.Key, e.Result, e.CreatedAt = rung.EffectKey(key), result, fromNanos(t)
			out = append(out, e)
		}
		return classify(rows.Err(), "list effects")
	})
	return out, err
}
