#!/usr/bin/env bash
# Replays ../shared/conformance/bash-fixtures.jsonl through the isolate tier
# in-process and prints the pass rate (a development benchmark).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNG_CONFORMANCE=${RUNG_CONFORMANCE:-$PWD/../shared/conformance/bash-fixtures.jsonl} \
	go test ./shell -run TestConformanceFixtures -count=1 -v 2>&1 | grep -E 'passed [0-9]+ of|FAIL|^ok' || true
