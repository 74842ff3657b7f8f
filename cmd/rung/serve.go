package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"rung.dev/rung"
	"rung.dev/rung/agent"
	"rung.dev/rung/container"
	"rung.dev/rung/controller"
	"rung.dev/rung/e2b"
	"rung.dev/rung/network"
	"rung.dev/rung/shell/tools"
	"rung.dev/rung/tracing"
)

func newServe(g *globals) *cobra.Command {
	var data, poolMount, level, memLimit string
	var warm, e2bWarm []string
	var stopGrace time.Duration
	var defaultImage string
	var liveRestore bool
	var keyFile, previewDomain, publicURL string
	var noNetwork bool
	var netRange, netTable string
	var openTenants []string
	var metricsAddr string
	var e2bAddr string
	var otlpEndpoint string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the rung daemon (HTTP API on --addr, state under --data)",
		Long:  "Run the rung daemon. It listens on --addr ($RUNG_ADDR, default 127.0.0.1:7420), keeps its state under --data ($RUNG_DATA, default /var/lib/rung) and on first start writes an admin token to <data>/token (mode 0600). Sandbox sizes are bounded per tenant by <data>/sizes.json, read at start (without it: at most 8 vCPU, 32 GiB memory, 100 GiB disk, 128 MiB to 8 GiB memory per vCPU). Logs are JSON on stderr.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var lv slog.Level
			if err := lv.UnmarshalText([]byte(level)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			// The agent's own backstop caps the grace; zero would mean the
			// default downstream, so it is refused rather than misread.
			if stopGrace <= 0 || stopGrace > agent.DefaultGrace {
				return fmt.Errorf("--stop-grace must be more than 0 and at most %s", agent.DefaultGrace)
			}
			// Checked before anything opens (an image build can take
			// minutes), so a typo fails at once.
			if _, err := tracing.Endpoint(otlpEndpoint, os.Getenv); err != nil {
				return err
			}
			specs, err := warmSpecs(warm, e2bWarm)
			if err != nil {
				return err
			}
			limit := defaultMemoryLimit()
			if memLimit != "" {
				n, err := parseMemoryLimit(memLimit)
				if err != nil {
					return fmt.Errorf("--memory-limit: %w", err)
				}
				limit = n
			}
			log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
			if limit > 0 {
				// Set before the controller starts: its isolate memory pool
				// is half of it (see memlimit.go).
				debug.SetMemoryLimit(limit)
				log.Info("memory limit", "bytes", limit, "isolate_pool_bytes", limit/2)
			}
			ctx := cmd.Context()
			netCfg, err := networkConfig(noNetwork, netRange, netTable)
			if err != nil {
				return err
			}
			d, err := OpenDaemon(ctx, DaemonConfig{Data: dataDir(data), PoolMount: poolMount, Logger: log, Tools: tools.All(), Warm: specs, StopGrace: stopGrace,
				DefaultImage: defaultImage, Terminal: os.Stderr, LiveRestore: liveRestore, KeyFile: keyFile, PreviewDomain: previewDomain, PublicURL: publicURL,
				Network: netCfg, OpenNetworkTenants: tenantIDs(openTenants), Tracing: tracing.Config{Endpoint: otlpEndpoint}})
			if err != nil {
				return err
			}
			defer d.Close()
			if gov := governProcs(log, d.metrics); gov != nil {
				defer gov.Stop()
			}
			addr := g.addr
			if addr == "" {
				addr = os.Getenv("RUNG_ADDR")
			}
			if addr == "" {
				addr = defaultAddr
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			if metricsAddr != "" {
				_, stop, err := serveMetrics(d, metricsAddr, log)
				if err != nil {
					ln.Close()
					return err
				}
				defer stop()
			}
			log.Info("rung serving", "addr", ln.Addr().String(), "data", dataDir(data), "token_file", filepath.Join(dataDir(data), "token"))
			errc := make(chan error, 2)         // one per listener
			go func() { errc <- d.Serve(ln) }() // ends when Shutdown below runs
			serving := 1
			if e2bAddr != "" {
				eln, err := net.Listen("tcp", e2bAddr)
				if err != nil {
					d.Shutdown(ctx)
					<-errc
					return fmt.Errorf("--e2b-addr: %w", err)
				}
				log.Info("rung serving the E2B API", "addr", eln.Addr().String())
				go func() { errc <- d.ServeE2B(eln) }() // ends when Shutdown below runs
				serving++
			}
			var first error
			select {
			case first = <-errc:
				serving--
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			d.Shutdown(sctx)
			for ; serving > 0; serving-- {
				first = cmp.Or(first, <-errc)
			}
			return first
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "data directory (default $RUNG_DATA or /var/lib/rung)")
	cmd.Flags().StringVar(&poolMount, "pool-mount", "", "use this existing btrfs directory as the pool instead of an image")
	cmd.Flags().StringVar(&level, "log-level", "info", "debug, info, warn or error")
	cmd.Flags().StringVar(&memLimit, "memory-limit", "", "the daemon's memory limit (Go's soft limit; half of it caps what isolate execs hold together): bytes with an optional K, M, G or T suffix, or off (default 75% of the host's or the daemon's cgroup's memory, whichever is lower)")
	cmd.Flags().DurationVar(&stopGrace, "stop-grace", container.DefaultStopGrace, "how long a stopping container's commands get after SIGTERM before they are killed (like docker stop's -t)")
	cmd.Flags().StringArrayVar(&warm, "warm", nil, "keep COUNT spare sandboxes of IMAGE (at size preset SIZE, default "+rung.DefaultPreset+") started, so a matching create skips the container's cold start: IMAGE[:SIZE]=COUNT, repeatable (e.g. --warm base=2 --warm lite:basic=1)")
	cmd.Flags().StringArrayVar(&e2bWarm, "e2b-warm", nil, "keep COUNT spare sandboxes for the E2B API's creates of template IMAGE (E2B's default template is base), their /home/user already linked to /workspace: IMAGE[:SIZE]=COUNT, repeatable (e.g. --e2b-warm base=2)")
	cmd.Flags().BoolVar(&liveRestore, "live-restore", false, "leave sandboxes' containers and background processes running when the daemon stops, for the next start to adopt (as docker's live-restore; off, a stop journals container.stopped with reason daemon_stop). A daemon that is killed leaves them either way, and the next start adopts them")
	cmd.Flags().BoolVar(&noNetwork, "no-network", false, "run without the network tier: every sandbox's network is none (loopback only), and modes egress and open are unavailable")
	cmd.Flags().StringVar(&netRange, "network-range", "", "IPv4 range carved into one /30 per sandbox link (default "+network.DefaultRange.String()+"); two daemons on one host need ranges that do not overlap")
	cmd.Flags().StringVar(&netTable, "network-table", "", "the nftables table (family inet) this daemon owns (default rung); two daemons on one host need distinct tables")
	cmd.Flags().StringArrayVar(&openTenants, "open-network-tenant", nil, "a tenant that may use network mode open (direct, without the egress proxy's rules), repeatable; \"*\" for every tenant")
	cmd.Flags().StringVar(&keyFile, "key-file", "", "the server's secret key (32 bytes or more; seals tenants' secrets and signs shared port URLs); default <data>/server.key, made at the first start")
	cmd.Flags().StringVar(&previewDomain, "preview-domain", "", "serve PORT-ID.DOMAIN as port PORT of sandbox sbx_ID (host-based preview URLs; needs a wildcard DNS name, and a wildcard certificate in front for HTTPS)")
	cmd.Flags().StringVar(&publicURL, "public-url", "", "the API's address as clients reach it, for shared port URLs (default: each request's own scheme and host)")
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "", "also serve GET /metrics (Prometheus) on this address without a token, for a scraper on a private network (the API's own /metrics needs an admin token)")
	cmd.Flags().StringVar(&e2bAddr, "e2b-addr", "", "also serve the E2B SDK's API and envd on this address, without the /e2b/api and /e2b/envd prefixes (for the SDK's uploadUrl and downloadUrl); E2B_API_URL and E2B_SANDBOX_URL both point at it")
	cmd.Flags().StringVar(&otlpEndpoint, "otlp-endpoint", "", "send OpenTelemetry traces (a span per API request, exec, tier run and container start) to this OTLP/HTTP collector URL; a URL without a path gets /v1/traces (default $"+tracing.EnvTracesEndpoint+", then $"+tracing.EnvEndpoint+" + /v1/traces; with none, tracing is off)")
	cmd.Flags().StringVar(&defaultImage, "default-image", "base", "image of sandboxes created without one; a built-in image (lite, base, debian) missing from the store is built at start (base: minutes, once; if it cannot be built, lite serves until it is)")
	return cmd
}

// serveMetrics serves d's metrics, without authentication, at GET
// /metrics on addr until the returned stop runs, which waits for the
// server to end. It returns the address it listens on.
func serveMetrics(d *Daemon, addr string, log *slog.Logger) (at string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", d.MetricsHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	done := make(chan struct{})
	go func() { // ends when stop closes srv
		defer close(done)
		srv.Serve(ln)
	}()
	log.Info("metrics serving", "addr", ln.Addr().String())
	return ln.Addr().String(), func() { srv.Close(); <-done }, nil
}

// warmSpecs parses --warm's specs and --e2b-warm's, whose spares have
// E2B's home linked to /workspace for the E2B API's creates.
func warmSpecs(warm, e2bWarm []string) ([]controller.WarmSpec, error) {
	var specs []controller.WarmSpec
	for _, f := range []struct {
		flag, link string
		values     []string
	}{{"--warm", "", warm}, {"--e2b-warm", e2b.Home, e2bWarm}} {
		for _, w := range f.values {
			spec, err := controller.ParseWarm(w)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.flag, err)
			}
			spec.LinkWorkspace = f.link
			specs = append(specs, spec)
		}
	}
	return specs, nil
}
