package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
)

// fakeTier is a container tier that runs nothing: it answers the calls a
// create, an exec and a delete make, and reports a cold start on its
// first exec through the events the controller handed it. Methods it
// does not override panic (the embedded interface is nil), so a call the
// controller should not make fails the test.
type fakeTier struct {
	controller.ContainerTier
	ev controller.ContainerEvents

	mu      sync.Mutex // guards the fields below
	running map[rung.SandboxID]bool
	stopped []string // why of each Stop
	stopErr error    // what Stop returns, when set
}

func (f *fakeTier) Exec(ctx context.Context, sb rung.Sandbox, req controller.TierRequest) (controller.TierExit, error) {
	f.mu.Lock()
	cold := !f.running[sb.ID]
	f.running[sb.ID] = true
	f.mu.Unlock()
	if cold {
		f.ev.Started(ctx, sb, controller.ContainerStart{Image: "lite@sha256:feed", Digest: "sha256:feed", Runtime: "runc", Took: 3 * time.Millisecond})
	}
	fmt.Fprintf(req.Stdout, "ran %s as %s\n", req.Command, req.User.User)
	f.ev.Used(sb.ID)
	return controller.TierExit{Code: 0, Reason: rung.ExitReasonExit}, nil
}

func (f *fakeTier) Stop(ctx context.Context, id rung.SandboxID, why string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = append(f.stopped, why)
	if f.stopErr != nil {
		return f.stopErr
	}
	delete(f.running, id)
	return nil
}

func (f *fakeTier) Running(id rung.SandboxID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running[id]
}

func (f *fakeTier) Identity(ref, user string) (controller.Identity, error) {
	return controller.Identity{User: user, Home: "/" + user}, nil
}

func (f *fakeTier) ImageUser(string) (string, error) { return "", nil }

func (f *fakeTier) ImagePath(string) (func(string) string, string) { return nil, "" }
func (f *fakeTier) AccountFile(string, string, string) ([]byte, error) {
	return nil, errors.ErrUnsupported
}

func (f *fakeTier) Adopt(context.Context, []rung.Sandbox) (map[rung.SandboxID][]controller.ProcessInfo, map[rung.SandboxID]error) {
	return nil, nil
}

func (f *fakeTier) ReapStale(context.Context, func(rung.SandboxID) bool) ([]rung.SandboxID, error) {
	return nil, nil
}

// TestContainerTierEvents checks the controller's side of the container
// tier: it opens the tier once, with every event set, routes a container
// exec to it, and journals and keeps the sandbox's state from the events
// the tier reports.
func TestContainerTierEvents(t *testing.T) {
	tier := &fakeTier{running: map[rung.SandboxID]bool{}}
	opened := 0
	e := newEnv(t, controller.Config{Container: func(ev controller.ContainerEvents) controller.ContainerTier {
		opened++
		tier.ev = ev
		return tier
	}})
	if opened != 1 || tier.ev.Started == nil || tier.ev.Used == nil || tier.ev.Exited == nil || tier.ev.ProcessExited == nil {
		t.Fatalf("Config.Container called %d times with events %+v; want once, all set", opened, tier.ev)
	}
	ctx := t.Context()
	id := e.sandbox(t)
	res, err := e.c.Exec(ctx, "acme", id, rung.ExecRequest{Command: "uname", Backend: rung.BackendContainer}, controller.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "ran uname as root\n" || res.Backend != rung.BackendContainer {
		t.Errorf("Exec = %q, backend %s; want the tier's output, backend container", res.Stdout, res.Backend)
	}
	state := func() rung.State {
		t.Helper()
		sb, err := e.c.Get(ctx, "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		return sb.State
	}
	if s := state(); s != rung.StateRunning {
		t.Errorf("state after a cold start = %s, want running", s)
	}
	sid := rung.SandboxID(id)
	tier.ev.ProcessExited(sid, controller.ProcessInfo{ID: "p1", Argv: []string{"sleep", "1"}}, controller.ProcessExit{Code: 0, Reason: "exit"})
	tier.ev.Exited(sid, true, "stopped by request")
	if s := state(); s != rung.StateReady {
		t.Errorf("state after the container stopped = %s, want ready", s)
	}
	evs, _, err := e.c.Events(ctx, "acme", id, controller.EventQuery{JournalOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]map[string]any{}
	for _, ev := range evs {
		var d map[string]any
		json.Unmarshal(ev.Data, &d)
		data[ev.Type] = d
	}
	if d := data["container.started"]; d["image"] != "lite@sha256:feed" || d["start_ms"] != float64(3) {
		t.Errorf("container.started = %v", d)
	}
	if d := data["process.exited"]; d["process"] != "p1" {
		t.Errorf("process.exited = %v", d)
	}
	if d := data["container.stopped"]; d["reason"] != "stopped by request" {
		t.Errorf("container.stopped = %v", d)
	}
	if err := e.c.Delete(ctx, "acme", id); err != nil {
		t.Fatal(err)
	}
	if len(tier.stopped) != 1 {
		t.Errorf("Delete stopped the container %d times (%q), want once", len(tier.stopped), tier.stopped)
	}
}
