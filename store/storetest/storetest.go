// Package storetest is the conformance suite for [store.Store]
// implementations: every implementation's tests call [Run] with a
// constructor that returns a fresh, empty store.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/store"
)

// Run runs every behaviour of the contract against stores made by open,
// each in its own subtest with a fresh store. open must register the
// store's Close with t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Tenants", testTenants},
		{"Tokens", testTokens},
		{"SandboxCRUD", testSandboxCRUD},
		{"SandboxNames", testSandboxNames},
		{"SandboxList", testSandboxList},
		{"SandboxLimit", testSandboxLimit},
		{"SandboxFirstEvents", testSandboxFirstEvents},
		{"SandboxStates", testSandboxStates},
		{"Execs", testExecs},
		{"QueuedStartExec", testQueuedStartExec},
		{"LoseExecs", testLoseExecs},
		{"ExecCounts", testExecCounts},
		{"Events", testEvents},
		{"EventsConcurrent", testEventsConcurrent},
		{"ConcurrentFailures", testConcurrentFailures},
		{"TrimEvents", testTrimEvents},
		{"Effects", testEffects},
		{"Alarms", testAlarms},
		{"Snapshots", testSnapshots},
		{"DeleteCascades", testDeleteCascades},
		{"Shares", testShares},
		{"Secrets", testSecrets},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// clock orders the creation times of sandboxes made by [sandbox].
var clock atomic.Int64

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, what string, err, class error) {
	t.Helper()
	if !errors.Is(err, class) {
		t.Fatalf("%s: err = %v, want %v", what, err, class)
	}
}

func tenant(t *testing.T, s store.Store, id rung.TenantID) {
	t.Helper()
	must(t, s.CreateTenant(t.Context(), store.Tenant{ID: id, CreatedAt: t0}))
}

func sandbox(t *testing.T, s store.Store, ten rung.TenantID, name string, labels map[string]string) store.Sandbox {
	t.Helper()
	sb := store.Sandbox{Sandbox: rung.Sandbox{
		ID: rung.NewSandboxID(), Name: name, Tenant: ten, Labels: labels, State: rung.StateReady,
		Size: rung.Presets["lite"], CreatedAt: t0.Add(time.Duration(clock.Add(1)) * time.Millisecond), UpdatedAt: t0,
	}}
	must(t, s.CreateSandbox(t.Context(), sb, 0))
	return sb
}

func testTenants(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	tenant(t, s, "beta")
	wantErr(t, "duplicate tenant", s.CreateTenant(ctx, store.Tenant{ID: "acme"}), rung.ErrExists)
	wantErr(t, "invalid tenant", s.CreateTenant(ctx, store.Tenant{ID: "Bad Name"}), rung.ErrInvalid)
	got, err := s.GetTenant(ctx, "acme")
	must(t, err)
	if got.ID != "acme" || !got.CreatedAt.Equal(t0) {
		t.Errorf("GetTenant = %+v", got)
	}
	_, err = s.GetTenant(ctx, "nobody")
	wantErr(t, "missing tenant", err, rung.ErrNotFound)
	all, err := s.ListTenants(ctx)
	must(t, err)
	if len(all) != 2 || all[0].ID != "acme" || all[1].ID != "beta" {
		t.Errorf("ListTenants = %+v", all)
	}
}

func testTokens(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	tok := store.Token{ID: "tok_1", Tenant: "acme", Hash: [32]byte{1, 2, 3}, Admin: true, CreatedAt: t0}
	must(t, s.CreateToken(ctx, tok))
	wantErr(t, "duplicate hash", s.CreateToken(ctx, store.Token{ID: "tok_2", Tenant: "acme", Hash: tok.Hash}), rung.ErrExists)
	wantErr(t, "missing tenant", s.CreateToken(ctx, store.Token{ID: "tok_3", Tenant: "nobody", Hash: [32]byte{9}}), rung.ErrNotFound)
	got, err := s.TokenByHash(ctx, tok.Hash)
	must(t, err)
	if got.ID != tok.ID || got.Tenant != "acme" || !got.Admin || !got.CreatedAt.Equal(t0) {
		t.Errorf("TokenByHash = %+v, want %+v", got, tok)
	}
	_, err = s.TokenByHash(ctx, [32]byte{4})
	wantErr(t, "unknown hash", err, rung.ErrNotFound)
}

func testSandboxCRUD(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	tenant(t, s, "beta")
	sb := sandbox(t, s, "acme", "web", map[string]string{"team": "x"})
	got, err := s.GetSandbox(ctx, "acme", sb.ID)
	must(t, err)
	if got.Name != "web" || got.Labels["team"] != "x" || got.State != rung.StateReady || !got.CreatedAt.Equal(sb.CreatedAt) || got.Size != sb.Size {
		t.Errorf("GetSandbox = %+v", got)
	}
	if _, err := s.GetSandbox(ctx, "", sb.ID); err != nil {
		t.Errorf("GetSandbox any tenant: %v", err)
	}
	_, err = s.GetSandbox(ctx, "beta", sb.ID)
	wantErr(t, "other tenant's sandbox", err, rung.ErrNotFound)
	_, err = s.SandboxByName(ctx, "beta", "web")
	wantErr(t, "other tenant's name", err, rung.ErrNotFound)
	byName, err := s.SandboxByName(ctx, "acme", "web")
	must(t, err)
	if byName.ID != sb.ID {
		t.Errorf("SandboxByName = %s, want %s", byName.ID, sb.ID)
	}

	got.Labels = map[string]string{"team": "y"}
	got.State = rung.StateRunning
	got.IdleTimeout = time.Minute
	got.UpdatedAt = t0.Add(time.Hour)
	got.Network = rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: []rung.NetworkRule{{Action: rung.RuleAllow, Domain: "api.example.com"}}}
	must(t, s.UpdateSandbox(ctx, got))
	again, err := s.GetSandbox(ctx, "acme", sb.ID)
	must(t, err)
	if again.Labels["team"] != "y" || again.State != rung.StateRunning || again.IdleTimeout != time.Minute || !again.UpdatedAt.Equal(got.UpdatedAt) {
		t.Errorf("after update = %+v", again)
	}
	if again.Network.Mode != rung.NetworkEgress || len(again.Network.Rules) != 1 || again.Network.Rules[0].Domain != "api.example.com" {
		t.Errorf("network after update = %+v, want the update's", again.Network)
	}
	missing := got
	missing.ID = rung.NewSandboxID()
	wantErr(t, "update missing", s.UpdateSandbox(ctx, missing), rung.ErrNotFound)
	must(t, s.DeleteSandbox(ctx, sb.ID))
	_, err = s.GetSandbox(ctx, "acme", sb.ID)
	wantErr(t, "deleted sandbox", err, rung.ErrNotFound)
	wantErr(t, "delete twice", s.DeleteSandbox(ctx, sb.ID), rung.ErrNotFound)
}

func testSandboxNames(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	tenant(t, s, "beta")
	a := sandbox(t, s, "acme", "web", nil)
	sandbox(t, s, "beta", "web", nil) // same name, other tenant: fine
	sandbox(t, s, "acme", "", nil)    // unnamed sandboxes never clash
	sandbox(t, s, "acme", "", nil)
	dup := store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Name: "web", Tenant: "acme", State: rung.StateReady, CreatedAt: t0}}
	wantErr(t, "duplicate name", s.CreateSandbox(ctx, dup, 0), rung.ErrExists)
	b := sandbox(t, s, "acme", "api", nil)
	b.Name = "web"
	wantErr(t, "rename onto a taken name", s.UpdateSandbox(ctx, b), rung.ErrExists)
	must(t, s.DeleteSandbox(ctx, a.ID))
	must(t, s.UpdateSandbox(ctx, b)) // the name is free again
}

func testSandboxList(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	tenant(t, s, "beta")
	a := sandbox(t, s, "acme", "a", map[string]string{"env": "dev", "team": "x"})
	b := sandbox(t, s, "acme", "b", map[string]string{"env": "prod"})
	c := sandbox(t, s, "acme", "c", nil)
	sandbox(t, s, "beta", "d", map[string]string{"env": "dev"})
	c.State = rung.StateRunning
	must(t, s.UpdateSandbox(ctx, c))
	ids := func(f store.Filter) []rung.SandboxID {
		l, err := s.ListSandboxes(ctx, f)
		must(t, err)
		var out []rung.SandboxID
		for _, x := range l {
			out = append(out, x.ID)
		}
		return out
	}
	tests := []struct {
		name string
		f    store.Filter
		want []rung.SandboxID
	}{
		{"tenant", store.Filter{Tenant: "acme"}, []rung.SandboxID{a.ID, b.ID, c.ID}},
		{"label", store.Filter{Tenant: "acme", Labels: map[string]string{"env": "dev"}}, []rung.SandboxID{a.ID}},
		{"two labels", store.Filter{Tenant: "acme", Labels: map[string]string{"env": "dev", "team": "x"}}, []rung.SandboxID{a.ID}},
		{"label no match", store.Filter{Tenant: "acme", Labels: map[string]string{"env": "qa"}}, nil},
		{"state", store.Filter{Tenant: "acme", State: rung.StateRunning}, []rung.SandboxID{c.ID}},
		{"limit", store.Filter{Tenant: "acme", Limit: 1}, []rung.SandboxID{a.ID}},
		{"after", store.Filter{Tenant: "acme", Limit: 1, After: &store.Position{Created: a.CreatedAt, ID: a.ID}}, []rung.SandboxID{b.ID}},
		{"after the last", store.Filter{Tenant: "acme", After: &store.Position{Created: c.CreatedAt, ID: c.ID}}, nil},
		{"after and state", store.Filter{Tenant: "acme", State: rung.StateRunning, After: &store.Position{Created: a.CreatedAt, ID: a.ID}}, []rung.SandboxID{c.ID}},
		// A position whose sandbox is gone still places the page.
		{"after a deleted one", store.Filter{Tenant: "acme", After: &store.Position{Created: b.CreatedAt, ID: b.ID + "x"}}, []rung.SandboxID{c.ID}},
		{"newest first", store.Filter{Tenant: "acme", Desc: true}, []rung.SandboxID{c.ID, b.ID, a.ID}},
		{"newest first, after", store.Filter{Tenant: "acme", Desc: true, Limit: 1, After: &store.Position{Created: c.CreatedAt, ID: c.ID}}, []rung.SandboxID{b.ID}},
		{"created from", store.Filter{Tenant: "acme", CreatedFrom: b.CreatedAt}, []rung.SandboxID{b.ID, c.ID}},
		{"created from, later", store.Filter{Tenant: "acme", CreatedFrom: c.CreatedAt.Add(time.Nanosecond)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(tc.f)
			if len(got) != len(tc.want) {
				t.Fatalf("ListSandboxes(%+v) = %v, want %v", tc.f, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("ListSandboxes(%+v) = %v, want %v", tc.f, got, tc.want)
				}
			}
		})
	}
}

func testSandboxStates(t *testing.T, s store.Store) {
	ctx := t.Context()
	got, err := s.SandboxStates(ctx)
	must(t, err)
	if len(got) != 0 {
		t.Errorf("SandboxStates of an empty store = %v, want none", got)
	}
	tenant(t, s, "acme")
	tenant(t, s, "beta")
	sandbox(t, s, "acme", "a", nil)
	sandbox(t, s, "beta", "b", nil)
	c := sandbox(t, s, "beta", "c", nil)
	c.State = rung.StateRunning
	must(t, s.UpdateSandbox(ctx, c))
	got, err = s.SandboxStates(ctx)
	must(t, err)
	want := map[rung.State]int{rung.StateReady: 2, rung.StateRunning: 1}
	if !maps.Equal(got, want) {
		t.Errorf("SandboxStates = %v, want %v", got, want)
	}
}

func testSandboxLimit(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	for range 2 {
		must(t, s.CreateSandbox(ctx, store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Tenant: "acme", State: rung.StateReady, CreatedAt: t0}}, 2))
	}
	err := s.CreateSandbox(ctx, store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Tenant: "acme", State: rung.StateReady, CreatedAt: t0}}, 2)
	wantErr(t, "third sandbox with a limit of 2", err, rung.ErrLimit)
	// A refused create appends none of its events either.
	id := rung.NewSandboxID()
	err = s.CreateSandbox(ctx, store.Sandbox{Sandbox: rung.Sandbox{ID: id, Tenant: "acme", State: rung.StateReady, CreatedAt: t0}}, 2, ev("a", true))
	wantErr(t, "third sandbox with events", err, rung.ErrLimit)
	if n, err := s.LastSeq(ctx, id); err == nil && n != 0 {
		t.Errorf("a refused create left events up to seq %d", n)
	}
}

func testSandboxFirstEvents(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	sb := store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Tenant: "acme", State: rung.StateRunning, CreatedAt: t0}}
	must(t, s.CreateSandbox(ctx, sb, 0, ev("created", true), ev("started", true)))
	all, err := s.ListEvents(ctx, sb.ID, store.EventQuery{})
	must(t, err)
	if len(all) != 2 || all[0].Type != "created" || all[0].Seq != 1 || all[1].Type != "started" || all[1].Seq != 2 {
		t.Errorf("events of a create with its first events = %+v", all)
	}
	// A create refused for its name appends nothing.
	named := sandbox(t, s, "acme", "taken", nil)
	dup := store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Name: named.Name, Tenant: "acme", State: rung.StateReady, CreatedAt: t0}}
	wantErr(t, "duplicate name with events", s.CreateSandbox(ctx, dup, 0, ev("created", true)), rung.ErrExists)
	if n, err := s.LastSeq(ctx, dup.ID); err == nil && n != 0 {
		t.Errorf("a refused create left events up to seq %d", n)
	}
}

func ev(typ string, journal bool) store.Event {
	return store.Event{Time: t0, Type: typ, Journal: journal, Data: json.RawMessage(`{"k":1}`)}
}

func testExecs(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	sb := sandbox(t, s, "acme", "", nil)
	e := store.Exec{ID: rung.NewExecID(), Sandbox: sb.ID, Command: "echo hi", Backend: rung.BackendIsolate, StartedAt: t0}
	seq, err := s.QueueStartExec(ctx, e, ev("exec.started", true)).Wait()
	must(t, err)
	if seq != 1 {
		t.Errorf("StartExec seq = %d, want 1", seq)
	}
	got, err := s.GetExec(ctx, sb.ID, e.ID)
	must(t, err)
	if got.State != store.ExecStarted || got.Command != "echo hi" {
		t.Errorf("started exec = %+v", got)
	}
	e.ExitCode, e.Bytes, e.EndedAt = 3, 10, t0.Add(time.Second)
	last, err := s.EndExec(ctx, e, []store.Event{ev("exec.output", false), ev("exec.ended", true)})
	must(t, err)
	if last != 3 {
		t.Errorf("EndExec last = %d, want 3", last)
	}
	got, err = s.GetExec(ctx, sb.ID, e.ID)
	must(t, err)
	if got.State != store.ExecEnded || got.ExitCode != 3 || got.Bytes != 10 || !got.EndedAt.Equal(e.EndedAt) {
		t.Errorf("ended exec = %+v", got)
	}
	_, err = s.EndExec(ctx, e, nil)
	wantErr(t, "end twice", err, rung.ErrNotFound)
	_, err = s.QueueStartExec(ctx, store.Exec{ID: rung.NewExecID(), Sandbox: rung.NewSandboxID()}, ev("exec.started", true)).Wait()
	wantErr(t, "exec in missing sandbox", err, rung.ErrNotFound)
}

// testQueuedStartExec checks a start queued without waiting: ended before
// any commit took it (recorded whole in one write, which the next read
// sees), committed by its Wait (its context canceled meanwhile), then
// ended, left queued by another write's commit; a missing sandbox's error
// from Wait, and an End there that records nothing.
func testQueuedStartExec(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	sb := sandbox(t, s, "acme", "", nil)
	journal := func() []string {
		evs, err := s.ListEvents(ctx, sb.ID, store.EventQuery{Limit: 1000})
		must(t, err)
		var out []string
		for _, e := range evs {
			out = append(out, fmt.Sprintf("%d:%s", e.Seq, e.Type))
		}
		return out
	}
	end := func(q store.QueuedStart, e store.Exec) error {
		e.ExitCode, e.Bytes, e.EndedAt = 2, 3, t0.Add(time.Millisecond)
		return q.End(ctx, e, []store.Event{ev("exec.output", false), ev("exec.ended", true)})
	}

	// Ended before any commit took it: one write, the same rows and
	// events as a start then an end.
	e := store.Exec{ID: rung.NewExecID(), Sandbox: sb.ID, Command: "echo hi", Backend: rung.BackendIsolate, StartedAt: t0}
	// End's context ends as End returns (the caller's request is over):
	// the write it did not wait for is made all the same.
	ectx, ecancel := context.WithCancel(ctx)
	q := s.QueueStartExec(ectx, e, ev("exec.started", true))
	e.ExitCode, e.Bytes, e.EndedAt = 2, 3, t0.Add(time.Millisecond)
	must(t, q.End(ectx, e, []store.Event{ev("exec.output", false), ev("exec.ended", true)}))
	ecancel()
	got, err := s.GetExec(ctx, sb.ID, e.ID)
	must(t, err)
	if got.State != store.ExecEnded || got.Command != "echo hi" || got.ExitCode != 2 || got.Bytes != 3 || !got.StartedAt.Equal(t0) {
		t.Errorf("exec recorded whole = %+v", got)
	}
	if j := strings.Join(journal(), " "); j != "1:exec.started 2:exec.output 3:exec.ended" {
		t.Errorf("events %s", j)
	}

	// Committed by Wait, its context canceled meanwhile; then ended.
	cctx, cancel := context.WithCancel(ctx)
	e2 := store.Exec{ID: rung.NewExecID(), Sandbox: sb.ID, Command: "sleep 1", Backend: rung.BackendIsolate, StartedAt: t0}
	q = s.QueueStartExec(cctx, e2, ev("exec.started", true))
	cancel()
	seq, err := q.Wait()
	must(t, err)
	if again, err := q.Wait(); seq != 4 || again != seq || err != nil {
		t.Errorf("Wait = %d then %d, %v; want 4 twice", seq, again, err)
	}
	if got, err := s.GetExec(ctx, sb.ID, e2.ID); err != nil || got.State != store.ExecStarted {
		t.Errorf("exec after Wait = %+v, %v; want started", got, err)
	}
	must(t, end(q, e2))
	if j := journal(); len(j) != 6 || j[5] != "6:exec.ended" {
		t.Errorf("events after End after Wait: %v", j)
	}
	if got, err := s.GetExec(ctx, sb.ID, e2.ID); err != nil || got.State != store.ExecEnded {
		t.Errorf("exec after End = %+v, %v; want ended", got, err)
	}

	// Not taken by another write's commit: still queued, it is recorded
	// whole at its end, after the other write.
	e3 := store.Exec{ID: rung.NewExecID(), Sandbox: sb.ID, StartedAt: t0}
	q = s.QueueStartExec(ctx, e3, ev("exec.started", true))
	_, err = s.AppendEvents(ctx, sb.ID, []store.Event{ev("other", true)})
	must(t, err)
	if got, err := s.GetExec(ctx, sb.ID, e3.ID); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("queued start after another write: %+v, %v; want not found (still queued)", got, err)
	}
	must(t, end(q, e3))
	if j := journal(); len(j) != 10 || j[6] != "7:other" || j[7] != "8:exec.started" {
		t.Errorf("events %v", j)
	}

	// Each counted once in the sandbox's tier split, whichever way it ended.
	if row, err := s.GetSandbox(ctx, "acme", sb.ID); err != nil || row.Execs != (rung.ExecCounts{Isolate: 2}) {
		// e3 has no backend: counted in neither.
		t.Errorf("exec counts = %+v, %v; want 2 isolate", row.Execs, err)
	}

	missing := store.Exec{ID: rung.NewExecID(), Sandbox: rung.NewSandboxID()}
	_, err = s.QueueStartExec(ctx, missing, ev("exec.started", true)).Wait()
	wantErr(t, "queued exec in missing sandbox, waited", err, rung.ErrNotFound)
	must(t, end(s.QueueStartExec(ctx, missing, ev("exec.started", true)), missing))
	_, err = s.GetExec(ctx, missing.Sandbox, missing.ID)
	wantErr(t, "queued exec in missing sandbox, ended", err, rung.ErrNotFound)
}

func testLoseExecs(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	a := sandbox(t, s, "acme", "", nil)
	b := sandbox(t, s, "acme", "", nil)
	start := func(sb rung.SandboxID) store.Exec {
		e := store.Exec{ID: rung.NewExecID(), Sandbox: sb, StartedAt: t0}
		_, err := s.QueueStartExec(ctx, e, ev("exec.started", true)).Wait()
		must(t, err)
		return e
	}
	a1, a2, b1, done := start(a.ID), start(a.ID), start(b.ID), start(b.ID)
	_, err := s.EndExec(ctx, done, nil)
	must(t, err)
	var calls []rung.SandboxID
	lost, err := s.LoseExecs(ctx, func(sb rung.SandboxID, ids []rung.ExecID) store.Event {
		calls = append(calls, sb)
		e := ev("exec.lost", true)
		e.Data, _ = json.Marshal(ids)
		return e
	})
	must(t, err)
	if len(lost) != 3 || len(calls) != 2 {
		t.Fatalf("LoseExecs = %d execs, %d journal calls; want 3, 2", len(lost), len(calls))
	}
	for _, e := range []store.Exec{a1, a2, b1} {
		got, err := s.GetExec(ctx, e.Sandbox, e.ID)
		must(t, err)
		if got.State != store.ExecLost {
			t.Errorf("exec %s state = %s, want lost", e.ID, got.State)
		}
	}
	evs, err := s.ListEvents(ctx, a.ID, store.EventQuery{JournalOnly: true})
	must(t, err)
	if last := evs[len(evs)-1]; last.Type != "exec.lost" {
		t.Errorf("last journal entry of a = %s, want exec.lost", last.Type)
	} else {
		var ids []rung.ExecID
		must(t, json.Unmarshal(last.Data, &ids))
		if len(ids) != 2 || ids[0] != a1.ID && ids[1] != a1.ID {
			t.Errorf("lost ids = %v, want %s and %s", ids, a1.ID, a2.ID)
		}
	}
	again, err := s.LoseExecs(ctx, func(rung.SandboxID, []rung.ExecID) store.Event { return ev("exec.lost", true) })
	must(t, err)
	if len(again) != 0 {
		t.Errorf("second LoseExecs = %d execs, want 0", len(again))
	}
}

// testExecCounts: a sandbox's row counts its execs by the tier each
// ended in, ended and lost ones, not those in flight; every read of the
// row has them, and an update of the row keeps them.
func testExecCounts(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	sb := sandbox(t, s, "acme", "counted", nil)
	other := sandbox(t, s, "acme", "", nil)
	start := func(id rung.SandboxID, b rung.Backend) store.Exec {
		e := store.Exec{ID: rung.NewExecID(), Sandbox: id, Backend: b, StartedAt: t0}
		_, err := s.QueueStartExec(ctx, e, ev("exec.started", true)).Wait()
		must(t, err)
		return e
	}
	for _, b := range []rung.Backend{rung.BackendIsolate, rung.BackendIsolate, rung.BackendContainer} {
		_, err := s.EndExec(ctx, start(sb.ID, b), nil)
		must(t, err)
	}
	// Chosen for the isolate tier, it ends in the container's.
	rerouted := start(sb.ID, rung.BackendIsolate)
	rerouted.Backend = rung.BackendContainer
	_, err := s.EndExec(ctx, rerouted, nil)
	must(t, err)
	start(sb.ID, rung.BackendContainer) // in flight
	check := func(when string, want rung.ExecCounts) {
		t.Helper()
		got, err := s.GetSandbox(ctx, "acme", sb.ID)
		must(t, err)
		if got.Execs != want {
			t.Errorf("%s: GetSandbox execs = %+v, want %+v", when, got.Execs, want)
		}
		got, err = s.SandboxByName(ctx, "acme", "counted")
		must(t, err)
		if got.Execs != want {
			t.Errorf("%s: SandboxByName execs = %+v, want %+v", when, got.Execs, want)
		}
		list, err := s.ListSandboxes(ctx, store.Filter{Tenant: "acme"})
		must(t, err)
		for _, l := range list {
			if l.ID == sb.ID && l.Execs != want {
				t.Errorf("%s: ListSandboxes execs = %+v, want %+v", when, l.Execs, want)
			}
			if l.ID == other.ID && l.Execs != (rung.ExecCounts{}) {
				t.Errorf("%s: the other sandbox's execs = %+v, want none", when, l.Execs)
			}
		}
	}
	check("ended", rung.ExecCounts{Isolate: 2, Container: 2})
	cur, err := s.GetSandbox(ctx, "acme", sb.ID)
	must(t, err)
	cur.Execs = rung.ExecCounts{Isolate: 100} // an update never sets them
	cur.Labels = map[string]string{"k": "v"}
	must(t, s.UpdateSandbox(ctx, cur))
	must(t, s.PostponeExpiry(ctx, sb.ID, t0.Add(time.Hour)))
	check("updated", rung.ExecCounts{Isolate: 2, Container: 2})
	_, err = s.LoseExecs(ctx, func(rung.SandboxID, []rung.ExecID) store.Event { return ev("exec.lost", true) })
	must(t, err)
	check("lost", rung.ExecCounts{Isolate: 2, Container: 3})
}

func testEvents(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	sb := sandbox(t, s, "acme", "", nil)
	other := sandbox(t, s, "acme", "", nil)
	last, err := s.AppendEvents(ctx, sb.ID, []store.Event{ev("a", true), ev("b", false), ev("c", true)})
	must(t, err)
	if last != 3 {
		t.Errorf("AppendEvents = %d, want 3", last)
	}
	if n, err := s.AppendEvents(ctx, other.ID, []store.Event{ev("x", true)}); err != nil || n != 1 {
		t.Errorf("other sandbox's first seq = %d, %v; want 1 (per-sandbox numbering)", n, err)
	}
	all, err := s.ListEvents(ctx, sb.ID, store.EventQuery{})
	must(t, err)
	if len(all) != 3 || all[0].Type != "a" || all[2].Seq != 3 || string(all[1].Data) != `{"k":1}` || !all[0].Time.Equal(t0) {
		t.Errorf("ListEvents = %+v", all)
	}
	after, err := s.ListEvents(ctx, sb.ID, store.EventQuery{After: 1, Limit: 1})
	must(t, err)
	if len(after) != 1 || after[0].Seq != 2 {
		t.Errorf("ListEvents(after 1, limit 1) = %+v", after)
	}
	journal, err := s.ListEvents(ctx, sb.ID, store.EventQuery{JournalOnly: true})
	must(t, err)
	if len(journal) != 2 || journal[1].Type != "c" {
		t.Errorf("journal = %+v", journal)
	}
	if n, err := s.LastSeq(ctx, sb.ID); err != nil || n != 3 {
		t.Errorf("LastSeq = %d, %v; want 3", n, err)
	}
	_, err = s.AppendEvents(ctx, rung.NewSandboxID(), []store.Event{ev("a", true)})
	wantErr(t, "append to missing sandbox", err, rung.ErrNotFound)
}

func testEventsConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	sb := sandbox(t, s, "acme", "", nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if _, err := s.AppendEvents(context.WithoutCancel(ctx), sb.ID, []store.Event{ev("a", false)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	all, err := s.ListEvents(ctx, sb.ID, store.EventQuery{})
	must(t, err)
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: sequence has gaps or duplicates", i, e.Seq)
		}
	}
	if len(all) != 80 {
		t.Errorf("%d events, want 80", len(all))
	}
}

func testTrimEvents(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	sb := sandbox(t, s, "acme", "", nil)
	old, recent := ev("out", false), ev("out", false)
	recent.Time = t0.Add(time.Hour)
	_, err := s.AppendEvents(ctx, sb.ID, []store.Event{ev("j", true), old, recent})
	must(t, err)
	n, err := s.TrimEvents(ctx, t0.Add(time.Minute))
	must(t, err)
	if n != 1 {
		t.Errorf("TrimEvents = %d, want 1", n)
	}
	all, err := s.ListEvents(ctx, sb.ID, store.EventQuery{})
	must(t, err)
	if len(all) != 2 || all[0].Seq != 1 || all[1].Seq != 3 {
		t.Errorf("after trim = %+v, want seqs 1 and 3", all)
	}
}

func testEffects(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	sb := sandbox(t, s, "acme", "", nil)
	e := store.Effect{Sandbox: sb.ID, Key: "pr-42", Kind: "github.pr", Result: json.RawMessage(`{"url":"u1"}`), CreatedAt: t0}
	first, created, err := s.DeclareEffect(ctx, e, ev("effect", true))
	must(t, err)
	if !created || first.Seq != 1 || string(first.Result) != `{"url":"u1"}` {
		t.Errorf("first DeclareEffect = %+v, %v", first, created)
	}
	e2 := e
	e2.Result = json.RawMessage(`{"url":"u2"}`)
	again, created, err := s.DeclareEffect(ctx, e2, ev("effect", true))
	must(t, err)
	if created || string(again.Result) != `{"url":"u1"}` || again.Seq != 1 {
		t.Errorf("second DeclareEffect = %+v, %v; want the first result", again, created)
	}
	if n, _ := s.LastSeq(ctx, sb.ID); n != 1 {
		t.Errorf("second declaration journaled: last seq %d, want 1", n)
	}
	list, err := s.ListEffects(ctx, sb.ID)
	must(t, err)
	if len(list) != 1 || list[0].Key != "pr-42" || list[0].Kind != "github.pr" {
		t.Errorf("ListEffects = %+v", list)
	}
	_, _, err = s.DeclareEffect(ctx, store.Effect{Sandbox: sb.ID}, ev("effect", true))
	wantErr(t, "empty key", err, rung.ErrInvalid)
}

func testAlarms(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	if _, ok, err := s.NextAlarm(ctx); err != nil || ok {
		t.Fatalf("NextAlarm on empty store = %v, %v", ok, err)
	}
	a := sandbox(t, s, "acme", "", nil)
	b := sandbox(t, s, "acme", "", nil)
	a.ExpiresAt = t0.Add(time.Hour)
	a.IdleAt = t0.Add(10 * time.Minute)
	b.ExpiresAt = t0.Add(30 * time.Minute)
	must(t, s.UpdateSandbox(ctx, a))
	must(t, s.UpdateSandbox(ctx, b))
	at, ok, err := s.NextAlarm(ctx)
	must(t, err)
	if !ok || !at.Equal(t0.Add(10*time.Minute)) {
		t.Errorf("NextAlarm = %v, %v; want %v", at, ok, t0.Add(10*time.Minute))
	}
	due, err := s.DueSandboxes(ctx, t0.Add(30*time.Minute))
	must(t, err)
	if len(due) != 2 || due[0].ID != a.ID || !due[0].IdleAt.Equal(a.IdleAt) {
		t.Errorf("DueSandboxes = %+v", due)
	}
	a.IdleAt = time.Time{}
	must(t, s.UpdateSandbox(ctx, a))
	due, err = s.DueSandboxes(ctx, t0.Add(20*time.Minute))
	must(t, err)
	if len(due) != 0 {
		t.Errorf("DueSandboxes after clearing idle = %+v", due)
	}

	// PostponeExpiry moves the TTL alarm and nothing else: a state
	// written since the caller read the row stays.
	b.State = rung.StateDeleted
	must(t, s.UpdateSandbox(ctx, b))
	must(t, s.PostponeExpiry(ctx, b.ID, t0.Add(2*time.Hour)))
	got, err := s.GetSandbox(ctx, "", b.ID)
	must(t, err)
	if got.State != rung.StateDeleted || !got.ExpiresAt.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("after PostponeExpiry: state %s, expires %v", got.State, got.ExpiresAt)
	}
	if due, err = s.DueSandboxes(ctx, t0.Add(90*time.Minute)); err != nil || len(due) != 1 || due[0].ID != a.ID {
		t.Errorf("DueSandboxes after PostponeExpiry = %+v, %v; want only %s", due, err, a.ID)
	}
	if err := s.PostponeExpiry(ctx, rung.NewSandboxID(), t0); !errors.Is(err, rung.ErrNotFound) {
		t.Errorf("PostponeExpiry of a missing sandbox = %v", err)
	}
}

func testSnapshots(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	tenant(t, s, "beta")
	sb := sandbox(t, s, "acme", "src", nil)
	snap := func(name string, at time.Duration, labels map[string]string) store.Snapshot {
		return store.Snapshot{Snapshot: rung.Snapshot{ID: rung.NewSnapshotID(), Name: name, Tenant: "acme", Sandbox: sb.ID,
			Labels: labels, CreatedAt: t0.Add(at), Image: "lite@sha256:" + strings.Repeat("a", 64), TTL: time.Hour},
			State: store.SnapshotReady, Source: sb.Sandbox}
	}
	p := snap("", 0, map[string]string{"kind": "base"})
	c := snap("child", time.Second, map[string]string{"kind": "run", "n": "1"})
	c.Parent, c.ExclusiveBytes, c.ExpiresAt = p.ID, 100, t0.Add(time.Hour)
	must(t, s.CreateSnapshot(ctx, p, 0))
	must(t, s.CreateSnapshot(ctx, c, 0))
	wantErr(t, "duplicate snapshot", s.CreateSnapshot(ctx, p, 0), rung.ErrExists)
	wantErr(t, "duplicate name", s.CreateSnapshot(ctx, snap("child", 2*time.Second, nil), 0), rung.ErrExists)
	other := snap("child", 3*time.Second, nil)
	other.Tenant = "beta"
	must(t, s.CreateSnapshot(ctx, other, 0)) // names are per tenant
	wantErr(t, "over the tenant's cap", s.CreateSnapshot(ctx, snap("", 4*time.Second, nil), 2), rung.ErrLimit)

	got, err := s.GetSnapshot(ctx, "acme", c.ID)
	must(t, err)
	if got.Parent != p.ID || got.Name != "child" || got.Source.ID != sb.ID || got.State != store.SnapshotReady ||
		got.TTL != time.Hour || !got.ExpiresAt.Equal(c.ExpiresAt) || got.Image != c.Image {
		t.Errorf("GetSnapshot = %+v", got)
	}
	if _, err := s.GetSnapshot(ctx, "", c.ID); err != nil {
		t.Errorf("GetSnapshot any tenant: %v", err)
	}
	_, err = s.GetSnapshot(ctx, "beta", c.ID)
	wantErr(t, "other tenant's snapshot", err, rung.ErrNotFound)
	byName, err := s.SnapshotByName(ctx, "acme", "child")
	must(t, err)
	if byName.ID != c.ID {
		t.Errorf("SnapshotByName = %s, want %s", byName.ID, c.ID)
	}
	_, err = s.SnapshotByName(ctx, "acme", "nope")
	wantErr(t, "missing name", err, rung.ErrNotFound)

	list := func(f store.SnapshotFilter) []rung.SnapshotID {
		t.Helper()
		got, err := s.ListSnapshots(ctx, f)
		must(t, err)
		var ids []rung.SnapshotID
		for _, x := range got {
			ids = append(ids, x.ID)
		}
		return ids
	}
	eq := func(what string, got []rung.SnapshotID, want ...rung.SnapshotID) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	eq("list tenant", list(store.SnapshotFilter{Tenant: "acme"}), p.ID, c.ID)
	eq("list sandbox", list(store.SnapshotFilter{Tenant: "acme", Sandbox: sb.ID}), p.ID, c.ID)
	eq("list name", list(store.SnapshotFilter{Tenant: "acme", Name: "child"}), c.ID)
	eq("list label", list(store.SnapshotFilter{Tenant: "acme", Labels: map[string]string{"kind": "run"}}), c.ID)
	eq("list page 1", list(store.SnapshotFilter{Tenant: "acme", Limit: 1}), p.ID)
	eq("list page 2", list(store.SnapshotFilter{Tenant: "acme", Limit: 1, After: p.ID, AfterCreated: p.CreatedAt}), c.ID)
	eq("list page 3", list(store.SnapshotFilter{Tenant: "acme", Limit: 1, After: c.ID, AfterCreated: c.CreatedAt}))
	eq("list newest", list(store.SnapshotFilter{Tenant: "acme", Sandbox: sb.ID, Newest: true, Limit: 1}), c.ID)
	eq("list newest page 2", list(store.SnapshotFilter{Tenant: "acme", Sandbox: sb.ID, Newest: true, After: c.ID, AfterCreated: c.CreatedAt}), p.ID)

	n, bytes, err := s.SnapshotUsage(ctx, "acme")
	must(t, err)
	if n != 2 || bytes != 100 {
		t.Errorf("SnapshotUsage = %d, %d; want 2, 100", n, bytes)
	}
	at, ok, err := s.NextSnapshotExpiry(ctx)
	must(t, err)
	if !ok || !at.Equal(c.ExpiresAt) {
		t.Errorf("NextSnapshotExpiry = %v, %v", at, ok)
	}
	due, err := s.ExpiredSnapshots(ctx, t0.Add(time.Hour), 10)
	must(t, err)
	if len(due) != 1 || due[0].ID != c.ID {
		t.Errorf("ExpiredSnapshots = %+v", due)
	}

	// Pinning clears the expiry; only the mutable fields change.
	upd := c
	upd.Pinned, upd.ExpiresAt, upd.ExclusiveBytes, upd.Name, upd.Parent = true, time.Time{}, 250, "renamed", ""
	must(t, s.UpdateSnapshot(ctx, upd))
	got, err = s.GetSnapshot(ctx, "acme", c.ID)
	must(t, err)
	if !got.Pinned || !got.ExpiresAt.IsZero() || got.ExclusiveBytes != 250 || got.Name != "child" || got.Parent != p.ID {
		t.Errorf("after UpdateSnapshot: %+v", got)
	}
	if _, ok, _ := s.NextSnapshotExpiry(ctx); ok {
		t.Error("a pinned snapshot still has an expiry")
	}
	if _, bytes, _ := s.SnapshotUsage(ctx, "acme"); bytes != 250 {
		t.Errorf("usage after update = %d bytes, want 250", bytes)
	}
	wantErr(t, "update missing", s.UpdateSnapshot(ctx, snap("", 0, nil)), rung.ErrNotFound)

	// A sandbox's snapshots outlive it.
	must(t, s.DeleteSandbox(ctx, sb.ID))
	eq("list after the sandbox's delete", list(store.SnapshotFilter{Tenant: "acme"}), p.ID, c.ID)
	must(t, s.DeleteSnapshot(ctx, p.ID))
	wantErr(t, "delete twice", s.DeleteSnapshot(ctx, p.ID), rung.ErrNotFound)
	eq("list after delete", list(store.SnapshotFilter{Tenant: "acme"}), c.ID)
}

func testDeleteCascades(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	sb := sandbox(t, s, "acme", "", nil)
	e := store.Exec{ID: rung.NewExecID(), Sandbox: sb.ID, StartedAt: t0}
	_, err := s.QueueStartExec(ctx, e, ev("exec.started", true)).Wait()
	must(t, err)
	_, _, err = s.DeclareEffect(ctx, store.Effect{Sandbox: sb.ID, Key: "k"}, ev("effect", true))
	must(t, err)
	must(t, s.DeleteSandbox(ctx, sb.ID))
	_, err = s.GetExec(ctx, sb.ID, e.ID)
	wantErr(t, "exec of deleted sandbox", err, rung.ErrNotFound)
	if evs, _ := s.ListEvents(ctx, sb.ID, store.EventQuery{}); len(evs) != 0 {
		t.Errorf("events of deleted sandbox: %d", len(evs))
	}
	if effs, _ := s.ListEffects(ctx, sb.ID); len(effs) != 0 {
		t.Errorf("effects of deleted sandbox: %d", len(effs))
	}
}

// testConcurrentFailures checks that concurrent writes that fail (a name
// clash) do not take concurrent writes that succeed down with them, as a
// batching implementation might.
func testConcurrentFailures(t *testing.T, s store.Store) {
	ctx := t.Context()
	tenant(t, s, "acme")
	other := sandbox(t, s, "acme", "", nil)
	var wg sync.WaitGroup
	var created, exists, appended atomic.Int64
	for range 16 {
		wg.Go(func() {
			sb := store.Sandbox{Sandbox: rung.Sandbox{ID: rung.NewSandboxID(), Name: "dup", Tenant: "acme", State: rung.StateReady, CreatedAt: t0}}
			switch err := s.CreateSandbox(ctx, sb, 0); {
			case err == nil:
				created.Add(1)
			case errors.Is(err, rung.ErrExists):
				exists.Add(1)
			default:
				t.Error(err)
			}
		})
		wg.Go(func() {
			if _, err := s.AppendEvents(ctx, other.ID, []store.Event{ev("a", true)}); err != nil {
				t.Error(err)
				return
			}
			appended.Add(1)
		})
	}
	wg.Wait()
	if created.Load() != 1 || exists.Load() != 15 || appended.Load() != 16 {
		t.Errorf("created %d, exists %d, appended %d; want 1, 15, 16", created.Load(), exists.Load(), appended.Load())
	}
	if n, _ := s.LastSeq(ctx, other.ID); n != 16 {
		t.Errorf("last seq %d, want 16", n)
	}
}
