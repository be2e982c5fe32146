#!/usr/bin/env bash
# bench-cups.sh: `make bench-cups`. Installs CUPS from Debian when
# it is missing, starts cupsd when it is not running, creates a raw queue to
# an emulated printer on 127.0.0.1, builds printgate and cmd/benchcups, and
# runs the comparison; the queue is removed at the end whatever happens.
#
#   scripts/bench-cups.sh [benchcups flags...]   e.g. -n 200 -seed 42
#
# With BENCH_MODE=raw (`make bench-cups-raw`) it makes a second raw
# queue, socket:// at a loopback port that printgate's raw port takes, and
# runs benchcups -mode raw: the same tickets through both queues, direct to
# an emulator against through printgate; both queues are removed at the end.
#
# Environment: BENCH_JSON (default bench-cups.json, bench-cups-raw.json in
# raw mode) names the JSON results, BENCH_QUEUE (default benchraw) the CUPS
# queue, BENCH_RAW_QUEUE (default benchraw-pg) the queue to printgate's raw
# port, BENCH_MODE compare (default) or raw, GO the go command.
set -euo pipefail

GO=${GO:-go}
MODE=${BENCH_MODE:-compare}
QUEUE=${BENCH_QUEUE:-benchraw}
RAW_QUEUE=${BENCH_RAW_QUEUE:-benchraw-pg}
if [ "$MODE" = raw ]; then
	JSON=${BENCH_JSON:-bench-cups-raw.json}
else
	JSON=${BENCH_JSON:-bench-cups.json}
fi
case $MODE in compare | raw) ;; *) echo "bench-cups: BENCH_MODE=$MODE: compare or raw" >&2; exit 2 ;; esac
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
	# cupsd -t first: a CUPS update that refuses a line of the machine's
	# config (cups 2.4.2-3+deb12u10 refuses a valueless Printcap) then says
	# which directive, instead of "cupsd did not start".
	if ! check=$(as_root cupsd -t 2>&1); then
		echo "bench-cups: cupsd refuses its config:" >&2
		echo "$check" | grep -E 'on line [0-9]+ of' >&2 || echo "$check" >&2
		echo "fix: correct the named directive in /etc/cups (cupsd -t checks it), then run make bench-cups again" >&2
		exit 1
	fi
	echo "bench-cups: starting cupsd"
	as_root cupsd
	for _ in $(seq 50); do
		lpstat -r 2>/dev/null | grep -q 'is running' && break
		sleep 0.1
	done
	lpstat -r | grep -q 'is running' || { echo "bench-cups: cupsd did not start" >&2; exit 1; }
fi

# 3. A free loopback port for the emulated printer behind the queue (and,
#    in raw mode, another for printgate's raw port).
free_port() {
	local p=$1
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do
		p=$((p + 1))
	done
	echo "$p"
}
port=$(free_port 19100)
rawport=$(free_port $((port + 1)))

# 4. The raw queue(s). CUPS 2.4 still takes -m raw (with a deprecation
#    warning); if a later one refuses it, a queue with no model is raw too.
queues=("$QUEUE")
[ "$MODE" = raw ] && queues+=("$RAW_QUEUE")
cleanup() {
	for q in "${queues[@]}"; do as_root lpadmin -x "$q" 2>/dev/null || true; done
	rm -rf "$tmp"
}
tmp=$(mktemp -d)
trap cleanup EXIT
make_queue() { # NAME URI
	if ! as_root lpadmin -p "$1" -E -v "$2" -m raw -o printer-is-shared=false 2>"$tmp/lpadmin.err"; then
		echo "bench-cups: -m raw refused ($(cat "$tmp/lpadmin.err")); creating the queue without a model"
		as_root lpadmin -p "$1" -E -v "$2" -o printer-is-shared=false
	fi
	echo "bench-cups: queue $1 → $2 ($(dpkg-query -W -f '${Version}' cups 2>/dev/null || echo 'cups version unknown'))"
}
make_queue "$QUEUE" "socket://127.0.0.1:$port"
[ "$MODE" = raw ] && make_queue "$RAW_QUEUE" "socket://127.0.0.1:$rawport"

# 5. Build and run.
CGO_ENABLED=0 "$GO" build -o "$tmp/printgate" ./cmd/printgate
"$GO" build -o "$tmp/benchcups" ./cmd/benchcups
if [ "$MODE" = raw ]; then
	"$tmp/benchcups" -mode raw -printgate "$tmp/printgate" -queue "$QUEUE" -cups-addr "127.0.0.1:$port" \
		-raw-queue "$RAW_QUEUE" -raw-addr "127.0.0.1:$rawport" -json "$JSON" "$@"
else
	"$tmp/benchcups" -printgate "$tmp/printgate" -queue "$QUEUE" -cups-addr "127.0.0.1:$port" -json "$JSON" "$@"
fi
