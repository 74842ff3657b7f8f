#!/usr/bin/env bash
# Starts `rung serve` with its embedded defaults, then shows a sandbox being
# created and used through the CLI. The daemon keeps running in the
# foreground until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
addr=${1:-127.0.0.1:7420}
data=${2:-/var/lib/rung}
rung=$PWD/bin/rung
export RUNG_ADDR=$addr

"$rung" serve --addr "$addr" --data "$data" &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT INT TERM

for _ in $(seq 100); do
	[ -s "$data/token" ] && "$rung" ls >/dev/null 2>&1 && break
	sleep 0.1
done
export RUNG_TOKEN=$(cat "$data/token")

echo
echo "== rung is serving on $addr (data in $data, admin token in $data/token)"
echo '$ rung create --name demo'
sbx=$("$rung" create --name "demo-$RANDOM")
echo "$sbx"
echo '$ echo "hello from rung" | rung put $SANDBOX /workspace/hello.txt'
echo "hello from rung" | "$rung" put "$sbx" /workspace/hello.txt
echo '$ rung exec $SANDBOX -- '"'"'cat hello.txt && ls -la && grep -c rung hello.txt'"'"
"$rung" exec "$sbx" -- 'cat hello.txt && ls -la && grep -c rung hello.txt'
echo '$ rung exec --json $SANDBOX -- '"'"'echo hi'"'"
"$rung" exec --json "$sbx" -- 'echo hi'
echo
echo "== the daemon keeps running; try: RUNG_ADDR=$addr RUNG_TOKEN=\$(cat $data/token) bin/rung --help"
wait $daemon
