#!/usr/bin/env bash
# The test suite as CI runs it. Real parts are required (RUNG_REQUIRE_ALL=1):
# a test that would need btrfs, bash or runc fails instead of skipping.
#
# Packages with goroutines of their own (storage, store, controller, api,
# agent, container, the daemon, the interpreter's pipes and jobs) run
# under the race detector; the tools' and the shell's differential tables
# (thousands of GNU and bash comparisons, single-threaded per case) run
# without it to keep the suite near 15 minutes. The container suite runs
# a second time under gVisor (runsc).
set -euo pipefail
cd "$(dirname "$0")/.."
export RUNG_REQUIRE_ALL=1
echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted"; exit 1; fi
echo "== go vet"
go vet ./...
plain='rung.dev/rung/shell/tools|rung.dev/rung/shell/shelltest|rung.dev/rung/bench'
race_pkgs=$(go list ./... | grep -Ev "^($plain)(/|$)")
plain_pkgs=$(go list ./... | grep -E "^($plain)(/|$)")
log=$(mktemp)
status=0
echo "== go test -race ($(echo $race_pkgs | wc -w) packages)"
# TestParity (cmd/rung) is a differential table too: thousands of scripts
# through both tiers. It runs in the plain pass.
go test -race -timeout 30m -json -skip '^TestParity$' $race_pkgs >> "$log" || status=$?
echo "== go test ($(echo $plain_pkgs | wc -w) packages and TestParity: differential tables)"
go test -timeout 30m -json $plain_pkgs >> "$log" || status=$?
go test -timeout 30m -json -run '^TestParity$' ./cmd/rung >> "$log" || status=$?
if command -v runsc >/dev/null; then
	echo "== go test ./container under gVisor"
	RUNG_TEST_RUNTIME=runsc go test -timeout 10m -json -run 'TestExecAndShared|TestContainment|TestOOM|TestStop|TestDeath|TestDeepStateDir|TestHostStaysOutOfReach|TestPTY$|TestBootID' ./container >> "$log" || status=$?
fi
# The daemon picks runc or crun by a start-up probe; the containment tests
# and PTY tests run under the other one too.
echo "== go test ./container containment under crun"
RUNG_TEST_RUNTIME=crun go test -timeout 10m -json -run 'TestContainment$|TestHostStaysOutOfReach|TestExecAndShared|TestPTY$|TestBootID' ./container >> "$log" || status=$?
# A readable summary: per-package results, then failures, then counts.
go run ./internal/testsummary < "$log"
exit $status
