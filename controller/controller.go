// Package controller is the per-sandbox "brain": it owns each sandbox's
// state machine, journal, events, effects and alarms, and runs its execs
// through the router and the tiers. The store is the source of truth; an
// active sandbox has one actor goroutine that serializes the operations
// that conflict (update, delete, alarms), and an idle sandbox costs no
// goroutine and no memory beyond its store row.
package controller

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"sync"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
	"rung.dev/rung/store"
	"rung.dev/rung/usage"
)

// Limits bound what callers may use. Zero fields take the defaults.
type Limits struct {
	SandboxesPerTenant int           // default 10,000
	ExecsPerSandbox    int           // concurrent execs per sandbox; default 16
	ExecsPerTenant     int           // concurrent execs per tenant; default 64
	ExecTimeout        time.Duration // default wall time of one exec; default 10 minutes
	MaxExecTimeout     time.Duration // longest a caller may ask for; default 1 hour
	OutputBytes        int64         // stdout plus stderr kept per exec; default 16 MiB
	ListEntries        int           // entries one file listing may return; default 100,000
	Mailbox            int           // queued operations per sandbox; default 64
	// ExecCPUTime and ExecMemoryBytes bound one isolate exec (see
	// shell.Limits CPUTime and MemoryBytes); defaults 60 s and 256 MiB.
	ExecCPUTime     time.Duration
	ExecMemoryBytes int64
	// IsolateMemoryBytes caps the memory all isolate execs hold together
	// (a shell.MemoryPool); past it an exec is refused (ErrLimit) or ended
	// (limit daemon_memory_bytes). Default: half the Go runtime's memory
	// limit (rung serve --memory-limit), no cap when it has none.
	IsolateMemoryBytes int64
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.SandboxesPerTenant, 10000)
	def(&l.ExecsPerSandbox, 16)
	def(&l.ExecsPerTenant, 64)
	def(&l.ListEntries, 100000)
	def(&l.Mailbox, 64)
	if l.ExecTimeout <= 0 {
		l.ExecTimeout = 10 * time.Minute
	}
	if l.MaxExecTimeout <= 0 {
		l.MaxExecTimeout = time.Hour
	}
	if l.OutputBytes <= 0 {
		l.OutputBytes = 16 << 20
	}
	if l.IsolateMemoryBytes <= 0 {
		if goLimit := debug.SetMemoryLimit(-1); goLimit < math.MaxInt64 {
			l.IsolateMemoryBytes = goLimit / 2
		}
	}
	return l
}

// Config configures a [Controller]. Store and Pool are required.
type Config struct {
	Store store.Store
	Pool  *storage.Pool
	// Container opens the container tier with the events it reports
	// (New calls it once, after Network); nil: the container tier is
	// unavailable.
	Container func(ContainerEvents) ContainerTier
	// CheckImage validates a create request's image reference ("" for
	// the default) for tenant and returns it pinned as name@sha256:…;
	// rung.ErrPermission when the tenant may not start it. Nil accepts
	// any well-formed reference unpinned.
	CheckImage func(tenant rung.TenantID, ref string) (string, error)
	Tools      map[string]shell.Tool // isolate tier commands (shell/tools.All()); nil means builtins only
	Limits     Limits
	// Sizes bounds the sizes each tenant may create (presets included);
	// the zero value gives every tenant DefaultSizePolicy. Warm spares
	// are not checked against it: see [WarmSpec].
	Sizes SizePolicies
	// Retention is how long exec output events are kept; journal entries
	// stay as long as their sandbox. Default 24 hours.
	Retention time.Duration
	// IdleGrace is how long an actor stays after its last operation
	// before its goroutine exits; default 5 seconds.
	IdleGrace time.Duration
	// Warm asks for spare sandboxes, started ahead of the creates that
	// claim them (see [WarmSpec]); it needs Container. Nil keeps no
	// spares.
	Warm   []WarmSpec
	Logger *slog.Logger // nil discards
	// Snapshots bounds each tenant's snapshots (retention, count,
	// bytes); the zero value gives every tenant DefaultSnapshotPolicy.
	Snapshots SnapshotPolicies
	// Fault, if set, is called at named steps of snapshots, forks,
	// rollbacks and imports (fault.go): crash tests end the process there.
	Fault func(point string)
	// Network opens the network tier with the events it reports (New
	// calls it once, first, before Container); nil: every sandbox's
	// network is none.
	Network func(NetworkEvents) NetworkTier
	// Key is the server's secret key (at least 32 random bytes): it seals
	// tenants' secrets at rest and signs shared port URLs. Nil: secrets
	// and shares are unavailable.
	Key []byte
	// Observer is told what the controller does, for metrics; the zero
	// value tells nobody.
	Observer Observer
	// Tracer, when set, gets a span for each exec, each of its runs in
	// a tier and each container start (see [Tracer]); nil traces
	// nothing.
	Tracer Tracer
	// Usage configures the sampling of sandboxes' resource use (see
	// [UsageConfig]); it runs when the container tier can report it.
	Usage UsageConfig
}

// Controller manages every sandbox of one daemon. It is safe for
// concurrent use. Close stops its goroutines.
type Controller struct {
	cfg   Config
	lim   Limits
	st    store.Store
	pool  *storage.Pool
	log   *slog.Logger
	tools map[string]shell.Tool
	mem   *shell.MemoryPool // isolate execs' memory; nil: no cap
	tier  ContainerTier     // nil: no container tier
	net   NetworkTier       // nil: network mode none only

	ctx    context.Context // lifetime: canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // actor and alarm goroutines
	wake   chan struct{}  // cap 1: the alarm goroutine should re-read the next alarm
	warm   Spares         // nil: no spares
	usage  *usage.Sampler // nil: the container tier reports no usage (usage.go)
	snaps  snapshots      // snapshots in use, rollbacks in progress (snapshot.go)
	tokens tokenCache     // verified API tokens (tokens.go)

	mu          sync.Mutex // guards the fields below
	actors      map[rung.SandboxID]*actor
	tenantExecs map[rung.TenantID]int
	waiters     map[rung.SandboxID]chan struct{} // closed on the sandbox's next event
	usedAt      map[rung.SandboxID]time.Time     // a running container's last use (containerUsed)
	closed      bool
}

// New reconciles the store with the pool (see [Controller.Reconcile]),
// starts the alarm goroutine and returns the controller with the
// reconciliation report.
func New(ctx context.Context, cfg Config) (*Controller, Report, error) {
	if cfg.Store == nil || cfg.Pool == nil {
		return nil, Report{}, fmt.Errorf("controller: Store and Pool are required")
	}
	c := &Controller{
		cfg: cfg, lim: cfg.Limits.withDefaults(), st: cfg.Store, pool: cfg.Pool, log: cfg.Logger, tools: cfg.Tools,
		wake: make(chan struct{}, 1), actors: map[rung.SandboxID]*actor{},
		tenantExecs: map[rung.TenantID]int{}, waiters: map[rung.SandboxID]chan struct{}{},
		usedAt: map[rung.SandboxID]time.Time{},
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.lim.IsolateMemoryBytes > 0 {
		c.mem = shell.NewMemoryPool(c.lim.IsolateMemoryBytes, time.Second)
	}
	if c.cfg.Retention <= 0 {
		c.cfg.Retention = 24 * time.Hour
	}
	if c.cfg.IdleGrace <= 0 {
		c.cfg.IdleGrace = 5 * time.Second
	}
	// The network tier first: the container tier gives containers their
	// network through it.
	if cfg.Network != nil {
		c.net = cfg.Network(NetworkEvents{Egress: c.networkEgress, Secret: c.SecretValue, Secrets: c.ListSecrets})
	}
	if cfg.Container != nil {
		c.tier = cfg.Container(c.containerEvents())
	}
	var err error
	if c.warm, err = c.spares(); err != nil {
		return nil, Report{}, err
	}
	// Containers of sandboxes no longer running go before their files.
	if err := c.reapUnowned(ctx); err != nil {
		return nil, Report{}, fmt.Errorf("reconcile: %w", err)
	}
	rep, err := c.reconcile(ctx)
	if err != nil {
		return nil, rep, fmt.Errorf("reconcile: %w", err)
	}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	// Needs c.ctx: an adopted container's exit is journaled.
	// Set before any goroutine starts (adopted containers' watchers, the
	// alarms): a delete reads it.
	c.usage = c.newSampler()
	c.adoptContainers(ctx, rep.running, &rep)
	c.wg.Go(c.alarms) // stops when Close cancels c.ctx
	if c.warm != nil {
		c.wg.Go(func() { c.warm.Run(c.ctx) }) // stops when Close cancels c.ctx, after destroying the spares
	}
	if c.usage != nil {
		c.wg.Go(func() { c.usage.Run(c.ctx) }) // stops when Close cancels c.ctx
	}
	return c, rep, nil
}

// Close cancels running execs, stops every actor, the alarm goroutine
// and the warm pool (destroying its spares) and waits for them. It does
// not close the store or the pool. It is idempotent.
func (c *Controller) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	return nil
}

// Active returns how many sandboxes have an actor now (for tests and
// metrics).
func (c *Controller) Active() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.actors)
}

// poke tells the alarm goroutine that alarms changed.
func (c *Controller) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}
