package sqlite

import (
	"path/filepath"
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
	must(t, db.CreateTenant(ctx, store.Tenant{ID: "acme", CreatedAt: time.Now()}))
	sb := store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Tenant: "acme", State: rung.StateReady, CreatedAt: time.Now()}}
	must(t, db.CreateSandbox(ctx, sb, 0))
	legacy, current := rung.NewExecID(), rung.NewExecID()
	_, err = db.w.ExecContext(ctx, `INSERT INTO execs(id, sandbox, command, state, backend, exit_code, bytes, started, ended)
		VALUES(?, ?, 'sleep 1', 'started', 'isolate', 0, 0, 1, 0)`, string(legacy), string(sb.ID))
	must(t, err)
	_, err = db.StartExec(ctx, store.Exec{ID: current, Sandbox: sb.ID, Command: "sleep 2", StartedAt: time.Unix(0, 2)},
		store.Event{Time: time.Now(), Type: "exec.started", Journal: true})
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
