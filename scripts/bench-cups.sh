#!/usr/bin/env bash
# bench-cups.sh: `make bench-cups` (issue 13). Installs CUPS from Debian when
# it is missing, starts cupsd when it is not running, creates a raw queue to
# an emulated printer on 127.0.0.1, builds printgate and cmd/benchcups, and
# runs the comparison; the queue is removed at the end whatever happens.
#
#   scripts/bench-cups.sh [benchcups flags...]   e.g. -n 200 -seed 42
#
# Environment: BENCH_JSON (default bench-cups.json) names the JSON results,
# BENCH_QUEUE (default benchraw) the CUPS queue, GO the go command.
set -euo pipefail

GO=${GO:-go}
QUEUE=${BENCH_QUEUE:-benchraw}
JSON=${BENCH_JSON:-bench-cups.json}
cd "$(dirname "$0")/.."

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# 1. CUPS: the scheduler and the client tools (lp, lpadmin, lpstat, cancel).
if ! command -v cupsd >/dev/null || ! command -v lpadmin >/dev/null || ! command -v lp >/dev/null; then
	echo "bench-cups: installing CUPS (cups cups-client cups-bsd)"
	as_root apt-get update -qq
	DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends cups cups-client cups-bsd >/dev/null
fi

# 2. cupsd: a container has no systemd, so start it directly (it forks into
#    the background) and wait until the scheduler answers.
if ! lpstat -r 2>/dev/null | grep -q 'is running'; then
	echo "bench-cups: starting cupsd"
	as_root cupsd
	for _ in $(seq 50); do
		lpstat -r 2>/dev/null | grep -q 'is running' && break
		sleep 0.1
	done
	lpstat -r | grep -q 'is running' || { echo "bench-cups: cupsd did not start" >&2; exit 1; }
fi

# 3. A free loopback port for the emulated printer behind the queue.
port=19100
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
	port=$((port + 1))
done

# 4. The raw queue. CUPS 2.4 still takes -m raw (with a deprecation
#    warning); if a later one refuses it, a queue with no model is raw too.
cleanup() { as_root lpadmin -x "$QUEUE" 2>/dev/null || true; rm -rf "$tmp"; }
tmp=$(mktemp -d)
trap cleanup EXIT
uri="socket://127.0.0.1:$port"
if ! as_root lpadmin -p "$QUEUE" -E -v "$uri" -m raw -o printer-is-shared=false 2>"$tmp/lpadmin.err"; then
	echo "bench-cups: -m raw refused ($(cat "$tmp/lpadmin.err")); creating the queue without a model"
	as_root lpadmin -p "$QUEUE" -E -v "$uri" -o printer-is-shared=false
fi
echo "bench-cups: queue $QUEUE → $uri ($(dpkg-query -W -f '${Version}' cups 2>/dev/null || echo 'cups version unknown'))"

# 5. Build and run.
CGO_ENABLED=0 "$GO" build -o "$tmp/printgate" ./cmd/printgate
"$GO" build -o "$tmp/benchcups" ./cmd/benchcups
"$tmp/benchcups" -printgate "$tmp/printgate" -queue "$QUEUE" -cups-addr "127.0.0.1:$port" -json "$JSON" "$@"
