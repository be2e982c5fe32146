#!/usr/bin/env bash
# make demo: builds printgate and runs `printgate demo`, the whole product in
# one process with no hardware and no account (the reference cloud, three
# emulated printers, the agent with its page; pairing, tickets, a failover
# and a WAN outage). Ctrl-C stops it; DEMO_DURATION (e.g. 60s) stops it by
# itself; DEMO_DIR keeps its config, spool and log there.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .demo
# The build is silent and takes seconds: say so first, or the demo looks hung.
echo "building printgate into .demo/ (10 to 30 s the first time, a second after that)…"
start=$SECONDS
CGO_ENABLED=0 go build -o .demo/printgate ./cmd/printgate
echo "built in $((SECONDS - start)) s; starting the demo"
args=()
[ -n "${DEMO_DURATION:-}" ] && args+=(--duration "$DEMO_DURATION")
[ -n "${DEMO_DIR:-}" ] && args+=(--dir "$DEMO_DIR")
exec .demo/printgate demo ${args[@]+"${args[@]}"}
