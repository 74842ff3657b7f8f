package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// smallWAL is defaultWAL divided by 128, so that a test writes ten times
// the cap in 120 execs; Keep is below Cap so that the truncation after a
// restart shows. Wait is generous so that a reader
// descheduled on a busy machine does not make a restart give up; it is a
// bound, never waited for in full unless a reader is that slow.
var smallWAL = walConfig{
	Step:    32 << 10,
	Restart: 256 << 10,
	Cap:     448 << 10,
	Keep:    256 << 10,
	Wait:    time.Second,
	Every:   time.Second,
}

// TestWALBounded drives the pattern that grew the WAL without bound
// (rung.db-wal reached 1.2 GB in 10 s of load): execs committed back to
// back by several writers, each exec two transactions as the controller
// makes them, while readers keep read transactions open. It checks the
// WAL file after every commit: it must never pass Cap by more than a
// restart's worth, and the first commit after a restart must shrink it
// to Keep. Before the checkpointer restarted the WAL, this load grew it
// to 4.6 MiB, ten times the cap.
func TestWALBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rung.db")
	db, err := open(t.Context(), path, smallWAL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := t.Context()
	must(t, db.CreateTenant(ctx, store.Tenant{ID: "acme", CreatedAt: time.Now()}))
	var sbs []rung.SandboxID
	for range 4 {
		sb := store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Tenant: "acme", State: rung.StateReady, CreatedAt: time.Now()}}
		must(t, db.CreateSandbox(ctx, sb, 0))
		sbs = append(sbs, sb.ID)
	}

	var peak atomic.Int64
	sample := func() {
		if fi, err := os.Stat(path + "-wal"); err == nil {
			storeMax(&peak, fi.Size())
		}
	}
	const writers, readers, execs = 2, 2, 60 // execs per writer: about 2.3 MiB of WAL each
	var writing sync.WaitGroup
	var readersDone sync.WaitGroup
	done := make(chan struct{})
	for i := range readers {
		readersDone.Go(func() {
			sb := sbs[i%len(sbs)]
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := db.GetSandbox(ctx, "acme", sb); err != nil {
					t.Error(err)
					return
				}
				if _, err := db.ListEvents(ctx, sb, store.EventQuery{Limit: 20}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for w := range writers {
		writing.Go(func() {
			for i := range execs {
				if err := oneExec(ctx, db, sbs[(w+i)%len(sbs)], sample); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	writing.Wait()
	close(done)
	readersDone.Wait()

	bound := smallWAL.Cap + smallWAL.Restart
	if p := peak.Load(); p > bound {
		t.Errorf("WAL peaked at %d bytes, want at most %d (cap %d plus a restart's worth)", p, bound, smallWAL.Cap)
	}
	if n := db.cp.restarts.Load(); n < 2 {
		t.Errorf("%d WAL restarts, want several", n)
	}
	t.Logf("WAL peak %d KiB, %d restarts", peak.Load()>>10, db.cp.restarts.Load())

	// With the load over, a restart succeeds at once, and the next commit
	// truncates the file to journal_size_limit.
	db.wmu.Lock()
	ok := db.cp.restartLocked()
	db.wmu.Unlock()
	if !ok {
		t.Fatal("restart with no readers and no writers: busy")
	}
	must(t, oneExec(ctx, db, sbs[0], nil))
	if fi, err := os.Stat(path + "-wal"); err != nil {
		t.Fatal(err)
	} else if fi.Size() > smallWAL.Keep {
		t.Errorf("WAL file is %d bytes after a restart, want at most journal_size_limit %d", fi.Size(), smallWAL.Keep)
	}
}

// oneExec writes what one `echo hi` exec writes: its start, then its
// output and end. after, if set, runs after each commit.
func oneExec(ctx context.Context, db *DB, sb rung.SandboxID, after func()) error {
	e := store.Exec{ID: rung.NewExecID(), Sandbox: sb, Command: "echo hi", Backend: rung.BackendIsolate, StartedAt: time.Now()}
	started, _ := json.Marshal(map[string]any{"exec": e.ID, "command": e.Command, "backend": e.Backend, "reason": "isolate can run it"})
	if _, err := db.QueueStartExec(ctx, e, store.Event{Time: e.StartedAt, Type: "exec.started", Journal: true, Data: started}).Wait(); err != nil {
		return err
	}
	if after != nil {
		after()
	}
	e.EndedAt = time.Now()
	out, _ := json.Marshal(map[string]any{"exec": e.ID, "stream": "stdout", "data": "hi\n"})
	ended, _ := json.Marshal(map[string]any{"exec": e.ID, "exit_code": 0, "duration_ms": 0, "stdout_bytes": 3})
	evs := []store.Event{
		{Time: e.EndedAt, Type: "exec.output", Data: out},
		{Time: e.EndedAt, Type: "exec.ended", Journal: true, Data: ended},
	}
	if _, err := db.EndExec(ctx, e, evs); err != nil {
		return err
	}
	if after != nil {
		after()
	}
	return nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkExecWAL reports what one `echo hi` exec appends to the WAL,
// in frames (a page each) and KiB, into one sandbox and spread over 100,
// after 10,000 execs have given the b-trees their depth.
func BenchmarkExecWAL(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("sandboxes=%d", n), func(b *testing.B) {
			db, sbs := benchSandboxes(b, n)
			ctx := b.Context()
			for i := range 10_000 {
				if err := oneExec(ctx, db, sbs[i%n], nil); err != nil {
					b.Fatal(err)
				}
			}
			s0, i := db.WALStats(), 0
			for b.Loop() {
				if err := oneExec(ctx, db, sbs[i%n], nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
			s1 := db.WALStats()
			frames := float64(s1.Frames-s0.Frames) / float64(i)
			b.ReportMetric(frames, "frames/exec")
			b.ReportMetric(frames*float64(s1.PageSize+24)/1024, "KiB/exec")
		})
	}
}

// BenchmarkExecCommits compares an exec's store writes committed apart
// (the start waited for, then EndExec: a container exec, or an isolate exec that
// changes files) with its start queued (QueueStartExec, committed with
// its EndExec: an isolate exec that changes nothing; End does not wait
// for that commit, which the benchmark makes at once to count its cost).
func BenchmarkExecCommits(b *testing.B) {
	for _, queued := range []bool{false, true} {
		b.Run(fmt.Sprintf("queued=%v", queued), func(b *testing.B) {
			db, sbs := benchSandboxes(b, 1)
			ctx, sb := b.Context(), sbs[0]
			s0, n := db.WALStats(), 0
			for b.Loop() {
				e := store.Exec{ID: rung.NewExecID(), Sandbox: sb, Command: "echo hi", Backend: rung.BackendIsolate, StartedAt: time.Now()}
				start := store.Event{Time: e.StartedAt, Type: "exec.started", Journal: true, Data: []byte(`{"command":"echo hi"}`)}
				q := db.QueueStartExec(ctx, e, start)
				if !queued {
					if _, err := q.Wait(); err != nil {
						b.Fatal(err)
					}
				}
				e.EndedAt = time.Now()
				evs := []store.Event{{Time: e.EndedAt, Type: "exec.output", Data: []byte(`{"data":"hi\n"}`)},
					{Time: e.EndedAt, Type: "exec.ended", Journal: true, Data: []byte(`{"exit_code":0}`)}}
				if err := q.End(ctx, e, evs); err != nil {
					b.Fatal(err)
				}
				db.flushThrough(db.laterIssued.Load())
				n++
			}
			b.ReportMetric(float64(db.WALStats().Frames-s0.Frames)/float64(n), "frames/exec")
		})
	}
}

// benchSandboxes opens a new store with tenant acme and n sandboxes of it.
func benchSandboxes(b *testing.B, n int) (*DB, []rung.SandboxID) {
	db, err := Open(b.Context(), filepath.Join(b.TempDir(), "rung.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	ctx := b.Context()
	if err := db.CreateTenant(ctx, store.Tenant{ID: "acme", CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	var sbs []rung.SandboxID
	for range n {
		sb := store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Tenant: "acme", State: rung.StateReady, CreatedAt: time.Now()}}
		if err := db.CreateSandbox(ctx, sb, 0); err != nil {
			b.Fatal(err)
		}
		sbs = append(sbs, sb.ID)
	}
	return db, sbs
}

// BenchmarkAppendEvent times one journal entry appended on its own (a
// file written through the API journals one, and its answer waits for
// the commit), into a sandbox that already has 10,000 events.
func BenchmarkAppendEvent(b *testing.B) {
	db, sbs := benchSandboxes(b, 1)
	ctx, sb := b.Context(), sbs[0]
	for range 10_000 / eventsPerInsert {
		evs := make([]store.Event, eventsPerInsert)
		for i := range evs {
			evs[i] = store.Event{Time: time.Now(), Type: "exec.output", Data: []byte(`{"data":"hi\n"}`)}
		}
		if _, err := db.AppendEvents(ctx, sb, evs); err != nil {
			b.Fatal(err)
		}
	}
	data := []byte(`{"bytes":1024,"mode":"0644","path":"/workspace/bench/1.txt"}`)
	for b.Loop() {
		if _, err := db.AppendEvents(ctx, sb, []store.Event{{Time: time.Now(), Type: "file.written", Journal: true, Data: data}}); err != nil {
			b.Fatal(err)
		}
	}
}
