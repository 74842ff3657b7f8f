#!/usr/bin/env bash
# The test suite as CI runs it. Real parts are required (RUNG_REQUIRE_ALL=1):
# a test that would need btrfs, bash or runc fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUNG_REQUIRE_ALL=1
export GOFLAGS=${GOFLAGS:-}
echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted"; exit 1; fi
echo "== go vet"
go vet ./...
echo "== go test -race"
log=$(mktemp)
set +e
go test -race -timeout 25m -json ./... > "$log"
status=$?
set -e
# A readable summary: per-package results, then failures, then counts.
go run ./internal/testsummary < "$log"
exit $status
