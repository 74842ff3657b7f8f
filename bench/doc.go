// Package bench runs the same shell scripts through the isolate tier
// (rung's in-process interpreter over a sandbox's files) and through its
// peers, side by side: real GNU bash (fork+exec of bash -c SCRIPT with its
// working directory on tmpfs) and just-bash, the TypeScript bash emulator
// (driven in one long-lived Node process, each script run many times
// in-process). It reports per-run latency percentiles, the ratios between
// runners, and whether each runner printed the same stdout as bash.
//
// The Go benchmarks (BenchmarkPeers/<script>/{isolate,bash}) cover the two
// Go-driven runners; `go run ./bench/cmd/peers` runs all three and prints
// a JSON [Report].
package bench
