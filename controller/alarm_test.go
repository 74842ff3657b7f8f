package controller_test

import (
	"errors"
	"io"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/controller/controllertest"
	"rung.dev/rung/storage/storagetest"
	"rung.dev/rung/store"
	"rung.dev/rung/store/sqlite"
)

// TestTTL checks that the time to live deletes a sandbox when it is due,
// not before, and that the alarm survives a restart (it lives in the
// store). Time is synctest's fake clock.
func TestTTL(t *testing.T) {
	pool := storagetest.NewTestPool(t)
	dbPath := filepath.Join(t.TempDir(), "rung.db")
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		open := func() (*controller.Controller, *sqlite.DB) {
			st, err := sqlite.Open(ctx, dbPath)
			if err != nil {
				t.Fatal(err)
			}
			c, _, err := controller.New(ctx, controller.Config{Store: st, Pool: pool})
			if err != nil {
				t.Fatal(err)
			}
			return c, st
		}
		c, st := open()
		if err := st.CreateTenant(ctx, store.Tenant{ID: "acme"}); err != nil {
			t.Fatal(err)
		}
		short, err := c.Create(ctx, "acme", controller.CreateRequest{TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		long, err := c.Create(ctx, "acme", controller.CreateRequest{TTL: 3 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		forever, err := c.Create(ctx, "acme", controller.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		exists := func(id rung.SandboxID) bool {
			_, err := c.Get(ctx, "acme", string(id))
			if err != nil && !errors.Is(err, rung.ErrNotFound) {
				t.Fatal(err)
			}
			return err == nil
		}
		time.Sleep(59 * time.Minute)
		synctest.Wait()
		if !exists(short.ID) {
			t.Fatal("sandbox deleted before its TTL")
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if exists(short.ID) {
			t.Fatal("sandbox still there after its TTL")
		}
		if ok, _ := pool.Exists(ctx, string(short.ID)); ok {
			t.Error("expired sandbox's subvolume still exists")
		}

		// Restart: the 3-hour alarm is read back from the store.
		c.Close()
		st.Close()
		c, st = open()
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if exists(long.ID) {
			t.Error("sandbox with a 3 h TTL survived the restart past its deadline")
		}
		if !exists(forever.ID) {
			t.Error("sandbox without a TTL was deleted")
		}
		c.Close()
		st.Close()
	})
}

// An exec reading a stdin stream that its client never closes does not
// hold a sandbox past its TTL: the TTL's delete cancels the exec, whose
// read ends, and the sandbox goes.
func TestTTLEndsExecOnOpenStdin(t *testing.T) {
	pool := storagetest.NewTestPool(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		c := controllertest.New(t, controller.Config{Pool: pool})
		if _, err := c.CreateTenant(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		sb, err := c.Create(ctx, "acme", controller.CreateRequest{TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		pr, pw := io.Pipe()
		defer pw.Close()
		done := make(chan error, 1)
		go func() {
			_, err := c.Exec(ctx, "acme", string(sb.ID), rung.ExecRequest{Command: "cat", Backend: rung.BackendIsolate, Timeout: 24 * time.Hour},
				controller.ExecOptions{Stdin: pr})
			done <- err
		}()
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("the exec outlived its sandbox's TTL")
		}
		if _, err := c.Get(ctx, "acme", string(sb.ID)); !errors.Is(err, rung.ErrNotFound) {
			t.Errorf("sandbox after its TTL: %v", err)
		}
	})
}

// A TTL delete that fails (here the container will not stop) is retried a
// minute later, not at once: the alarm moves, so the alarm loop neither
// spins nor gives up, and the sandbox stays until a delete succeeds.
func TestTTLDeleteFailureRetried(t *testing.T) {
	pool := storagetest.NewTestPool(t)
	dbPath := filepath.Join(t.TempDir(), "rung.db")
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st, err := sqlite.Open(ctx, dbPath)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		tier := &fakeTier{running: map[rung.SandboxID]bool{}, stopErr: errors.New("the runtime does not answer")}
		c, _, err := controller.New(ctx, controller.Config{Store: st, Pool: pool, Container: func(ev controller.ContainerEvents) controller.ContainerTier {
			tier.ev = ev
			return tier
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := st.CreateTenant(ctx, store.Tenant{ID: "acme"}); err != nil {
			t.Fatal(err)
		}
		sb, err := c.Create(ctx, "acme", controller.CreateRequest{TTL: time.Hour, IdleTimeout: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "acme", string(sb.ID), rung.ExecRequest{Command: "true", Backend: rung.BackendContainer}, controller.ExecOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour + 30*time.Minute)
		synctest.Wait()
		tier.mu.Lock()
		attempts := len(tier.stopped)
		tier.mu.Unlock()
		// Due at 1h, then once a minute: about 30 attempts by 1h30.
		if attempts < 2 || attempts > 40 {
			t.Errorf("%d delete attempts in the 30 minutes after the TTL; want one a minute", attempts)
		}
		if _, err := c.Get(ctx, "acme", string(sb.ID)); err != nil {
			t.Errorf("a sandbox whose delete failed: %v", err)
		}
		tier.mu.Lock()
		tier.stopErr = nil
		tier.mu.Unlock()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if _, err := c.Get(ctx, "acme", string(sb.ID)); !errors.Is(err, rung.ErrNotFound) {
			t.Errorf("after the container stopped, the retried delete left the sandbox: %v", err)
		}
	})
}

// TestTTLStop: a sandbox whose OnExpiry says stop is kept when its TTL
// runs out, with its TTL cleared, the expiry's labels merged into its own
// and a sandbox.expiry_stopped entry; a TTL moved later before it runs
// out stops it only then. Time is synctest's fake clock.
func TestTTLStop(t *testing.T) {
	pool := storagetest.NewTestPool(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		c := controllertest.New(t, controller.Config{Pool: pool})
		if _, err := c.CreateTenant(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		onExpiry := rung.Expiry{Stop: true, Labels: map[string]string{"e2b.paused": "true"}}
		if _, err := c.Create(ctx, "acme", controller.CreateRequest{TTL: time.Hour, OnExpiry: rung.Expiry{Labels: onExpiry.Labels}}); !errors.Is(err, rung.ErrInvalid) {
			t.Errorf("expiry labels without stop: %v, want ErrInvalid", err)
		}
		sb, err := c.Create(ctx, "acme", controller.CreateRequest{TTL: time.Hour, Labels: map[string]string{"a": "b"}, OnExpiry: onExpiry})
		if err != nil {
			t.Fatal(err)
		}
		moved, err := c.Create(ctx, "acme", controller.CreateRequest{TTL: time.Hour, OnExpiry: onExpiry})
		if err != nil {
			t.Fatal(err)
		}
		later := 2 * time.Hour
		if _, err := c.Update(ctx, "acme", string(moved.ID), controller.UpdateRequest{ExpiresIn: &later}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(61 * time.Minute)
		synctest.Wait()
		got, err := c.Get(ctx, "acme", string(sb.ID))
		if err != nil {
			t.Fatalf("sandbox with OnExpiry stop after its TTL: %v", err)
		}
		if got.TTL != 0 || got.Labels["e2b.paused"] != "true" || got.Labels["a"] != "b" || got.State != rung.StateReady {
			t.Errorf("after its TTL: ttl %v, labels %v, state %s; want no TTL, a=b and e2b.paused=true, ready", got.TTL, got.Labels, got.State)
		}
		evs, _, err := c.Events(ctx, "acme", string(sb.ID), controller.EventQuery{JournalOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		stopped := 0
		for _, ev := range evs {
			if ev.Type == string(rung.EntrySandboxExpiryStopped) {
				stopped++
			}
		}
		if stopped != 1 {
			t.Errorf("%d sandbox.expiry_stopped entries, want 1", stopped)
		}
		if got, err := c.Get(ctx, "acme", string(moved.ID)); err != nil || got.Labels["e2b.paused"] != "" {
			t.Errorf("sandbox whose TTL was moved, at its old end: %v, %v; want it untouched", got.Labels, err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got, err := c.Get(ctx, "acme", string(moved.ID)); err != nil || got.Labels["e2b.paused"] != "true" {
			t.Errorf("sandbox whose TTL was moved, at its new end: %v, %v; want it stopped", got.Labels, err)
		}
	})
}
