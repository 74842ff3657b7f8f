package main

import (
	"log/slog"
	"os"

	"rung.dev/rung/internal/procs"
	"rung.dev/rung/metrics"
)

// governProcs starts adjusting GOMAXPROCS to the daemon's load, one P
// while it is lightly loaded and every P when busy (internal/procs),
// unless $GOMAXPROCS fixes the count, which the runtime has applied; then
// it returns nil. Each change is logged at debug level; m, when set,
// counts them. The caller stops the governor, which gives the process
// its Ps back.
func governProcs(log *slog.Logger, m *metrics.Metrics) *procs.Governor {
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		log.Info("GOMAXPROCS fixed by the environment", "value", v)
		return nil
	}
	g, err := procs.Start(procs.Config{OnChange: func(n int) { log.Debug("GOMAXPROCS changed", "procs", n) }})
	if err != nil {
		log.Warn("GOMAXPROCS left as it is", "err", err)
		return nil
	}
	if m != nil {
		m.WatchProcs(g.Changes)
	}
	return g
}
