#!/usr/bin/env bash
# make demo-hub: the demo with the real cloud side. It builds printgate,
# printgate-hub and printersim into .demo/hub/ and runs, each as its own
# process on 127.0.0.1: an emulated printer (it draws each ticket), the hub
# (one node, embedded JetStream, data in .demo/hub/hub) with a tenant, a
# store, an API key and a device token, and the store's agent linked to the
# hub. Then it submits a job to the hub's order API, waits until the agent
# reports it PRINTED, shows its timeline, submits it again (a duplicate,
# printed once), and leaves everything running for curl until Ctrl-C
# (DEMO_DURATION, e.g. 60s, stops it by itself). `make demo` (the reference
# cloud in one process) is unchanged.
# Ports: DEMO_HUB_PORT (18640), DEMO_AGENT_PORT (18631), DEMO_PRINTER_PORT (19100);
# DEMO_HUB_DIR replaces .demo/hub (emptied at start).
set -euo pipefail
cd "$(dirname "$0")/.."

hub_port=${DEMO_HUB_PORT:-18640}
agent_port=${DEMO_AGENT_PORT:-18631}
printer_port=${DEMO_PRINTER_PORT:-19100}
dir=${DEMO_HUB_DIR:-$PWD/.demo/hub}
hub=http://127.0.0.1:$hub_port

fail() { # MESSAGE FIX
	echo "demo-hub: $1" >&2
	echo "fix: $2" >&2
	exit 1
}
if [ $# -gt 0 ]; then
	fail "takes no arguments (got: $*)" "set DEMO_DURATION, DEMO_HUB_DIR or the DEMO_*_PORT variables instead, e.g. DEMO_DURATION=60s make demo-hub"
fi
for p in "$hub_port" "$agent_port" "$printer_port"; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		fail "port $p on 127.0.0.1 is taken" "stop what listens there, or choose others: DEMO_HUB_PORT, DEMO_AGENT_PORT, DEMO_PRINTER_PORT"
	fi
done
command -v curl >/dev/null || fail "curl is not installed" "install it (Debian/Ubuntu: apt-get install curl)"

rm -rf "$dir"
mkdir -p "$dir/agent"
echo "building printgate, printgate-hub and printersim into .demo/hub/ (10 to 60 s the first time)…"
for c in printgate printgate-hub printersim; do
	CGO_ENABLED=0 go build -o "$dir/$c" "./cmd/$c"
done

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 0' INT TERM

echo "== 1. an emulated printer on 127.0.0.1:$printer_port (its tickets are drawn below)"
"$dir/printersim" -model epson -n 1 -base-port "$printer_port" -control "" &
pids+=($!)

echo "== 2. the hub: a tenant, a store, an API key and the store agent's device token"
h() { "$dir/printgate-hub" "$@" --data-dir "$dir/hub"; }
h tenant add --id demo --name "Demo Foods"
h store add --tenant demo --id s001 --name "Store 1"
key=$(h key add --tenant demo 2>/dev/null)
(umask 077 && h device add --store s001 2>/dev/null >"$dir/agent/device-token")
"$dir/printgate-hub" run --data-dir "$dir/hub" --listen "127.0.0.1:$hub_port" >"$dir/hub.out" 2>"$dir/hub.log" &
pids+=($!)

cat >"$dir/printgate.toml" <<TOML
data_dir = "$dir/agent"
listen = "127.0.0.1:$agent_port"
api_token = "demo-hub-token-0123456789abcdef"
[cloud]
url = "ws://127.0.0.1:$hub_port/agent/v1"
auth_url = "$hub/oauth"
[[printers]]
name = "kitchen"
url = "tcp://127.0.0.1:$printer_port"
TOML
echo "== 3. the store's agent, linked to the hub"
"$dir/printgate" run --config "$dir/printgate.toml" >"$dir/agent.log" 2>&1 &
pids+=($!)

api() { curl -sS -H "Authorization: Bearer $key" "$@"; }
for i in $(seq 300); do
	if api "$hub/v1/stores/s001" 2>/dev/null | grep -q '"online":true'; then break; fi
	[ "$i" = 300 ] && fail "the agent did not connect to the hub in 60 s (logs: $dir/hub.log, $dir/agent.log)" "read the logs' last lines"
	sleep 0.2
done
echo "   store s001 is online: $(api "$hub/v1/stores/s001")"

task=DEMO-$(date +%H%M%S)_KITCHEN_v1
job="{\"task_no\":\"$task\",\"printer\":\"kitchen\",\"document\":{\"lines\":[{\"text\":\"Table 4\",\"size\":\"2x2\"},{\"text\":\"1 x Kung Pao chicken\"},{\"text\":\"submitted to printgate-hub\"},{\"cut\":\"partial\"}]}}"
echo "== 4. a job submitted to the hub's order API"
answer=$(api -w ' (%{http_code})' -X POST --data "$job" "$hub/v1/stores/s001/jobs" | tr -d '\n')
echo "   POST $hub/v1/stores/s001/jobs → $answer"
[[ $answer == *"(202)" ]] || fail "the hub did not take the job" "read $dir/hub.log"
for i in $(seq 300); do
	state=$(api "$hub/v1/stores/s001/jobs/$task")
	if echo "$state" | grep -q '"state":"PRINTED"'; then break; fi
	[ "$i" = 300 ] && fail "$task did not reach PRINTED in 60 s: $state" "read $dir/agent.log and $dir/hub.log"
	sleep 0.2
done
echo "   GET .../jobs/$task → $state"
echo "== 5. the same task_no again: a duplicate, not a second ticket"
echo "   POST again → $(api -w ' (%{http_code})' -X POST --data "$job" "$hub/v1/stores/s001/jobs" | tr -d '\n')"

cat <<MSG
== running: the hub $hub, the agent's page http://127.0.0.1:$agent_port/ (token demo-hub-token-0123456789abcdef)
   submit more:  curl -H 'Authorization: Bearer $key' -d '{"task_no":"T-2_K_v1","printer":"kitchen","document":{"lines":[{"text":"hello"},{"cut":"partial"}]}}' $hub/v1/stores/s001/jobs
   the store:    curl -H 'Authorization: Bearer $key' $hub/v1/stores/s001
   logs: $dir/hub.log, $dir/agent.log. Ctrl-C stops everything.
MSG
if [ -n "${DEMO_DURATION:-}" ]; then
	sleep "${DEMO_DURATION}"
	echo "demo-hub: DEMO_DURATION ($DEMO_DURATION) is over"
else
	wait "${pids[0]}"
fi
