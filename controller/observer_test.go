package controller_test

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/router"
)

// recorder keeps what an Observer is told.
type recorder struct {
	mu    sync.Mutex
	execs []controller.ExecObservation
	snaps []controller.SnapshotObservation
}

func (r *recorder) observer() controller.Observer {
	return controller.Observer{
		Exec: func(o controller.ExecObservation) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.execs = append(r.execs, o)
		},
		Snapshot: func(o controller.SnapshotObservation) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.snaps = append(r.snaps, o)
		},
	}
}

// TestObserver: execs are observed with their backend, reason class and
// exit reason; snapshots, forks, restores and rollbacks with their
// outcome and, for forks, how many they made.
func TestObserver(t *testing.T) {
	var rec recorder
	e := newEnv(t, controller.Config{Observer: rec.observer()})
	ctx := t.Context()
	_, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "src"})
	must(t, err)
	for _, req := range []rung.ExecRequest{
		{Command: "echo hi"},
		{Command: "exit 4", Backend: rung.BackendIsolate},
	} {
		if _, err := e.c.Exec(ctx, "acme", "src", req, controller.ExecOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Refused before it ran (no container tier here): not an exec.
	if _, err := e.c.Exec(ctx, "acme", "src", rung.ExecRequest{Command: "python3 x.py"}, controller.ExecOptions{}); !errors.Is(err, rung.ErrUnavailable) {
		t.Fatalf("exec needing a container: %v, want unavailable", err)
	}
	_, err = e.c.Snapshot(ctx, "acme", "src", controller.SnapshotRequest{Name: "s1"})
	must(t, err)
	_, err = e.c.Snapshot(ctx, "acme", "src", controller.SnapshotRequest{Name: "s1"}) // name taken
	if !errors.Is(err, rung.ErrExists) {
		t.Fatalf("second snapshot s1: %v", err)
	}
	_, err = e.c.Fork(ctx, "acme", "src", controller.ForkRequest{Count: 2})
	must(t, err)
	_, err = e.c.Create(ctx, "acme", controller.CreateRequest{Name: "copy", FromSnapshot: "s1"})
	must(t, err)
	_, err = e.c.Rollback(ctx, "acme", "src", "s1")
	must(t, err)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	type ex struct {
		backend rung.Backend
		reason  string
		exit    rung.ExitReason
	}
	var gotExecs []ex
	for _, o := range rec.execs {
		if o.Duration <= 0 {
			t.Errorf("exec observed with duration %v", o.Duration)
		}
		gotExecs = append(gotExecs, ex{o.Backend, o.Reason, o.ExitReason})
	}
	wantExecs := []ex{{rung.BackendIsolate, router.ClassChecked, rung.ExitReasonExit}, {rung.BackendIsolate, router.ClassRequested, rung.ExitReasonExit}}
	if !slices.Equal(gotExecs, wantExecs) {
		t.Errorf("execs observed %v, want %v", gotExecs, wantExecs)
	}
	type sn struct {
		op    string
		ok    bool
		forks int
	}
	var gotSnaps []sn
	for _, o := range rec.snaps {
		gotSnaps = append(gotSnaps, sn{o.Op, o.Err == nil, o.Forks})
	}
	wantSnaps := []sn{{controller.OpSnapshot, true, 0}, {controller.OpSnapshot, false, 0}, {controller.OpFork, true, 2},
		{controller.OpRestore, true, 0}, {controller.OpRollback, true, 0}}
	if !slices.Equal(gotSnaps, wantSnaps) {
		t.Errorf("snapshot operations observed %v, want %v", gotSnaps, wantSnaps)
	}
}
