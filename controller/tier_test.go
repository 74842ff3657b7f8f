package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/controller"
	"rung.dev/rung/storage/storagetest"
	"rung.dev/rung/store"
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
	stopped []string  // why of each Stop
	stopAt  time.Time // the last Stop's time
	stopErr error     // what Stop returns, when set
	// stops, when set, receives each successful Stop's sandbox.
	stops chan rung.SandboxID
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
	f.stopAt = time.Now()
	if f.stopErr != nil {
		return f.stopErr
	}
	delete(f.running, id)
	if f.stops != nil {
		f.stops <- id
	}
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

func (f *fakeTier) Processes(context.Context, rung.SandboxID) ([]controller.ProcessInfo, error) {
	return nil, nil
}

// TestContainerUsedIdle checks how container execs keep a container from
// idling out: a use inside the slack leaves the row alone (no commit per
// exec), yet the idle stop still comes no sooner than a whole idle
// timeout after the last use, whichever row write the alarm went by.
func TestContainerUsedIdle(t *testing.T) {
	tier := &fakeTier{running: map[rung.SandboxID]bool{}, stops: make(chan rung.SandboxID, 4)}
	e := newEnv(t, controller.Config{Container: func(ev controller.ContainerEvents) controller.ContainerTier {
		tier.ev = ev
		return tier
	}})
	ctx := t.Context()
	exec := func(id string) {
		t.Helper()
		if _, err := e.c.Exec(ctx, "acme", id, rung.ExecRequest{Command: "true", Backend: rung.BackendContainer}, controller.ExecOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	updated := func(id string) time.Time {
		t.Helper()
		sb, err := e.c.Get(ctx, "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		return sb.UpdatedAt
	}

	// A long timeout: the second exec, well inside a minute's slack,
	// writes nothing.
	sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{IdleTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	long := string(sb.ID)
	exec(long) // cold: the start arms the alarm
	before := updated(long)
	exec(long)
	if after := updated(long); !after.Equal(before) {
		t.Errorf("an exec inside the idle slack rewrote the row (updated %v -> %v)", before, after)
	}

	// A short one: a first exec arms the alarm, a second one inside the
	// slack (an eighth of the timeout) leaves it where it was, and then
	// the stop. Only a lower bound on its time is checked: a busy machine
	// can delay the stop, never bring it forward.
	const timeout = 2 * time.Second
	sb, err = e.c.Create(ctx, "acme", controller.CreateRequest{IdleTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	short := rung.SandboxID(sb.ID)
	exec(string(short))
	time.Sleep(timeout / 16) // a use later than the row's write; not a wait for an event
	// The use is recorded inside the exec, before it returns: the time
	// before the call bounds it from below.
	last := time.Now()
	exec(string(short))
	select {
	case id := <-tier.stops:
		if id != short {
			t.Fatalf("stopped %s, want %s", id, short)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the idle container was never stopped")
	}
	tier.mu.Lock()
	stopped := tier.stopAt
	tier.mu.Unlock()
	if stopped.Sub(last) < timeout {
		t.Errorf("stopped %v after the last use, sooner than the idle timeout %v", stopped.Sub(last), timeout)
	}
}

// fakeSpares is a warm pool whose spares are bare subvolumes of the
// test's pool: enough for the controller's side of a claim.
type fakeSpares struct {
	pool interface {
		Create(ctx context.Context, name string) error
		Path(name string) string
	}
	owner                      uint32     // of each spare's workspace (uid and gid), as a linked home's
	mu                         sync.Mutex // guards the fields below
	attached, returned, killed []rung.SandboxID
	links                      []string // each Claim's link
}

// fakeNetwork is a network tier that records what Apply is asked and
// fails it for the sandboxes whose policy has a rule for failing.test.
type fakeNetwork struct {
	mu      sync.Mutex // guards applied
	applied []rung.SandboxID
}

func (n *fakeNetwork) Check(rung.TenantID, rung.NetworkPolicy) error { return nil }
func (n *fakeNetwork) Env(rung.Sandbox) map[string]string            { return nil }
func (n *fakeNetwork) Forget(rung.SandboxID)                         {}
func (n *fakeNetwork) Apply(ctx context.Context, sb rung.Sandbox) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.applied = append(n.applied, sb.ID)
	for _, r := range sb.Network.Rules {
		if r.Domain == "failing.test" {
			return errors.New("no address left")
		}
	}
	return nil
}

func (f *fakeSpares) Run(ctx context.Context) { <-ctx.Done() }
func (f *fakeSpares) Claim(ref string, size rung.Size, link string) (rung.SandboxID, string, bool) {
	f.mu.Lock()
	f.links = append(f.links, link)
	f.mu.Unlock()
	id := rung.NewSandboxID()
	if err := f.pool.Create(context.Background(), string(id)); err != nil {
		return "", "", false
	}
	if err := os.Lchown(filepath.Join(f.pool.Path(string(id)), "fs", "workspace"), int(f.owner), int(f.owner)); err != nil {
		return "", "", false
	}
	return id, "lite@sha256:feed", true
}
func (f *fakeSpares) Return(ctx context.Context, id rung.SandboxID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.returned = append(f.returned, id)
}
func (f *fakeSpares) Destroy(ctx context.Context, id rung.SandboxID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, id)
}
func (f *fakeSpares) Attach(id rung.SandboxID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attached = append(f.attached, id)
}
func (f *fakeSpares) Ready() int                     { return 1 }
func (f *fakeSpares) Wait(ctx context.Context) error { return nil }

// userTier is fakeTier whose image lists the user "user" (uid 1000) and
// whose warm pool is spares.
type userTier struct {
	*fakeTier
	spares *fakeSpares
}

func (u userTier) Identity(ref, user string) (controller.Identity, error) {
	if user == "user" {
		return controller.Identity{User: user, UID: 1000, GID: 1000, Home: "/home/user"}, nil
	}
	return controller.Identity{User: "root", Home: "/root"}, nil
}

func (u userTier) Spares([]controller.WarmSpec) (controller.Spares, error) { return u.spares, nil }

// TestCreateOnSpare checks a create that claims a warm spare: one write
// makes the row running with its first two journal entries, the
// workspace belongs to the sandbox's user, and a create refused after
// its claim gives the spare back, its workspace owned as before the claim.
func TestCreateOnSpare(t *testing.T) {
	spares := &fakeSpares{owner: 1234} // a linked home's owner
	tier := userTier{fakeTier: &fakeTier{running: map[rung.SandboxID]bool{}}, spares: spares}
	pool := storagetest.NewTestPool(t)
	spares.pool = pool
	e := &env{pool: pool, db: filepath.Join(t.TempDir(), "rung.db")}
	e.open(t, controller.Config{Warm: []controller.WarmSpec{{Image: "lite", Count: 1}}, Container: func(ev controller.ContainerEvents) controller.ContainerTier {
		tier.ev = ev
		return tier
	}})
	if err := e.st.CreateTenant(t.Context(), store.Tenant{ID: "acme"}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	owner := func(id rung.SandboxID) uint32 {
		t.Helper()
		fi, err := os.Lstat(filepath.Join(pool.Path(string(id)), "fs", "workspace"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Uid
	}

	sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "taken", User: "user"})
	if err != nil {
		t.Fatal(err)
	}
	if sb.State != rung.StateRunning || len(spares.attached) != 1 || spares.attached[0] != sb.ID {
		t.Fatalf("create on a spare: state %s, attached %v", sb.State, spares.attached)
	}
	if got, err := e.c.Get(ctx, "acme", string(sb.ID)); err != nil || got.State != rung.StateRunning || got.User != "user" {
		t.Errorf("the row after a create on a spare: %+v, %v", got, err)
	}
	if uid := owner(sb.ID); uid != 1000 {
		t.Errorf("workspace of the claimed spare owned by %d, want 1000", uid)
	}
	evs, _, err := e.c.Events(ctx, "acme", string(sb.ID), controller.EventQuery{JournalOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	if fmt.Sprint(types) != "[sandbox.created container.started]" {
		t.Errorf("journal after a create on a spare: %v", types)
	}

	if _, err := e.c.Create(ctx, "acme", controller.CreateRequest{Name: "taken", User: "user"}); !errors.Is(err, rung.ErrExists) {
		t.Fatalf("create with a taken name: %v, want already_exists", err)
	}
	if len(spares.returned) != 1 || len(spares.killed) != 0 {
		t.Fatalf("refused create: returned %v, destroyed %v; want the spare returned", spares.returned, spares.killed)
	}
	if uid := owner(spares.returned[0]); uid != spares.owner {
		t.Errorf("workspace of the returned spare owned by %d, want %d again, as before its claim", uid, spares.owner)
	}
}

// TestCreateOnSpareNetwork: a create in mode egress claims a spare (whose
// container runs without network) and gets its network applied as the
// claim ends; when that fails the sandbox stays, its container stopped
// with reason "network" for its next start to prepare. A create's
// LinkWorkspace goes with its claim.
func TestCreateOnSpareNetwork(t *testing.T) {
	spares := &fakeSpares{}
	tier := userTier{fakeTier: &fakeTier{running: map[rung.SandboxID]bool{}}, spares: spares}
	pool := storagetest.NewTestPool(t)
	spares.pool = pool
	net := &fakeNetwork{}
	e := &env{pool: pool, db: filepath.Join(t.TempDir(), "rung.db")}
	e.open(t, controller.Config{Warm: []controller.WarmSpec{{Image: "lite", Count: 1, LinkWorkspace: "/home/user"}},
		Network: func(controller.NetworkEvents) controller.NetworkTier { return net },
		Container: func(ev controller.ContainerEvents) controller.ContainerTier {
			tier.ev = ev
			return tier
		}})
	if err := e.st.CreateTenant(t.Context(), store.Tenant{ID: "acme"}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	egress := func(domain string) rung.NetworkPolicy {
		return rung.NetworkPolicy{Mode: rung.NetworkEgress, Rules: []rung.NetworkRule{{Action: rung.RuleAllow, Domain: domain}}}
	}

	sb, err := e.c.Create(ctx, "acme", controller.CreateRequest{User: "user", Network: egress("api.test"), LinkWorkspace: "/home/user"})
	if err != nil {
		t.Fatal(err)
	}
	if sb.State != rung.StateRunning || len(net.applied) != 1 || net.applied[0] != sb.ID || len(tier.stopped) != 0 {
		t.Fatalf("egress create on a spare: state %s, applied %v, stopped %v", sb.State, net.applied, tier.stopped)
	}
	if len(spares.links) != 1 || spares.links[0] != "/home/user" {
		t.Errorf("claims' links %q, want the create's /home/user", spares.links)
	}

	failed, err := e.c.Create(ctx, "acme", controller.CreateRequest{User: "user", Network: egress("failing.test")})
	if err != nil {
		t.Fatalf("a create whose claimed spare's network failed: %v; want the sandbox, its container stopped", err)
	}
	if len(tier.stopped) != 1 || tier.stopped[0] != "network" {
		t.Errorf("container stops %q, want one with reason network", tier.stopped)
	}
	if got, err := e.c.Get(ctx, "acme", string(failed.ID)); err != nil || got.Network.Mode != rung.NetworkEgress {
		t.Errorf("the sandbox after its network failed: %+v, %v", got, err)
	}
}
