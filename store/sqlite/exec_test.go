package sqlite

import (
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// TestLoseLegacyExecs: a database written by a version that kept execs in
// flight as execs rows in state 'started' (before the running table) and
// then crashed still has them reported lost, beside those of running.
func TestLoseLegacyExecs(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "rung.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := t.Context()
	sb := acmeSandbox(t, db)
	legacy, current := rung.NewExecID(), rung.NewExecID()
	_, err = db.w.ExecContext(ctx, `INSERT INTO execs(id, sandbox, command, state, backend, exit_code, bytes, started, ended)
		VALUES(?, ?, 'sleep 1', 'started', 'isolate', 0, 0, 1, 0)`, string(legacy), string(sb.ID))
	must(t, err)
	_, err = db.QueueStartExec(ctx, store.Exec{ID: current, Sandbox: sb.ID, Command: "sleep 2", StartedAt: time.Unix(0, 2)},
		store.Event{Time: time.Now(), Type: "exec.started", Journal: true}).Wait()
	must(t, err)

	var journaled []rung.ExecID
	lost, err := db.LoseExecs(ctx, func(_ rung.SandboxID, ids []rung.ExecID) store.Event {
		journaled = ids
		return store.Event{Time: time.Now(), Type: "exec.lost", Journal: true}
	})
	must(t, err)
	if len(lost) != 2 || lost[0].ID != legacy || lost[1].ID != current {
		t.Fatalf("LoseExecs = %+v, want %s then %s (by start time)", lost, legacy, current)
	}
	if len(journaled) != 2 {
		t.Errorf("journaled %v, want both execs", journaled)
	}
	for _, id := range []rung.ExecID{legacy, current} {
		e, err := db.GetExec(ctx, sb.ID, id)
		must(t, err)
		if e.State != store.ExecLost {
			t.Errorf("exec %s is %s after LoseExecs, want lost", id, e.State)
		}
	}
	if got, err := db.GetExec(ctx, sb.ID, current); err != nil || got.Command != "sleep 2" {
		t.Errorf("GetExec(%s) = %+v, %v; want its command kept", current, got, err)
	}
}

// TestExecsKeyedBySandbox: a sandbox's delete reads only its own execs
// (a range of the (sandbox, id) key, not a scan of every sandbox's), and a
// database an earlier version made, keyed by id alone, is rebuilt at open
// with its rows kept.
func TestExecsKeyedBySandbox(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rung.db")
	db, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// The earlier version's table, with a row.
	for _, q := range []string{
		`DROP TABLE execs`,
		`CREATE TABLE execs (id TEXT PRIMARY KEY, sandbox TEXT NOT NULL, command TEXT NOT NULL, state TEXT NOT NULL,
			backend TEXT NOT NULL, exit_code INTEGER NOT NULL, bytes INTEGER NOT NULL, started INTEGER NOT NULL,
			ended INTEGER NOT NULL) WITHOUT ROWID`,
		`INSERT INTO execs VALUES('exe_old', 'sbx_a', 'true', 'ended', 'isolate', 0, 0, 1, 2)`,
	} {
		if _, err := db.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if db, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var keyCols, rows int
	must(t, db.w.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('execs') WHERE pk > 0`).Scan(&keyCols))
	must(t, db.w.QueryRowContext(ctx, `SELECT count(*) FROM execs WHERE id = 'exe_old' AND sandbox = 'sbx_a'`).Scan(&rows))
	if keyCols != 2 || rows != 1 {
		t.Errorf("after migration: %d key columns, %d of the old rows; want 2 and 1", keyCols, rows)
	}
	var plan []string
	r, err := db.w.QueryContext(ctx, `EXPLAIN QUERY PLAN DELETE FROM execs WHERE sandbox = 'sbx_a'`)
	must(t, err)
	for r.Next() {
		var id, parent, unused int
		var detail string
		must(t, r.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	r.Close()
	if len(plan) == 0 || !strings.HasPrefix(plan[0], "SEARCH execs") {
		t.Errorf("plan of a sandbox's exec delete: %q; want a SEARCH of execs by its key", plan)
	}
}

// TestExecCountsMigrated: a database an earlier version made, whose
// sandboxes table has no exec counts, gets them at open, counted from
// the execs it already holds, and they are kept across a reopen.
func TestExecCountsMigrated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rung.db")
	db, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	sb := acmeSandbox(t, db)
	for _, q := range []string{
		`ALTER TABLE sandboxes DROP COLUMN execs_isolate`,
		`ALTER TABLE sandboxes DROP COLUMN execs_container`,
	} {
		if _, err := db.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for i, b := range []rung.Backend{rung.BackendIsolate, rung.BackendContainer, rung.BackendIsolate, rung.BackendIsolate} {
		state := "ended"
		if i == 3 {
			state = "lost"
		}
		if _, err := db.w.ExecContext(ctx, `INSERT INTO execs(id, sandbox, command, state, backend, exit_code, bytes, started, ended)
			VALUES(?, ?, 'true', ?, ?, 0, 0, 1, 2)`, string(rung.NewExecID()), string(sb.ID), state, string(b)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	for range 2 {
		if db, err = Open(ctx, path); err != nil {
			t.Fatal(err)
		}
		got, err := db.GetSandbox(ctx, "acme", sb.ID)
		db.Close()
		must(t, err)
		if want := (rung.ExecCounts{Isolate: 3, Container: 1}); got.Execs != want {
			t.Errorf("exec counts after the migration = %+v, want %+v", got.Execs, want)
		}
	}
}

// TestEndLaterClose checks that an exec End recorded without waiting is
// committed by Close, so a daemon that stops gracefully keeps it, and
// that one in a sandbox deleted meanwhile is dropped without an error.
func TestEndLaterClose(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rung.db")
	db, err := Open(ctx, path)
	must(t, err)
	var mu sync.Mutex
	var errs []error
	db.OnLaterError(func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() })
	sb := acmeSandbox(t, db)
	e := store.Exec{ID: rung.NewExecID(), Sandbox: sb.ID, Command: "echo hi", Backend: rung.BackendIsolate, StartedAt: time.Now()}
	q := db.QueueStartExec(ctx, e, store.Event{Time: e.StartedAt, Type: "exec.started", Journal: true})
	e.EndedAt = time.Now()
	must(t, q.End(ctx, e, []store.Event{{Time: e.EndedAt, Type: "exec.ended", Journal: true}}))
	gone := store.Exec{ID: rung.NewExecID(), Sandbox: rung.NewSandboxID(), StartedAt: time.Now()}
	must(t, db.QueueStartExec(ctx, gone, store.Event{Type: "exec.started"}).End(ctx, gone, nil))
	must(t, db.Close())
	if len(errs) != 0 {
		t.Errorf("errors of writes not waited for: %v, want none (a missing sandbox is not an error)", errs)
	}

	db, err = Open(ctx, path)
	must(t, err)
	defer db.Close()
	got, err := db.GetExec(ctx, sb.ID, e.ID)
	if err != nil || got.State != store.ExecEnded {
		t.Fatalf("exec after Close and reopen = %+v, %v; want ended", got, err)
	}
}

// TestEndLaterReadsSeeAll checks that a read sees every exec recorded
// without waiting before it, however many batches the flusher needs for
// them.
func TestEndLaterReadsSeeAll(t *testing.T) {
	ctx := t.Context()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "rung.db"))
	must(t, err)
	defer db.Close()
	sb := acmeSandbox(t, db)
	const n = 3*maxLaterBatch + 5
	db.wmu.Lock() // the flusher cannot commit any until all are queued
	for range n {
		e := store.Exec{ID: rung.NewExecID(), Sandbox: sb.ID, Command: "echo hi", Backend: rung.BackendIsolate, StartedAt: time.Now()}
		q := db.QueueStartExec(ctx, e, store.Event{Time: e.StartedAt, Type: "exec.started", Journal: true})
		e.EndedAt = time.Now()
		must(t, q.End(ctx, e, []store.Event{{Time: e.EndedAt, Type: "exec.ended", Journal: true}}))
	}
	db.wmu.Unlock()
	evs, err := db.ListEvents(ctx, sb.ID, store.EventQuery{Limit: 10 * n})
	must(t, err)
	if len(evs) != 2*n {
		t.Errorf("a read after %d ends sees %d events, want %d", n, len(evs), 2*n)
	}
}

// TestEndLaterErrorReported checks that a write End did not wait for and
// that fails (here, an exec id recorded twice) reaches the function given
// to OnLaterError, and that the other writes of its batch still commit.
func TestEndLaterErrorReported(t *testing.T) {
	ctx := t.Context()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "rung.db"))
	must(t, err)
	defer db.Close()
	reported := make(chan error, 4)
	db.OnLaterError(func(err error) { reported <- err })
	sb := acmeSandbox(t, db)
	e := store.Exec{ID: rung.NewExecID(), Sandbox: sb.ID, Command: "echo hi", Backend: rung.BackendIsolate, StartedAt: time.Now()}
	other := e
	other.ID = rung.NewExecID()
	db.wmu.Lock() // all three in one batch
	for _, x := range []store.Exec{e, e, other} {
		must(t, db.QueueStartExec(ctx, x, store.Event{Time: x.StartedAt, Type: "exec.started", Journal: true}).End(ctx, x, nil))
	}
	db.wmu.Unlock()
	if _, err := db.GetExec(ctx, sb.ID, other.ID); err != nil { // the read commits the batch first
		t.Errorf("the batch's other exec: %v", err)
	}
	select {
	case err := <-reported:
		if !strings.Contains(err.Error(), string(e.ID)) {
			t.Errorf("reported %v, want an error naming exec %s", err, e.ID)
		}
	default:
		t.Fatal("the failed write was not reported")
	}
	if len(reported) != 0 {
		t.Errorf("%d more errors reported, want one", len(reported))
	}
}

// TestEndLaterBounded checks that once maxLater writes wait for a commit,
// End waits for its own instead of queueing one more.
func TestEndLaterBounded(t *testing.T) {
	ctx := t.Context()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "rung.db"))
	must(t, err)
	defer db.Close()
	sb := acmeSandbox(t, db)
	end := func() error {
		e := store.Exec{ID: rung.NewExecID(), Sandbox: sb.ID, Command: "true", Backend: rung.BackendIsolate, StartedAt: time.Now()}
		return db.QueueStartExec(ctx, e, store.Event{Time: e.StartedAt, Type: "exec.started", Journal: true}).End(ctx, e, nil)
	}
	db.wmu.Lock() // nothing commits: the writes pile up
	for range maxLater {
		must(t, end())
	}
	if n := db.pendingLater(); n != maxLater {
		t.Fatalf("%d writes pending, want %d", n, maxLater)
	}
	done := make(chan error, 1)
	go func() { done <- end() }()
	// Its write is queued to be waited for, not detached, before the
	// commits can resume.
	for waiting := false; !waiting; {
		select {
		case err := <-done:
			db.wmu.Unlock()
			t.Fatalf("End returned (%v) while %d writes were pending and none could commit: it did not wait", err, maxLater)
		default:
		}
		db.qmu.Lock()
		for _, r := range db.queue {
			waiting = waiting || (!r.detached && !r.lazy)
		}
		db.qmu.Unlock()
		runtime.Gosched()
	}
	db.wmu.Unlock()
	must(t, <-done)
	if got := db.laterIssued.Load(); got != maxLater {
		t.Errorf("%d writes issued without waiting, want %d (the last one waited)", got, maxLater)
	}
	evs, err := db.ListEvents(ctx, sb.ID, store.EventQuery{Limit: 2 * (maxLater + 1)})
	must(t, err)
	if len(evs) != maxLater+1 {
		t.Errorf("%d events after %d execs, want one each", len(evs), maxLater+1)
	}
}

// acmeSandbox makes tenant "acme" in db and a ready sandbox of it.
func acmeSandbox(t *testing.T, db *DB) store.Sandbox {
	t.Helper()
	ctx := t.Context()
	must(t, db.CreateTenant(ctx, store.Tenant{ID: "acme", CreatedAt: time.Now()}))
	sb := store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Tenant: "acme", State: rung.StateReady, CreatedAt: time.Now()}}
	must(t, db.CreateSandbox(ctx, sb, 0))
	return sb
}
