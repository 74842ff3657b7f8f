package main

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"rung.dev/rung"
	"rung.dev/rung/api"
	"rung.dev/rung/containers"
	"rung.dev/rung/controller"
	"rung.dev/rung/dashboard"
	"rung.dev/rung/e2b"
	"rung.dev/rung/egress"
	"rung.dev/rung/mcp"
	"rung.dev/rung/metrics"
	"rung.dev/rung/network"
	"rung.dev/rung/networks"
	"rung.dev/rung/shell"
	"rung.dev/rung/storage"
	"rung.dev/rung/store"
	"rung.dev/rung/store/sqlite"
	"rung.dev/rung/tracing"
)

// DaemonConfig configures a [Daemon].
type DaemonConfig struct {
	Data   string       // data directory: rung.db, token, the pool image
	Logger *slog.Logger // nil discards
	// PoolMount, if set, is an existing btrfs directory used as the pool
	// instead of an image under Data.
	PoolMount string
	// PoolImageSize is the apparent size of a new pool image; default
	// storage.DefaultImageSize.
	PoolImageSize int64
	Tools         map[string]shell.Tool // isolate tier commands
	Limits        controller.Limits
	// AgentBinary is the static rung binary containers run as their
	// agent; default this executable. A dynamically linked binary (a
	// test binary, a cgo build) leaves the container tier unavailable.
	AgentBinary string
	// NoContainers runs the isolate tier alone.
	NoContainers bool
	// LiveRestore makes Close leave the sandboxes' containers running
	// (with their background processes) for the next daemon on the same
	// data directory to adopt, as Docker's live-restore does; warm spares
	// are destroyed all the same. A daemon killed outright leaves them
	// too. Off, Close stops them.
	LiveRestore bool
	// Warm asks for spare sandboxes per image and size, started ahead
	// of the creates that claim them (`rung serve --warm lite=2`). Nil
	// keeps none; without the container tier it is ignored with a
	// warning.
	Warm []controller.WarmSpec
	// StopGrace is how long a stopping container's commands get after
	// SIGTERM before they are killed; zero means container.DefaultStopGrace.
	StopGrace time.Duration
	// DefaultImage is the image of sandboxes created without one;
	// default "lite", which builds in seconds: tests and benchmarks that
	// start a daemon in-process get it unless they ask for another.
	// `rung serve` sets "base" (--default-image). A built-in image the
	// store lacks is built before the daemon serves (base: minutes);
	// when that fails the daemon serves with lite, saying why, and tries
	// again at the next start. Another image must be in the store.
	DefaultImage string
	// ImageDir is the image store's directory; default <Data>/images.
	// Tests point daemons at a shared cache, so base is built once.
	ImageDir string
	// Terminal, when it is a terminal, shows a build at start as one
	// line redrawn in place; otherwise the build's milestones are logged.
	Terminal *os.File
	// KeyFile holds the server's secret key (32 bytes or more: it seals
	// tenants' secrets and signs shared port URLs); default
	// <Data>/server.key, made with mode 0600 at the first start.
	KeyFile string
	// PreviewDomain and PublicURL: see api.Config.
	PreviewDomain, PublicURL string
	// Network, when set, runs the network tier (egress and open modes,
	// the egress proxy) with these links' settings; its StateDir defaults
	// to <Data>/network. Nil: every sandbox's network is none. It needs
	// the container tier. `rung serve` sets it (--network); tests lease
	// their own range and table (internal/nettest).
	Network *network.Config
	// OpenNetworkTenants may use network mode open ("*": all).
	OpenNetworkTenants []rung.TenantID
	// Usage configures the per-sandbox usage sampler; the zero value
	// samples every 5 seconds and keeps an hour. Tests shorten the
	// interval.
	Usage controller.UsageConfig
	// Tracing configures OpenTelemetry traces (`rung serve
	// --otlp-endpoint`); the zero value traces only when the standard
	// OTEL_EXPORTER_OTLP_*ENDPOINT variables name a collector. Its Logger
	// defaults to Logger.
	Tracing tracing.Config
	// netResolver and netRootCAs, in tests, resolve names for the egress
	// proxies and verify the HTTPS servers they intercept for.
	netResolver egress.Resolver
	netRootCAs  *x509.CertPool
}

// Daemon is everything `rung serve` runs, wired together: store, pool,
// controller and API. End-to-end tests start it in-process exactly as
// serve does. Close releases it.
type Daemon struct {
	Token  string // the admin token
	Report controller.Report
	store  *sqlite.DB
	pool   *storage.Pool
	ctrl   *controller.Controller
	// containers is the container tier, nil when unavailable. It stops
	// after the controller and before the pool it bind-mounts from.
	containers *containers.Tier
	handler    http.Handler
	mcp        *mcp.Handler // /mcp, inside handler; closed with srv
	srv        *http.Server
	// e2b serves the E2B SDK's surfaces: under /e2b/api and /e2b/envd of
	// the API's port, and on a port of its own (ServeE2B).
	e2b    *e2b.Server
	api    *api.Server
	e2bSrv *http.Server
	// metrics counts what the controller, the API and the store report
	// (GET /metrics; MetricsHandler).
	metrics *metrics.Metrics
	// tracer exports the spans of requests, execs, tier runs and
	// container starts; nil when tracing is off. Close flushes it last.
	tracer *tracing.Tracer
	// liveRestore: Close leaves the containers running (DaemonConfig).
	liveRestore bool
	// links and networks are the network tier, nil when off.
	links    *network.Manager
	networks *networks.Tier
	log      *slog.Logger
}

// OpenDaemon opens (creating on first start) the data directory, the
// store and the pool, reconciles them and bootstraps the admin token.
// It fails on a malformed <data>/sizes.json (see [loadSizePolicies]).
func OpenDaemon(ctx context.Context, cfg DaemonConfig) (*Daemon, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Data, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	sizes, err := loadSizePolicies(ctx, cfg.Data, log)
	if err != nil {
		return nil, err
	}
	snaps, err := loadSnapshotPolicies(ctx, cfg.Data, log)
	if err != nil {
		return nil, err
	}
	key, err := loadServerKey(cmp.Or(cfg.KeyFile, filepath.Join(cfg.Data, "server.key")))
	if err != nil {
		return nil, err
	}
	d := &Daemon{log: log, liveRestore: cfg.LiveRestore, metrics: metrics.New()}
	if d.store, err = sqlite.Open(ctx, filepath.Join(cfg.Data, "rung.db")); err != nil {
		return nil, err
	}
	d.store.OnLaterError(func(err error) {
		log.Error("an ended exec's record was not written", "err", err)
	})
	if d.pool, err = storage.Open(ctx, storage.PoolConfig{Dir: cfg.Data, Mount: cfg.PoolMount, ImageSize: cfg.PoolImageSize, Logger: log}); err != nil {
		d.store.Close()
		return nil, fmt.Errorf("open pool: %w", err)
	}
	ccfg := controller.Config{Store: store.Observe(d.store, d.metrics.Store), Pool: d.pool, Tools: cfg.Tools, Limits: cfg.Limits, Sizes: sizes,
		Logger: log, Key: key, Observer: d.metrics.Controller(), Usage: cfg.Usage}
	ccfg.Snapshots, ccfg.Fault = snaps, faultPoint()
	if !cfg.NoContainers {
		tc, why, err := openContainers(ctx, cfg, d.pool, log)
		if err != nil {
			d.pool.Close()
			d.store.Close()
			return nil, err
		}
		if tc == nil {
			log.WarnContext(ctx, "container tier unavailable; serving the isolate tier alone", "reason", why)
		} else {
			if cfg.Network != nil {
				if err := d.openNetwork(ctx, cfg, tc, &ccfg); err != nil {
					d.pool.Close()
					d.store.Close()
					return nil, err
				}
			}
			// The controller opens the tier first thing in New, with the
			// events it journals (after the network tier, which the
			// container tier uses).
			ccfg.Container = func(ev controller.ContainerEvents) controller.ContainerTier {
				if d.networks != nil {
					tc.Network = d.networks
				}
				d.containers = containers.New(*tc, ev)
				return d.containers
			}
			ccfg.CheckImage = imageChecker(cfg.Data, tc.Images, tc.DefaultImage)
			ccfg.Warm = cfg.Warm
		}
	}
	if ccfg.Container == nil && len(cfg.Warm) > 0 {
		log.WarnContext(ctx, "warm pool ignored: it needs the container tier")
	}
	tcfg := cfg.Tracing
	tcfg.Logger = cmp.Or(tcfg.Logger, log)
	if d.tracer, err = tracing.New(ctx, tcfg); err == nil {
		if d.tracer != nil {
			// Set only when on: a nil *tracing.Tracer in the interface
			// would not be a nil Tracer.
			ccfg.Tracer = d.tracer
			log.InfoContext(ctx, "tracing", "endpoint", d.tracer.EndpointURL())
		}
		d.ctrl, d.Report, err = controller.New(ctx, ccfg)
	}
	if err != nil {
		d.closeTracer()
		if d.containers == nil && ccfg.Container != nil { // New failed before opening the tier
			ccfg.Container(controller.ContainerEvents{})
		}
		if d.containers != nil {
			d.containers.Close(context.WithoutCancel(ctx))
		}
		d.closeNetwork()
		d.pool.Close()
		d.store.Close()
		return nil, err
	}
	if d.links != nil {
		// Links kept for sandboxes whose containers did not come back
		// (not adopted) go now.
		d.networks.SweepUnadopted(ctx)
	}
	if d.networks != nil {
		// The CAs of sandboxes deleted while no daemon ran go too. The
		// sandboxes are read once, at the first CA file (one query, not
		// one per file: a restart with thousands of sandboxes stays fast).
		var live map[rung.SandboxID]bool
		n, err := d.networks.SweepCAs(func(id rung.SandboxID) (bool, error) {
			if live == nil {
				all, err := d.store.ListSandboxes(ctx, store.Filter{})
				if err != nil {
					return false, err
				}
				live = make(map[rung.SandboxID]bool, len(all))
				for _, sb := range all {
					live[sb.ID] = true
				}
			}
			return live[id], nil
		})
		if err != nil {
			log.WarnContext(ctx, "sweep sandbox CAs", "err", err)
		} else if n > 0 {
			log.InfoContext(ctx, "removed the CAs of sandboxes that no longer exist", "sandboxes", n)
		}
	}
	if !d.Report.Empty() {
		log.WarnContext(ctx, "start-up reconciliation fixed things", "report", d.Report)
	}
	tokenPath := filepath.Join(cfg.Data, "token")
	tok, created, err := d.ctrl.Bootstrap(ctx, tokenPath)
	if err != nil {
		d.Close()
		return nil, err
	}
	if created {
		log.InfoContext(ctx, "admin token created", "path", tokenPath)
	}
	d.Token = tok
	d.metrics.Watch(d.ctrl)
	// The MCP handler calls the API handler in-process with each caller's
	// token, and the API handler serves it at /mcp.
	var apiHandler *api.Server
	d.mcp = mcp.NewHandler(mcp.HandlerConfig{
		API:    http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { apiHandler.ServeHTTP(w, r) }),
		Logger: log,
		Authenticate: func(ctx context.Context, token string) (rung.TenantID, error) {
			tenant, _, err := d.ctrl.Authenticate(ctx, token)
			return tenant, err
		},
	})
	acfg := api.Config{Controller: d.ctrl, Logger: log, PreviewDomain: cfg.PreviewDomain, PublicURL: cfg.PublicURL, MCP: d.mcp,
		Metrics: d.metrics.Handler(), Observe: d.metrics.API, Dashboard: dashboard.Handler(),
		// E2B's traffic access tokens open ports too; d.e2b is made
		// below, before any request.
		TrafficToken: func(tok string, id rung.SandboxID) (rung.TenantID, bool) { return d.e2b.TrafficTenant(tok, id) }}
	if d.tracer != nil {
		acfg.Tracer = d.tracer
	}
	apiHandler = api.New(acfg)
	d.api = apiHandler
	d.e2b = e2b.New(e2b.Config{Controller: d.ctrl, Logger: log, PreviewDomain: cfg.PreviewDomain, Key: key, Observe: apiHandler.Observed})
	mux := http.NewServeMux()
	mux.Handle("/", apiHandler)
	mux.Handle("/e2b/api/", http.StripPrefix("/e2b/api", d.e2b.API()))
	mux.Handle("/e2b/envd/", http.StripPrefix("/e2b/envd", d.e2b.Envd()))
	// The SDK's signed uploadUrl()/downloadUrl() drop E2B_SANDBOX_URL's
	// path, so they arrive at the root.
	mux.Handle("/files", d.e2b.Envd())
	d.handler = mux
	d.e2bSrv = &http.Server{Handler: d.e2b.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	// Made here, not in Serve: a Close that runs before Serve starts must
	// still reach it (Serve on a closed server returns at once).
	d.srv = &http.Server{Handler: d.handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	// MCP sessions hold a stream open each: a graceful stop ends them
	// rather than wait for their clients.
	d.srv.RegisterOnShutdown(d.mcp.Close)
	return d, nil
}

// loadSizePolicies reads the tenants' size policies from
// <data>/sizes.json (see [controller.ParseSizePolicies]), once: a change
// takes effect at the next start. Without the file every tenant gets
// [controller.DefaultSizePolicy]. A malformed file is an error naming
// the file and the field, so the daemon does not start with a policy
// other than the one the operator wrote.
func loadSizePolicies(ctx context.Context, data string, log *slog.Logger) (controller.SizePolicies, error) {
	path := filepath.Join(data, "sizes.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		log.InfoContext(ctx, "size policy: built-in default for every tenant", "policy", controller.DefaultSizePolicy)
		return controller.SizePolicies{}, nil
	}
	if err != nil {
		return controller.SizePolicies{}, fmt.Errorf("size policy: %w", err)
	}
	p, err := controller.ParseSizePolicies(b)
	if err != nil {
		return controller.SizePolicies{}, fmt.Errorf("size policy %s: %w", path, err)
	}
	log.InfoContext(ctx, "size policy loaded", "path", path, "tenants", len(p.Tenants))
	return p, nil
}

// Active returns how many sandboxes have an actor now.
func (d *Daemon) Active() int { return d.ctrl.Active() }

// Handler returns the API handler.
func (d *Daemon) Handler() http.Handler { return d.handler }

// MetricsHandler serves the metrics without authentication, for
// `rung serve --metrics-addr`'s listener; the API serves the same at GET
// /metrics to admin tokens.
func (d *Daemon) MetricsHandler() http.Handler { return d.metrics.Handler() }

// Serve serves the API on ln until Shutdown or Close; after either it
// returns at once.
func (d *Daemon) Serve(ln net.Listener) error {
	err := d.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ServeE2B serves the E2B SDK's control plane and envd on ln, without
// path prefixes, told apart by the E2b-Sandbox-Id header (`rung serve
// --e2b-addr`), until Shutdown or Close.
func (d *Daemon) ServeE2B(ln net.Listener) error {
	err := d.e2bSrv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting requests and waits for those in flight (or
// ctx) on both listeners side by side. Streams that only follow (events,
// a process's output, the E2B SDK's process events and WatchDir) end
// first, at once: they end only when their clients go, so they would
// otherwise hold the stop for all of ctx.
func (d *Daemon) Shutdown(ctx context.Context) error {
	d.api.Stop()
	d.e2b.Stop()
	e2bErr := make(chan error, 1)
	go func() { e2bErr <- d.e2bSrv.Shutdown(ctx) }() // bounded by ctx
	return errors.Join(d.srv.Shutdown(ctx), <-e2bErr)
}

// Close stops the controller and releases the pool and the store.
func (d *Daemon) Close() error {
	if d.srv != nil { // nil when OpenDaemon fails part-way
		d.srv.Close()
		d.e2bSrv.Close()
		d.e2b.Close() // ends the commands E2B's Start began, before the controller
		d.mcp.Close()
	}
	var errs []error
	if d.containers != nil && !d.liveRestore {
		// Stopped while the controller still journals them:
		// container.stopped (reason daemon_stop) and their processes'
		// exits, and the sandboxes become ready.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		errs = append(errs, d.containers.StopAll(ctx, "daemon_stop"))
		cancel()
	}
	errs = append(errs, d.ctrl.Close())
	if d.containers != nil && d.liveRestore {
		// The containers run on for the next daemon, on the pool's files:
		// the pool stays mounted for it to adopt, and their links stay.
		d.containers.Detach()
		d.closeNetwork()
		return errors.Join(append(errs, d.pool.Release(), d.store.Close(), d.closeTracer())...)
	}
	if d.containers != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		errs = append(errs, d.containers.Close(ctx))
		cancel()
	}
	d.closeNetwork()
	return errors.Join(append(errs, d.pool.Close(), d.store.Close(), d.closeTracer())...)
}

// closeTracer sends the spans not yet sent, waiting for the collector
// at most tracerFlush, and stops the exporter. A collector that does not
// answer in time costs those spans, never the stop. It is a no-op
// without tracing.
func (d *Daemon) closeTracer() error {
	if d.tracer == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracerFlush)
	defer cancel()
	if err := d.tracer.Shutdown(ctx); err != nil {
		d.log.Warn("trace flush at stop", "err", err)
	}
	return nil
}

// tracerFlush bounds how long a stopping daemon waits for the collector.
const tracerFlush = 5 * time.Second
