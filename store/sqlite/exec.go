package sqlite

import (
	"context"
	"database/sql"
	"sync"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// QueueStartExec implements [store.Store].
func (db *DB) QueueStartExec(ctx context.Context, e store.Exec, ev store.Event) store.QueuedStart {
	q := &queuedStart{db: db, e: e, ev: ev}
	ctx = context.WithoutCancel(ctx) // its Wait may come from another goroutine (the exec's timer) after the request ended
	q.r = db.enqueue(ctx, func(tx tx) error {
		var err error
		q.seq, err = insertRunning(ctx, tx, e, ev)
		return err
	}, true)
	q.wait = sync.OnceValue(func() error { return db.await(q.r) })
	return q
}

// queuedStart is a [store.QueuedStart].
type queuedStart struct {
	db   *DB
	e    store.Exec
	ev   store.Event
	r    *wreq
	seq  int64 // set by the commit, read after wait
	wait func() error
}

func (q *queuedStart) Wait() (int64, error) {
	if err := q.wait(); err != nil {
		return 0, err
	}
	return q.seq, nil
}

func (q *queuedStart) End(ctx context.Context, e store.Exec, evs []store.Event) error {
	if !q.r.cancel() {
		// A commit took it: end it as any started exec.
		if _, err := q.Wait(); err != nil {
			return err
		}
		_, err := q.db.EndExec(ctx, e, evs)
		return err
	}
	// Never committed: one write records it whole, without the running
	// row its start would have made and its end removed, and without
	// waiting for its commit (see [store.QueuedStart]), which outlives
	// the caller's context.
	ctx = context.WithoutCancel(ctx)
	return q.db.writeLater(ctx, func(tx tx) error {
		// Counting it is also the check that the sandbox exists.
		if found, err := countExec(ctx, tx, q.e.Sandbox, e.Backend); err != nil {
			return classify(err, "exec "+string(q.e.ID))
		} else if !found {
			return classify(sql.ErrNoRows, "sandbox "+string(q.e.Sandbox))
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO execs(id, sandbox, command, state, backend, exit_code, bytes, started, ended)
			VALUES (?, ?, ?, 'ended', ?, ?, ?, ?, ?)`,
			string(q.e.ID), string(q.e.Sandbox), q.e.Command, string(e.Backend), e.ExitCode, e.Bytes, nanos(q.e.StartedAt), nanos(e.EndedAt))
		if err != nil {
			return classify(err, "exec "+string(q.e.ID))
		}
		_, err = appendEvents(ctx, tx, q.e.Sandbox, append([]store.Event{q.ev}, evs...))
		return err
	})
}

// countExec counts an ended exec of sandbox under backend in the
// sandbox's row (the tier split the list shows), and reports whether the
// sandbox exists. It dirties the row's page, one more per exec
// (BenchmarkExecWAL); counting execs by backend at list time instead
// would read every exec of every sandbox listed.
func countExec(ctx context.Context, tx tx, sandbox rung.SandboxID, backend rung.Backend) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE sandboxes SET execs_isolate = execs_isolate + (?1 = 'isolate'),
		execs_container = execs_container + (?1 = 'container') WHERE id = ?2`, string(backend), string(sandbox))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// insertRunning records e as running and appends ev.
func insertRunning(ctx context.Context, tx tx, e store.Exec, ev store.Event) (int64, error) {
	// One statement checks the sandbox and inserts (this is on every
	// exec's path): no row inserted means no sandbox.
	res, err := tx.ExecContext(ctx, `INSERT INTO running(id, sandbox, command, backend, started)
		SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM sandboxes WHERE id = ?)`,
		string(e.ID), string(e.Sandbox), e.Command, string(e.Backend), nanos(e.StartedAt), string(e.Sandbox))
	if err != nil {
		return 0, classify(err, "exec "+string(e.ID))
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, classify(err, "exec "+string(e.ID))
	} else if n == 0 {
		return 0, classify(sql.ErrNoRows, "sandbox "+string(e.Sandbox))
	}
	return appendEvents(ctx, tx, e.Sandbox, []store.Event{ev})
}

// EndExec implements [store.Store].
func (db *DB) EndExec(ctx context.Context, e store.Exec, evs []store.Event) (int64, error) {
	var seq int64
	err := db.write(ctx, func(tx tx) error {
		// The command and start time are the ones recorded at start.
		res, err := tx.ExecContext(ctx, `INSERT INTO execs(id, sandbox, command, state, backend, exit_code, bytes, started, ended)
			SELECT id, sandbox, command, 'ended', ?, ?, ?, started, ? FROM running WHERE id = ? AND sandbox = ?`,
			string(e.Backend), e.ExitCode, e.Bytes, nanos(e.EndedAt), string(e.ID), string(e.Sandbox))
		if err != nil {
			return classify(err, "end exec "+string(e.ID))
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return rung.Errorf(rung.ErrNotFound, "started exec %s not found", e.ID)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM running WHERE id = ?`, string(e.ID)); err != nil {
			return classify(err, "end exec "+string(e.ID))
		}
		if _, err := countExec(ctx, tx, e.Sandbox, e.Backend); err != nil {
			return classify(err, "end exec "+string(e.ID))
		}
		seq, err = appendEvents(ctx, tx, e.Sandbox, evs)
		return err
	})
	return seq, err
}

const execCols = `id, sandbox, command, state, backend, exit_code, bytes, started, ended`

// runningCols are execCols of a running row.
const runningCols = `id, sandbox, command, 'started', backend, 0, 0, started, 0`

func scanExec(sc interface{ Scan(...any) error }) (store.Exec, error) {
	var e store.Exec
	var id, sbx, state, backend string
	var started, ended int64
	if err := sc.Scan(&id, &sbx, &e.Command, &state, &backend, &e.ExitCode, &e.Bytes, &started, &ended); err != nil {
		return e, err
	}
	e.ID, e.Sandbox, e.State, e.Backend = rung.ExecID(id), rung.SandboxID(sbx), store.ExecState(state), rung.Backend(backend)
	e.StartedAt, e.EndedAt = fromNanos(started), fromNanos(ended)
	return e, nil
}

// GetExec implements [store.Store].
func (db *DB) GetExec(ctx context.Context, sandbox rung.SandboxID, id rung.ExecID) (store.Exec, error) {
	var e store.Exec
	err := db.read(ctx, func(tx tx) error {
		var err error
		e, err = scanExec(tx.QueryRowContext(ctx, `SELECT `+runningCols+` FROM running WHERE id = ?1 AND sandbox = ?2
			UNION ALL SELECT `+execCols+` FROM execs WHERE id = ?1 AND sandbox = ?2`, string(id), string(sandbox)))
		return classify(err, "exec "+string(id))
	})
	return e, err
}

// LoseExecs implements [store.Store].
func (db *DB) LoseExecs(ctx context.Context, journal func(rung.SandboxID, []rung.ExecID) store.Event) ([]store.Exec, error) {
	var lost []store.Exec
	err := db.write(ctx, func(tx tx) error {
		lost = nil
		// execs rows still 'started' were left by a version that kept
		// execs in flight there (found through execs_started).
		rows, err := tx.QueryContext(ctx, `SELECT `+runningCols+` FROM running
			UNION ALL SELECT `+execCols+` FROM execs WHERE state = 'started'
			ORDER BY 2, 8, 1`)
		if err != nil {
			return classify(err, "lose execs")
		}
		for rows.Next() {
			e, err := scanExec(rows)
			if err != nil {
				rows.Close()
				return classify(err, "lose execs")
			}
			e.State = store.ExecLost
			lost = append(lost, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return classify(err, "lose execs")
		}
		for _, q := range []string{
			`WITH c AS (SELECT sandbox, sum(backend = 'isolate') AS i, sum(backend = 'container') AS k FROM running GROUP BY sandbox)
				UPDATE sandboxes SET execs_isolate = execs_isolate + c.i, execs_container = execs_container + c.k
				FROM c WHERE c.sandbox = sandboxes.id`,
			`INSERT INTO execs(` + execCols + `) SELECT id, sandbox, command, 'lost', backend, 0, 0, started, 0 FROM running`,
			`DELETE FROM running`,
			`UPDATE execs SET state = 'lost' WHERE state = 'started'`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return classify(err, "lose execs")
			}
		}
		for i := 0; i < len(lost); {
			j := i
			var ids []rung.ExecID
			for ; j < len(lost) && lost[j].Sandbox == lost[i].Sandbox; j++ {
				ids = append(ids, lost[j].ID)
			}
			if _, err := appendEvents(ctx, tx, lost[i].Sandbox, []store.Event{journal(lost[i].Sandbox, ids)}); err != nil {
				return err
			}
			i = j
		}
		return nil
	})
	return lost, err
}
