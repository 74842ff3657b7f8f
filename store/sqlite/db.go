// Package sqlite implements [store.Store] on SQLite through
// github.com/ncruces/go-sqlite3 (no cgo). The database runs in WAL mode
// with a busy timeout; all writes go through one connection (SQLite allows
// one writer at a time anyway, and queueing in Go is cheaper than
// SQLITE_BUSY retries), reads through a pool of read-only connections.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver" // also registers "sqlite3"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// DB is a [store.Store] backed by one SQLite file. It is safe for
// concurrent use. Close releases it.
type DB struct {
	w  *sql.DB // one connection: the only writer
	r  *sql.DB // read-only connections
	ws *stmts  // prepared statements of w
	rs *stmts  // prepared statements of r
	cp *checkpointer
	// wmu is held by the writer committing a batch: that is the
	// single-writer queue SQLite would impose anyway, kept in Go where
	// waiting is cheap. The checkpointer holds it to restart the WAL.
	wmu   sync.Mutex
	qmu   sync.Mutex // guards queue
	queue []*wreq    // writes waiting for the next commit
	once  sync.Once
}

var _ store.Store = (*DB)(nil)

// Open opens (creating if needed) the database file at path and brings its
// schema up to date.
func Open(ctx context.Context, path string) (*DB, error) {
	return open(ctx, path, defaultWAL)
}

// connKind is what a connection of the store is for.
type connKind int

const (
	writerConn connKind = iota
	readerConn
	checkpointConn
)

func dsn(path string, kind connKind, wal walConfig) string {
	q := url.Values{}
	busy := 10 * time.Second
	if kind == checkpointConn {
		// A restart waits for readers while commits wait for it.
		busy = wal.Wait
	}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "journal_mode(wal)")
	// NORMAL in WAL mode is durable against process crashes (the crash
	// test SIGKILLs the daemon); only a power loss may drop the last
	// transactions. Checkpoints still sync the WAL before they copy it
	// and the database file before the WAL may start over.
	q.Add("_pragma", "synchronous(normal)")
	q.Add("_pragma", "foreign_keys(on)")
	q.Set("_txlock", "immediate")
	switch kind {
	case readerConn:
		q.Add("_pragma", "query_only(1)")
	case writerConn:
		// The checkpointer does it off the commit path.
		q.Add("_pragma", "wal_autocheckpoint(0)")
		// The writer is who starts the WAL over; its first commit after
		// a restart truncates the file to this.
		q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", wal.Keep))
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

func open(ctx context.Context, path string, wal walConfig) (*DB, error) {
	db := &DB{}
	db.cp = newCheckpointer(&db.wmu)
	// The hook is set after the DSN's pragmas (wal_autocheckpoint(0)
	// clears any WAL hook), on every connection the writer pool opens.
	w, err := driver.Open(dsn(path, writerConn, wal), func(c *sqlite3.Conn) error {
		c.WALHook(db.cp.walHook)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	var pageSize int64
	if err := w.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	r, err := sql.Open("sqlite3", dsn(path, readerConn, wal))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxIdleTime(0)
	cp, err := sqlite3.OpenContext(ctx, dsn(path, checkpointConn, wal))
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db.w, db.r, db.ws, db.rs = w, r, newStmts(w), newStmts(r)
	db.cp.start(cp, pageSize, wal)
	return db, nil
}

// Close closes both connection pools. It is idempotent.
func (db *DB) Close() error {
	var err error
	db.once.Do(func() {
		db.wmu.Lock()
		db.ws.close()
		db.rs.close()
		db.wmu.Unlock()
		err = errors.Join(db.cp.close(), db.r.Close(), db.w.Close())
	})
	return err
}

// write runs fn in a write transaction and returns once it is committed.
// Writers queue; whoever gets the writer connection commits everything
// queued so far in one transaction, each fn inside its own savepoint
// (group commit): a fn that fails is rolled back alone, and the others
// still commit. Under 50 concurrent execs this turns many small commits
// (each a WAL append and its syscalls) into a few larger ones.
func (db *DB) write(ctx context.Context, fn func(tx tx) error) error {
	return db.await(db.enqueue(ctx, fn))
}

// enqueue queues fn for the next commit, after every write queued
// before it. The caller must await it.
func (db *DB) enqueue(ctx context.Context, fn func(tx tx) error) *wreq {
	r := &wreq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	db.qmu.Lock()
	db.queue = append(db.queue, r)
	db.qmu.Unlock()
	return r
}

// await returns once r is committed (or failed), committing everything
// queued itself unless a previous leader has. Call it once per request.
func (db *DB) await(r *wreq) error {
	ctx := r.ctx
	db.wmu.Lock()
	select {
	case err := <-r.done: // a previous leader committed it
		db.wmu.Unlock()
		return err
	default:
	}
	db.qmu.Lock()
	batch := db.queue
	db.queue = nil
	db.qmu.Unlock()
	db.commit(ctx, batch)
	db.ws.fill(ctx) // the transaction is over: the connection is free
	if db.cp.full() {
		// The checkpointer fell behind (starved of CPU, or readers kept
		// it from restarting the WAL): restart it here, before the next
		// batch, so the WAL stays bounded. Only this leader waits; the
		// batch's other writers have their answers.
		db.cp.restartLocked()
	}
	db.wmu.Unlock()
	return <-r.done
}

// wreq is one queued write.
type wreq struct {
	ctx  context.Context
	fn   func(tx tx) error
	done chan error // buffered: the committer never blocks on it
	// state is wreqQueued until a commit takes the request (wreqTaken) or
	// its owner takes it back (wreqCanceled, see cancel).
	state atomic.Int32
}

const (
	wreqQueued int32 = iota
	wreqTaken
	wreqCanceled
)

// cancel takes r back before any commit has taken it: it will not run,
// and no one may await it. It reports whether it did.
func (r *wreq) cancel() bool { return r.state.CompareAndSwap(wreqQueued, wreqCanceled) }

// errCanceled answers a request its owner took back (no one reads it).
var errCanceled = errors.New("write taken back")

// commit runs batch in one transaction and answers every request.
func (db *DB) commit(ctx context.Context, batch []*wreq) {
	ctx = context.WithoutCancel(ctx) // the batch outlives any one caller
	// Requests their owners took back leave the batch first (in place:
	// the leader owns it), before any transaction is begun for them.
	live := batch[:0]
	for _, r := range batch {
		if r.state.CompareAndSwap(wreqQueued, wreqTaken) {
			live = append(live, r)
		} else {
			r.done <- errCanceled
		}
	}
	batch = live
	if len(batch) == 0 {
		return
	}
	errs := make([]error, len(batch))
	t, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	defer t.Rollback()
	x := tx{t, db.ws}
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		if len(batch) == 1 {
			errs[i] = r.fn(x)
			break
		}
		if _, err := x.ExecContext(ctx, "SAVEPOINT w"); err != nil {
			errs[i] = err
			continue
		}
		if errs[i] = r.fn(x); errs[i] != nil {
			x.ExecContext(ctx, "ROLLBACK TO w")
		}
		x.ExecContext(ctx, "RELEASE w")
	}
	if len(batch) == 1 && errs[0] != nil {
		batch[0].done <- errs[0]
		return
	}
	cerr := t.Commit()
	for i, r := range batch {
		if errs[i] == nil {
			errs[i] = cerr
		}
		r.done <- errs[i]
	}
}

// read runs fn in one read transaction.
func (db *DB) read(ctx context.Context, fn func(tx tx) error) error {
	err := db.read1(ctx, fn)
	if db.rs.pending() {
		db.rs.fill(ctx) // our transaction is over: prepare what it missed
	}
	return err
}

func (db *DB) read1(ctx context.Context, fn func(tx tx) error) error {
	t, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer t.Rollback()
	return fn(tx{t, db.rs})
}

// classify turns driver errors into rung classes.
func classify(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return rung.Errorf(rung.ErrNotFound, "%s not found", what)
	case errors.Is(err, sqlite3.CONSTRAINT_UNIQUE), errors.Is(err, sqlite3.CONSTRAINT_PRIMARYKEY):
		return rung.Errorf(rung.ErrExists, "%s already exists", what)
	case errors.Is(err, sqlite3.CONSTRAINT_FOREIGNKEY):
		return rung.Errorf(rung.ErrNotFound, "%s: referenced row not found", what)
	}
	return fmt.Errorf("%s: %w", what, err)
}
