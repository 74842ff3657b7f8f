package sqlite

import (
	"context"
	"database/sql"
	"time"
)

// checkpointEvery is how often the checkpointer runs when it is not woken
// earlier by checkpointCommits commits.
const (
	checkpointEvery   = time.Second
	checkpointCommits = 512
)

// checkpointer copies the WAL back into the database file from its own
// goroutine and connection. The writer connection runs with
// wal_autocheckpoint off: SQLite's automatic checkpoint runs inside the
// commit that crosses the threshold, so one exec in a thousand paid for
// copying the WAL and an fdatasync of the database file (the p99 spikes of
// BenchmarkExec). A PASSIVE checkpoint never blocks the writer or readers;
// it copies what no reader still needs, and the writer restarts the WAL
// from its beginning once everything was copied.
type checkpointer struct {
	db   *sql.DB       // one connection, used only here
	kick chan struct{} // cap 1: run soon
	stop chan struct{} // closed by close
	done chan struct{} // closed when run returns
}

func newCheckpointer(db *sql.DB) *checkpointer {
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run() // owned by c; close stops it
	return c
}

func (c *checkpointer) run() {
	defer close(c.done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		case <-c.kick:
		}
		// An error (say, a full disk) leaves the WAL longer until a later
		// checkpoint succeeds; commits themselves are unaffected.
		c.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
	}
}

// poke asks for a checkpoint soon without waiting.
func (c *checkpointer) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// close stops the goroutine, runs a last checkpoint and closes the
// connection.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	c.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
	return c.db.Close()
}
