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
	// Each write queued by writeLater has a ticket, issued in queue order
	// (under qmu); laterDone is the last ticket a commit answered, so
	// laterIssued - laterDone are still waiting (see pendingLater). A
	// read first waits for laterDone to reach the last ticket issued
	// before it (see read).
	laterIssued atomic.Uint64
	laterDone   atomic.Uint64
	kick        chan struct{} // wakes the flusher; buffered, one; closed by Close (under qmu)
	closing     bool          // Close has begun: writeLater waits as write does; guarded by qmu
	done        chan struct{} // closed when the flusher has returned
	// onLaterErr is told the errors of writes no caller waited for.
	onLaterErr atomic.Pointer[func(error)]
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
	db := &DB{kick: make(chan struct{}, 1), done: make(chan struct{})}
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
	go db.flusher()
	return db, nil
}

// Close closes both connection pools. It is idempotent.
func (db *DB) Close() error {
	var err error
	db.once.Do(func() {
		db.qmu.Lock()
		db.closing = true
		close(db.kick) // the flusher commits what is left, then returns
		db.qmu.Unlock()
		<-db.done
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
// queued so far (but other execs' queued starts, see commitQueued) in
// one transaction, each fn inside its own savepoint
// (group commit): a fn that fails is rolled back alone, and the others
// still commit. Under 50 concurrent execs this turns many small commits
// (each a WAL append and its syscalls) into a few larger ones.
func (db *DB) write(ctx context.Context, fn func(tx tx) error) error {
	return db.await(db.enqueue(ctx, fn, false))
}

// enqueue queues fn for the next commit, after every write queued
// before it; lazy, only for a commit its caller leads (see
// commitQueued). The caller must await it (or take it back).
func (db *DB) enqueue(ctx context.Context, fn func(tx tx) error, lazy bool) *wreq {
	r := &wreq{ctx: ctx, fn: fn, done: make(chan error, 1), lazy: lazy}
	db.qmu.Lock()
	db.queue = append(db.queue, r)
	db.qmu.Unlock()
	return r
}

// await returns once r is committed (or failed), committing what is
// queued itself unless a previous leader has. Call it once per request.
func (db *DB) await(r *wreq) error {
	db.wmu.Lock()
	select {
	case err := <-r.done: // a previous leader committed it
		db.wmu.Unlock()
		return err
	default:
	}
	db.commitQueued(r.ctx, r)
	db.wmu.Unlock()
	return <-r.done
}

// commitQueued commits queued writes, with wmu held. A leader (own, the
// write it awaits) takes every write queued but the exec starts other
// than its own (lazy): an exec whose start is still queued when it ends
// records it whole with its end in a write it need not wait for (see
// QueueStartExec), while a start a commit took costs its exec a second
// write that the end must wait for; and on a busy daemon, where execs
// outlive startDurableAfter, each one that did would have turned every
// other exec in flight into one of those. The flusher (own nil) takes
// only writeLater's writes, at most maxLaterBatch of them. Requests their
// owners took back are dropped.
func (db *DB) commitQueued(ctx context.Context, own *wreq) {
	db.qmu.Lock()
	var batch, keep []*wreq
	more := false
	for _, r := range db.queue {
		switch {
		case r.state.Load() == wreqCanceled: // its owner took it back
		case r == own:
			batch = append(batch, r)
		case r.lazy:
			keep = append(keep, r)
		case own == nil && !r.detached:
			keep = append(keep, r)
		case own == nil && len(batch) >= maxLaterBatch:
			keep = append(keep, r)
			more = true
		default:
			batch = append(batch, r)
		}
	}
	db.queue = keep
	if more && !db.closing {
		select {
		case db.kick <- struct{}{}: // the rest in the flusher's next batch
		default:
		}
	}
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
}

// maxLater bounds the writes writeLater keeps queued: past it a caller
// waits for its commit, as write's do, so a writer that falls behind
// slows the execs down instead of holding more and more of them.
const maxLater = 1024

// maxLaterBatch bounds the writes the flusher commits in one
// transaction, and so how long it holds the writer from a caller that
// waits for its own write (a container exec's start, a create): 32 execs'
// records take 2-10 ms on a busy 2-core machine, 300 of them up to 60.
const maxLaterBatch = 32

// writeLater queues fn for the next commit and returns without waiting
// for it, unless maxLater such writes are already waiting (then it
// commits as write does). Nothing is lost to a caller: every read waits
// for the writes queued before it (read), and Close commits what is
// left; only a crash before the commit drops it, so it is for records a
// crash may drop (see [store.QueuedStart]). A write that was not waited
// for and fails is reported to the function given to [DB.OnLaterError].
func (db *DB) writeLater(ctx context.Context, fn func(tx tx) error) error {
	if db.pendingLater() >= maxLater {
		return db.write(ctx, fn)
	}
	r := &wreq{ctx: context.WithoutCancel(ctx), fn: fn, done: make(chan error, 1), detached: true}
	db.qmu.Lock()
	if db.closing {
		db.qmu.Unlock()
		return db.write(ctx, fn)
	}
	r.ticket = db.laterIssued.Add(1)
	db.queue = append(db.queue, r)
	select {
	case db.kick <- struct{}{}:
	default: // the flusher is already awake
	}
	db.qmu.Unlock()
	return nil
}

// pendingLater is how many writeLater writes no commit has answered yet.
func (db *DB) pendingLater() uint64 {
	done := db.laterDone.Load() // first: tickets only grow, so issued >= done
	return db.laterIssued.Load() - done
}

// flusher commits the writes writeLater queued, a batch of at most
// maxLaterBatch each time it is woken, from its own goroutine, until
// Close; then it commits what is left. It commits as soon as it is woken:
// under load the writes that arrive while it commits gather into its
// next batch by themselves (waiting a few milliseconds to gather more
// measured no better).
func (db *DB) flusher() {
	defer close(db.done)
	for range db.kick {
		if db.pendingLater() > 0 {
			db.wmu.Lock()
			db.commitQueued(context.Background(), nil)
			db.wmu.Unlock()
		}
	}
	db.flushThrough(db.laterIssued.Load())
}

// flushThrough returns once every writeLater write up to ticket t is
// committed (or failed), committing them itself if need be.
func (db *DB) flushThrough(t uint64) {
	for db.laterDone.Load() < t {
		db.wmu.Lock()
		if db.laterDone.Load() < t {
			db.commitQueued(context.Background(), nil)
		}
		db.wmu.Unlock()
	}
}

// OnLaterError sets f to be told the error of each write that no caller
// waited for (an exec recorded after it ended, see
// [store.QueuedStart.End]) and that failed, from the goroutine that
// committed it; the daemon logs them. A sandbox deleted meanwhile is not
// an error: there is nothing left to record.
func (db *DB) OnLaterError(f func(error)) { db.onLaterErr.Store(&f) }

// wreq is one queued write.
type wreq struct {
	ctx  context.Context
	fn   func(tx tx) error
	done chan error // buffered: the committer never blocks on it
	// state is wreqQueued until a commit takes the request (wreqTaken) or
	// its owner takes it back (wreqCanceled, see cancel).
	state atomic.Int32
	// detached: queued by writeLater, no one awaits it; its commit
	// moves DB.laterDone to its ticket.
	detached bool
	// lazy: an exec's queued start, committed only by its own await
	// (see commitQueued).
	lazy   bool
	ticket uint64
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
	defer db.answeredLater(batch)
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

// answeredLater moves DB.laterDone past batch's writeLater writes once
// their commit has answered them (batches take them in ticket order) and
// reports their errors.
func (db *DB) answeredLater(batch []*wreq) {
	for _, r := range batch {
		if !r.detached {
			continue
		}
		db.laterDone.Store(r.ticket)
		select {
		case err := <-r.done:
			if f := db.onLaterErr.Load(); err != nil && f != nil && !errors.Is(err, rung.ErrNotFound) {
				(*f)(err)
			}
		default:
		}
	}
}

// read runs fn in one read transaction, after every write queued by
// writeLater before it is committed: a caller reads what it was told
// was recorded.
func (db *DB) read(ctx context.Context, fn func(tx tx) error) error {
	db.flushThrough(db.laterIssued.Load())
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
