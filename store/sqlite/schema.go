package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

const schema = `
CREATE TABLE IF NOT EXISTS tenants (
	id      TEXT PRIMARY KEY,
	created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
	id      TEXT PRIMARY KEY,
	tenant  TEXT NOT NULL REFERENCES tenants(id),
	hash    BLOB NOT NULL UNIQUE,
	admin   INTEGER NOT NULL,
	created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sandboxes (
	id       TEXT PRIMARY KEY,
	tenant   TEXT NOT NULL REFERENCES tenants(id),
	name     TEXT NOT NULL,
	state    TEXT NOT NULL,
	labels   TEXT NOT NULL,
	doc      TEXT NOT NULL,
	created  INTEGER NOT NULL,
	expires  INTEGER NOT NULL,
	idle_at  INTEGER NOT NULL,
	alarm    INTEGER NOT NULL,
	-- How many of the sandbox's execs ran in each tier: its rows of
	-- execs by backend, counted as each one is written (EndExec,
	-- LoseExecs), so a list reads them with the row (migrateExecCounts
	-- adds them to an earlier table).
	execs_isolate   INTEGER NOT NULL DEFAULT 0,
	execs_container INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS sandboxes_name ON sandboxes(tenant, name) WHERE name <> '';
CREATE INDEX IF NOT EXISTS sandboxes_tenant ON sandboxes(tenant, created, id);
CREATE INDEX IF NOT EXISTS sandboxes_alarm ON sandboxes(alarm) WHERE alarm > 0;
CREATE TABLE IF NOT EXISTS snapshots (
	id      TEXT PRIMARY KEY,
	tenant  TEXT NOT NULL,
	sandbox TEXT NOT NULL,
	created INTEGER NOT NULL,
	doc     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS snapshots_tenant ON snapshots(tenant, created);
CREATE TABLE IF NOT EXISTS execs (
	id        TEXT NOT NULL,
	sandbox   TEXT NOT NULL,
	command   TEXT NOT NULL,
	state     TEXT NOT NULL,
	backend   TEXT NOT NULL,
	exit_code INTEGER NOT NULL,
	bytes     INTEGER NOT NULL,
	started   INTEGER NOT NULL,
	ended     INTEGER NOT NULL,
	PRIMARY KEY (sandbox, id)
) WITHOUT ROWID; -- one b-tree, not a table and its id index: one WAL page less per exec start
-- Keyed by sandbox first: a sandbox's delete removes one range of the
-- b-tree instead of scanning every exec of every sandbox while it holds
-- the write lock (migrateExecsKey rebuilds a table keyed by id alone).
-- An exec in flight is a row of running, and reaches execs when it ends
-- or is lost: each exec then writes its execs row once, not an insert at
-- start and an update at end in two commits (one WAL page less per exec).
-- running holds only the execs in flight: its pages stay few and hot.
CREATE TABLE IF NOT EXISTS running (
	id      TEXT PRIMARY KEY,
	sandbox TEXT NOT NULL,
	command TEXT NOT NULL,
	backend TEXT NOT NULL,
	started INTEGER NOT NULL
) WITHOUT ROWID;
-- Versions before running kept started execs in execs; this index finds
-- those a crash left. Nothing is written to it any more (no execs row is
-- 'started' now), so it costs no page per exec.
CREATE INDEX IF NOT EXISTS execs_started ON execs(sandbox) WHERE state = 'started';
-- No query reads execs by sandbox alone, and every exec start paid a WAL
-- page for this index.
DROP INDEX IF EXISTS execs_sandbox;
CREATE TABLE IF NOT EXISTS events (
	sandbox TEXT NOT NULL,
	seq     INTEGER NOT NULL,
	time    INTEGER NOT NULL,
	type    TEXT NOT NULL,
	journal INTEGER NOT NULL,
	data    BLOB,
	PRIMARY KEY (sandbox, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_output ON events(time) WHERE journal = 0;
CREATE TABLE IF NOT EXISTS shares (
	id      TEXT PRIMARY KEY,
	tenant  TEXT NOT NULL,
	sandbox TEXT NOT NULL,
	port    INTEGER NOT NULL,
	created INTEGER NOT NULL,
	expires INTEGER NOT NULL,
	revoked INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS shares_sandbox ON shares(sandbox);
CREATE TABLE IF NOT EXISTS secrets (
	tenant      TEXT NOT NULL,
	name        TEXT NOT NULL,
	hosts       TEXT NOT NULL,
	placeholder TEXT NOT NULL,
	sealed      BLOB NOT NULL,
	created     INTEGER NOT NULL,
	updated     INTEGER NOT NULL,
	PRIMARY KEY (tenant, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS effects (
	sandbox TEXT NOT NULL,
	key     TEXT NOT NULL,
	kind    TEXT NOT NULL,
	result  BLOB,
	seq     INTEGER NOT NULL,
	created INTEGER NOT NULL,
	PRIMARY KEY (sandbox, key)
) WITHOUT ROWID;
`

func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	if err := migrateExecsKey(ctx, db); err != nil {
		return err
	}
	if err := migrateExecCounts(ctx, db); err != nil {
		return err
	}
	return migrateSnapshots(ctx, db)
}

// migrateExecsKey rebuilds an execs table an earlier version keyed by id
// alone into one keyed by (sandbox, id), in one transaction: a crash
// leaves either table whole, and the next start finishes the job.
func migrateExecsKey(ctx context.Context, db *sql.DB) error {
	var keyCols int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('execs') WHERE pk > 0`).Scan(&keyCols); err != nil {
		return fmt.Errorf("migrate execs: %w", err)
	}
	if keyCols != 1 {
		return nil
	}
	return execAll(ctx, db, "migrate execs",
		`CREATE TABLE execs_keyed (
			id TEXT NOT NULL, sandbox TEXT NOT NULL, command TEXT NOT NULL, state TEXT NOT NULL,
			backend TEXT NOT NULL, exit_code INTEGER NOT NULL, bytes INTEGER NOT NULL,
			started INTEGER NOT NULL, ended INTEGER NOT NULL, PRIMARY KEY (sandbox, id)) WITHOUT ROWID`,
		`INSERT INTO execs_keyed(id, sandbox, command, state, backend, exit_code, bytes, started, ended)
			SELECT id, sandbox, command, state, backend, exit_code, bytes, started, ended FROM execs`,
		`DROP TABLE execs`,
		`ALTER TABLE execs_keyed RENAME TO execs`,
		`CREATE INDEX IF NOT EXISTS execs_started ON execs(sandbox) WHERE state = 'started'`)
}

// migrateExecCounts adds the exec count columns to a sandboxes table an
// earlier version made and counts the execs it already has, in one
// transaction (one pass over execs, once).
func migrateExecCounts(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('sandboxes') WHERE name = 'execs_isolate'`).Scan(&n); err != nil {
		return fmt.Errorf("migrate exec counts: %w", err)
	}
	if n > 0 {
		return nil
	}
	return execAll(ctx, db, "migrate exec counts",
		`ALTER TABLE sandboxes ADD COLUMN execs_isolate INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE sandboxes ADD COLUMN execs_container INTEGER NOT NULL DEFAULT 0`,
		`WITH c AS (SELECT sandbox, sum(backend = 'isolate') AS i, sum(backend = 'container') AS k FROM execs GROUP BY sandbox)
			UPDATE sandboxes SET execs_isolate = c.i, execs_container = c.k FROM c WHERE c.sandbox = sandboxes.id`)
}

// execAll runs the statements qs in one transaction: all of them or none.
func execAll(ctx context.Context, db *sql.DB, what string, qs ...string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer tx.Rollback()
	for _, q := range qs {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
