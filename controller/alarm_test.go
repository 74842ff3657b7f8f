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
	dbPath := filepath.Join(t.TempDir(), "rung.db")
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st, err := sqlite.Open(ctx, dbPath)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		c, _, err := controller.New(ctx, controller.Config{Store: st, Pool: pool})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := st.CreateTenant(ctx, store.Tenant{ID: "acme"}); err != nil {
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
