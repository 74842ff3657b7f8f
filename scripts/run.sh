#!/usr/bin/env bash
# Starts `rung serve` with its embedded defaults, then shows a sandbox being
# created and used through the CLI. The daemon keeps running in the
# foreground until Ctrl-C. On first start it builds the default image,
# base (Debian 12 with the tools agents use), which takes minutes: the
# daemon shows its progress, and serves once it is built.
set -euo pipefail
cd "$(dirname "$0")/.."
addr=${1:-127.0.0.1:7420}
data=${2:-/var/lib/rung}
rung=$PWD/bin/rung
export RUNG_ADDR=$addr

"$rung" serve --addr "$addr" --data "$data" &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT INT TERM

# No deadline: a first start builds base before it serves. The wait ends
# when the daemon answers, or fails when it exits.
until [ -s "$data/token" ] && RUNG_TOKEN=$(cat "$data/token") "$rung" ls >/dev/null 2>&1; do
	if ! kill -0 "$daemon" 2>/dev/null; then
		echo "rung serve exited before it served; see its messages above" >&2
		exit 1
	fi
	sleep 0.2
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
# Not isolate-tier commands: these start the sandbox's container (base).
echo '$ rung exec $SANDBOX -- '"'"'python3 -c "print(sum(range(10)))"'"'"
if "$rung" exec "$sbx" -- 'python3 -c "print(sum(range(10)))"'; then
	echo '$ rung exec $SANDBOX -- '"'"'node -e "console.log(process.version)"'"'"
	"$rung" exec "$sbx" -- 'node -e "console.log(process.version)"'
	echo '$ rung exec $SANDBOX -- '"'"'id -un && sudo -n id -un && cat hello.txt'"'"
	"$rung" exec "$sbx" -- 'id -un && sudo -n id -un && cat hello.txt'
else
	echo "(no python3: the default image is not base; its build failed above: bin/rung image build base)"
fi
echo
echo "== the dashboard: open http://$addr/ in a browser and log in with the token in $data/token"
echo "== the daemon keeps running; try: RUNG_ADDR=$addr RUNG_TOKEN=\$(cat $data/token) bin/rung --help"
wait $daemon
