package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// stmts caches prepared statements of one connection pool. pprof on
// BenchmarkExec showed SQL parsing at 18% of the CPU of an exec round trip
// without a cache, and still 17% with statements prepared on a *sql.Conn:
// database/sql's Tx.StmtContext re-prepares a statement that belongs to a
// Conn on every call. Statements prepared on the *sql.DB are reused by
// Tx.StmtContext on every pooled connection they were prepared on.
//
// Preparing on the pool needs a free connection, and a transaction holds
// one (the writer pool has only one), so a query is never prepared inside
// a transaction: a miss runs unprepared and is remembered, and [stmts.fill]
// prepares the misses after the transaction has ended.
type stmts struct {
	db   *sql.DB
	mu   sync.Mutex // guards m and miss
	m    map[string]*sql.Stmt
	miss []string
}

// maxStmts bounds the cache: query shapes built from filters (one per
// number of label filters) could otherwise grow it without end.
const maxStmts = 256

func newStmts(db *sql.DB) *stmts {
	return &stmts{db: db, m: map[string]*sql.Stmt{}}
}

// get returns the prepared statement for q, or nil (remembering q) when
// it is not prepared yet.
func (s *stmts) get(q string) *sql.Stmt {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[q]
	if !ok && s.m != nil && len(s.m) < maxStmts {
		s.m[q] = nil // remembered once; fill prepares it
		s.miss = append(s.miss, q)
	}
	return st
}

// fill prepares the queries get missed. The caller must hold no
// transaction of s's pool. A query that fails to prepare stays unprepared
// (it then reports its error when run).
func (s *stmts) fill(ctx context.Context) {
	s.mu.Lock()
	miss := s.miss
	s.miss = nil
	s.mu.Unlock()
	for _, q := range miss {
		st, err := s.db.PrepareContext(context.WithoutCancel(ctx), q)
		if err != nil {
			continue
		}
		s.mu.Lock()
		if s.m == nil { // closed meanwhile
			st.Close()
		} else {
			s.m[q] = st
		}
		s.mu.Unlock()
	}
}

// pending reports whether fill has work.
func (s *stmts) pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.miss) > 0
}

func (s *stmts) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.m {
		if st != nil {
			st.Close()
		}
	}
	s.m, s.miss = nil, nil
}

// tx is a transaction that runs statements through the cache.
type tx struct {
	*sql.Tx
	c *stmts
}

func (t tx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := t.c.get(q); st != nil {
		return t.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, q, args...)
}

func (t tx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := t.c.get(q); st != nil {
		return t.Tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, q, args...)
}

func (t tx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := t.c.get(q); st != nil {
		return t.Tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, q, args...)
}
