// Command peers runs the isolate tier, real bash and just-bash side by
// side on the same scripts and prints a JSON report (see bench.Report):
// per script and runner the p50, p90 and p99 latency in microseconds, the
// ratios isolate/bash and isolate/just-bash, and every runner whose stdout
// differs from bash's. Progress goes to stderr.
//
//	go run ./bench/cmd/peers [-runs 300] [-time 2s] [-scripts REGEXP] [-no-just-bash]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"time"

	"rung.dev/rung/bench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run() error {
	runs := flag.Int("runs", 300, "most timed runs per script and runner")
	minRuns := flag.Int("min-runs", 5, "fewest timed runs per script and runner, whatever the time")
	per := flag.Duration("time", 1500*time.Millisecond, "time budget per script and runner")
	scripts := flag.String("scripts", "", "only scripts whose name matches this regexp")
	noJB := flag.Bool("no-just-bash", false, "leave just-bash out (no npm, no node)")
	cache := flag.String("cache", "", "where just-bash is installed (default $RUNG_BENCH_CACHE or ~/.cache/rung-bench)")
	repoFiles := flag.Int("repo-files", bench.DefaultSizes.RepoFiles, "files in the grep and git repositories")
	out := flag.String("o", "", "write the JSON here instead of stdout")
	flag.Parse()

	opt := bench.Options{
		Sizes:    bench.Sizes{RepoFiles: *repoFiles},
		Budget:   bench.Budget{Runs: *runs, MinRuns: *minRuns, Time: *per},
		JustBash: !*noJB,
		CacheDir: *cache,
		Log: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
		},
	}
	if *scripts != "" {
		re, err := regexp.Compile(*scripts)
		if err != nil {
			return fmt.Errorf("-scripts: %w", err)
		}
		opt.Filter = re
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := bench.Run(ctx, opt)
	if err != nil {
		return err
	}
	rep.Command = "go run ./bench/cmd/peers " + strings.Join(os.Args[1:], " ")
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if *out != "" {
		return os.WriteFile(*out, b, 0o644)
	}
	_, err = os.Stdout.Write(b)
	return err
}
