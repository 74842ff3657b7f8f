#!/usr/bin/env bash
# Runs the E2B JS SDK's own live tests (a checkout of e2b-dev/E2B, never
# copied into this repository) against a real `rung serve`, then the
# lifecycle tests again with the SDK from npm that rung pins (create and
# connect through /v2), and prints passed/failed/skipped per group. Run by
# hand (issue 15), not by `make test`; results go in docs/BENCHMARKS.md.
#
#   scripts/e2b-sdk-suite.sh CHECKOUT [GROUP...]
#
# CHECKOUT is a checkout of github.com/e2b-dev/E2B, ideally at the tag of
# the npm version rung pins (cmd/rung/testdata/e2bsdk/package.json), e.g.
#   git -C E2B worktree add /work/e2b-checkout e2b@2.51.0
# GROUPs: lifecycle npm-lifecycle files pty git commands api (default: all).
# api is the control plane's own tests: info, kill, list (metadata,
# state, pagination) and snapshot. more (not in the default) is the
# sandbox tests of features beyond the issue's groups: fork, snapshots,
# secure sandboxes, metrics, network rules, internet access, getHost.
#
# Needs root (the daemon mounts its pool), Go, Node >= 20 and npm; the
# checkout's dev dependencies come from the npm registry (pnpm through
# npx), once. State lives in $RUNG_E2B_SUITE_STATE (default
# /var/tmp/rung-e2b-suite): the image store is kept across runs (a first
# run builds base, which takes minutes, unless RUNG_E2B_SUITE_IMAGES names
# an image store to copy it from, such as /var/cache/rung-test/images);
# everything else is made fresh each run and removed at the end. The exit
# status is 0 when every test that ran passed.
# RUNG_E2B_SUITE_PORT (default 7480) and the port after it are the API's
# and the E2B port's. Extra vitest flags: RUNG_E2B_SUITE_VITEST. The
# daemon keeps RUNG_E2B_SUITE_WARM (default 3) warm spares for E2B creates
# of base (`--e2b-warm`), as a deployment that wants its first PTY or
# container command fast would; 0 keeps none, so that every sandbox's first
# container command starts its container cold.
set -euo pipefail

if [ $# -lt 1 ] || [ ! -f "$1/packages/js-sdk/package.json" ]; then
	echo "usage: $0 CHECKOUT-OF-e2b-dev/E2B [GROUP...]" >&2
	exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
checkout=$(cd "$1" && pwd)
shift
sdk=$checkout/packages/js-sdk
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(lifecycle npm-lifecycle files pty git commands api)

state=${RUNG_E2B_SUITE_STATE:-/var/tmp/rung-e2b-suite}
port=${RUNG_E2B_SUITE_PORT:-7480}
api=127.0.0.1:$port
e2b=127.0.0.1:$((port + 1))
data=$state/data
results=$state/results

# Which test files make each group: the live tests under tests/sandbox.
# Lifecycle is the sandbox's own: create, connect (and resume), kill,
# timeout, and the lifecycle options of create.
group_files() {
	case $1 in
	lifecycle | npm-lifecycle)
		echo tests/sandbox/create.test.ts tests/sandbox/connect.test.ts tests/sandbox/kill.test.ts \
			tests/sandbox/timeout.test.ts tests/sandbox/lifecyclePayload.test.ts
		;;
	commands | files | pty | git) echo "tests/sandbox/$1" ;;
	api) echo tests/api/info.test.ts tests/api/kill.test.ts tests/api/list.test.ts tests/api/snapshot.test.ts ;;
	more)
		echo tests/sandbox/fork.test.ts tests/sandbox/snapshot.test.ts tests/sandbox/snapshot-api.test.ts \
			tests/sandbox/secure.test.ts tests/sandbox/metrics.test.ts tests/sandbox/network.test.ts \
			tests/sandbox/internetAccess.test.ts tests/sandbox/host.test.ts
		;;
	*)
		echo "unknown group $1" >&2
		return 1
		;;
	esac
}
for g in "${groups[@]}"; do group_files "$g" >/dev/null; done

pinned=$(node -p "require('$repo/cmd/rung/testdata/e2bsdk/package.json').dependencies.e2b")
have=$(node -p "require('$sdk/package.json').version")
echo "== checkout: e2b $have (rung pins $pinned)"
if [ "$have" != "$pinned" ]; then
	echo "   note: the checkout is not at e2b@$pinned; its tests run against its own src" >&2
fi

mkdir -p "$state"

# 1. The checkout's dev dependencies (vitest and what its config loads),
# once per lock file. --ignore-scripts: nothing is built or downloaded
# beyond the packages; engine-strict is off because the SDK's bundler
# (not used here) wants a newer Node than the tests do.
stamp=$sdk/node_modules/.rung-e2b-suite
lock=$(sha256sum "$checkout/pnpm-lock.yaml" | cut -c1-16)
if [ ! -x "$sdk/node_modules/.bin/vitest" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$lock" ]; then
	pm=$(node -p "require('$checkout/package.json').packageManager || 'pnpm@10'")
	echo "== installing the checkout's dev dependencies with $pm"
	(cd "$checkout" && npx -y "$pm" install --frozen-lockfile --filter 'e2b...' --ignore-scripts \
		--config.engine-strict=false --reporter=append-only) 2>&1 | grep -Ev '^(npm warn|Progress:)' || true
	[ -x "$sdk/node_modules/.bin/vitest" ] || { echo "vitest did not install" >&2; exit 1; }
	echo "$lock" >"$stamp"
fi

# 2. The npm SDK rung pins, for npm-lifecycle: installed from the lock
# file TestE2BSDK uses.
npmsdk=$state/npm-e2b-$pinned
if [[ " ${groups[*]} " == *" npm-lifecycle "* ]] && [ ! -f "$npmsdk/node_modules/e2b/package.json" ]; then
	echo "== installing npm e2b $pinned"
	rm -rf "$npmsdk" && mkdir -p "$npmsdk"
	cp "$repo/cmd/rung/testdata/e2bsdk/package.json" "$repo/cmd/rung/testdata/e2bsdk/package-lock.json" "$npmsdk/"
	(cd "$npmsdk" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi

# 3. rung, built as `make build` does (static: the container tier runs
# it as the sandboxes' agent).
echo "== building rung"
(cd "$repo" && CGO_ENABLED=0 go build -o "$state/rung" ./cmd/rung)
rung=$state/rung

# 4. A fresh daemon: the state of an earlier run goes, the images stay.
# The daemon is stopped at exit, whatever the exit; the pool it mounted
# is unmounted with it, and its leftovers are removed.
daemon=
cleanup() {
	if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
		kill -TERM "$daemon" 2>/dev/null || true
		# A daemon stuck on an exec that does not end (see
		# docs/BENCHMARKS.md, issue 15) gets a minute, then SIGKILL.
		for _ in $(seq 120); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.5; done
		if kill -0 "$daemon" 2>/dev/null; then
			# SIGQUIT makes Go print every goroutine's stack to the log
			# (kept as $state/stuck-serve.log) before it exits.
			echo "rung serve did not stop within a minute of SIGTERM; SIGQUIT for its stacks ($state/stuck-serve.log), then SIGKILL" >&2
			kill -QUIT "$daemon" 2>/dev/null || true
			for _ in $(seq 20); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.5; done
			kill -KILL "$daemon" 2>/dev/null || true
			cp "$results/serve.log" "$state/stuck-serve.log" 2>/dev/null || true
		fi
		wait "$daemon" 2>/dev/null || true
	fi
	stop_leftovers
	# The daemon leaves its nftables table for the next start; there is
	# none here.
	nft delete table inet rung_e2bsuite 2>/dev/null || true
	reset_data
}
# stop_leftovers ends the containers of this run's sandboxes that are
# still running once the daemon is gone (a killed daemon leaves them, as
# docker's does): each runs in the cgroup rung/<sandbox id>.
stop_leftovers() {
	[ -f "$results/serve.log" ] || return 0
	local id d
	for id in $(grep -o '"sandbox":"sbx_[a-z0-9]*"' "$results/serve.log" | cut -d'"' -f4 | sort -u); do
		for d in /sys/fs/cgroup/*/rung/"$id" /sys/fs/cgroup/rung/"$id"; do
			[ -f "$d/cgroup.procs" ] || continue
			xargs -r kill -KILL <"$d/cgroup.procs" 2>/dev/null || true
		done
		for d in /sys/fs/cgroup/*/rung/"$id" /sys/fs/cgroup/rung/"$id"; do
			[ -d "$d" ] || continue
			# The killed processes leave the cgroup as they exit.
			for _ in $(seq 20); do rmdir "$d" 2>/dev/null && break; sleep 0.5; done
			[ -d "$d" ] && echo "cgroup $d left (processes still in it)" >&2
		done
	done
	return 0
}
reset_data() {
	# Mounts a daemon left (a killed one leaves its containers' and the
	# pool's), deepest first.
	if [ -d "$data" ]; then
		{ findmnt -rn -o TARGET | grep "^$data/" || true; } | sort -r | while read -r m; do umount -l "$m" || true; done
		find "$data" -mindepth 1 -maxdepth 1 ! -name images -exec rm -rf {} +
	fi
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
stop_leftovers # of an earlier run that was itself killed
reset_data
mkdir -p "$data"
if [ ! -d "$data/images" ] && [ -n "${RUNG_E2B_SUITE_IMAGES:-}" ]; then
	echo "== copying the image store from $RUNG_E2B_SUITE_IMAGES"
	cp -a --reflink=auto "$RUNG_E2B_SUITE_IMAGES" "$data/images.tmp"
	mv "$data/images.tmp" "$data/images"
fi
rm -rf "$results" && mkdir -p "$results"
echo "== starting rung serve on $api (E2B surface on $e2b; log $results/serve.log)"
# The network tier on a table and range of its own (E2B sandboxes have
# internet access by default: mode egress, which needs it), apart from
# any other daemon's on the host. RUNG_E2B_SUITE_NET overrides the range.
warm=()
[ "${RUNG_E2B_SUITE_WARM:-3}" = 0 ] || warm=(--e2b-warm "base=${RUNG_E2B_SUITE_WARM:-3}")
"$rung" serve --addr "$api" --e2b-addr "$e2b" --data "$data" --network-table rung_e2bsuite \
	--network-range "${RUNG_E2B_SUITE_NET:-10.239.0.0/16}" "${warm[@]}" >"$results/serve.log" 2>&1 &
daemon=$!
export RUNG_ADDR=$api
# No deadline: a first start builds base before it serves.
until [ -s "$data/token" ] && RUNG_TOKEN=$(cat "$data/token") "$rung" ls >/dev/null 2>&1; do
	if ! kill -0 "$daemon" 2>/dev/null; then
		echo "rung serve exited before it served; see $results/serve.log" >&2
		exit 1
	fi
	sleep 0.5
done
export RUNG_TOKEN=$(cat "$data/token")
"$rung" tenant create e2bsuite >/dev/null
key=$("$rung" token create --tenant e2bsuite --e2b)

# 5. The SDK's environment: both surfaces on the E2B port (uploadUrl and
# downloadUrl build un-prefixed URLs), the key for the tenant.
export E2B_API_KEY=$key E2B_API_URL=http://$e2b E2B_SANDBOX_URL=http://$e2b E2B_DOMAIN=$e2b
unset E2B_DEBUG E2B_ACCESS_TOKEN
# Generous timeouts: the machine is shared, and each test creates a
# sandbox (a container start).
vflags=(--project unit --testTimeout 300000 --hookTimeout 300000 --maxWorkers 3 --reporter default
	--silent passed-only ${RUNG_E2B_SUITE_VITEST:-})
for g in "${groups[@]}"; do
	read -r -a files <<<"$(group_files "$g")"
	echo "== group $g: ${files[*]}"
	extra=()
	if [ "$g" = npm-lifecycle ]; then
		# The same tests with the SDK's src replaced by npm's e2b
		# (its create and connect are POST /v2/sandboxes and
		# /v2/sandboxes/{id}/connect).
		extra=(--config "$repo/scripts/e2b-sdk-suite.vitest.mjs")
		export RUNG_E2B_SUITE_NPM_SDK=$npmsdk/node_modules/e2b/dist/index.mjs
	fi
	(cd "$sdk" && ./node_modules/.bin/vitest run "${vflags[@]}" "${extra[@]}" \
		--reporter json --outputFile "$results/$g.json" "${files[@]}") || true
done

# 6. The summary, from vitest's JSON reports.
echo
echo "== summary (reports in $results)"
node - "$results" "${groups[@]}" <<'EOF'
const fs = require('fs')
const [dir, ...groups] = process.argv.slice(2)
const rows = []
const failures = []
for (const g of groups) {
  let r
  try {
    r = JSON.parse(fs.readFileSync(`${dir}/${g}.json`, 'utf8'))
  } catch (e) {
    rows.push(`${g.padEnd(14)} no report (${e.message})`)
    continue
  }
  const n = { passed: 0, failed: 0, skipped: 0 }
  for (const f of r.testResults) {
    const file = f.name.replace(/.*\/tests\//, 'tests/')
    if (f.assertionResults.length === 0 && f.status === 'failed') {
      n.failed++
      failures.push(`${g}: ${file}: ${(f.message || '').split('\n')[0]}`)
    }
    for (const t of f.assertionResults) {
      if (t.status === 'passed') n.passed++
      else if (t.status === 'failed') {
        n.failed++
        const msg = (t.failureMessages[0] || '').split('\n')[0]
        failures.push(`${g}: ${file} > ${t.fullName}: ${msg}`)
      } else n.skipped++
    }
  }
  rows.push(`${g.padEnd(14)} passed ${n.passed}, failed ${n.failed}, skipped ${n.skipped}`)
}
console.log(rows.join('\n'))
if (failures.length) console.log('\nfailed:\n' + failures.map((f) => '  ' + f).join('\n'))
process.exitCode = failures.length || rows.some((r) => r.includes('no report')) ? 1 : 0
EOF
