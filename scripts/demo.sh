#!/usr/bin/env bash
# make demo: the whole system on one machine, no hardware and no account. It
# builds printgate, printgate-hub, printersim and webhooksink into
# $DEMO_DIR (.demo/run) and runs, each as its own process on 127.0.0.1:
# an emulated printer (it draws each ticket in the terminal), the real hub
# (one node, embedded JetStream) with a tenant, a store, an API key and a
# webhook endpoint, a small webhook receiver that prints each signed
# message, and the store's agent, paired with the hub through the device
# flow (the code `printgate pair` shows, approved with the tenant's key).
# Then: a Chinese ticket submitted to the hub's order API prints and reaches
# PRINTED, its resend is a duplicate, an English ticket through the agent's
# LAN API prints and appears on the hub too; the webhooks of both arrive.
# Kitchen goes offline and its ticket fails over to bar; the hub is
# SIGKILLed, a ticket prints in the store meanwhile, and once the hub is
# back the agent replays what it missed and its webhook arrives.
# It leaves everything running for a browser and curl until Ctrl-C
# (DEMO_DURATION, e.g. 60s, stops it by itself).
# `printgate demo` (the agent's one-process demo on the reference cloud,
# with a failover and a WAN outage) is unchanged.
# Ports: DEMO_HUB_PORT (18640), DEMO_AGENT_PORT (18631), DEMO_PRINTER_PORT
# (19100, and the next one for bar), DEMO_CONTROL_PORT (19180, the emulated
# printers' fault switches), DEMO_HOOK_PORT (18650); DEMO_DIR replaces
# .demo/run (emptied at start).
set -euo pipefail
cd "$(dirname "$0")/.."

hub_port=${DEMO_HUB_PORT:-18640}
agent_port=${DEMO_AGENT_PORT:-18631}
printer_port=${DEMO_PRINTER_PORT:-19100}
hook_port=${DEMO_HOOK_PORT:-18650}
control_port=${DEMO_CONTROL_PORT:-19180}
dir=${DEMO_DIR:-$PWD/.demo/run}
hub=http://127.0.0.1:$hub_port
agent=http://127.0.0.1:$agent_port
pin=246810
api_token=demo-token-0123456789abcdef01

fail() { # MESSAGE FIX
	echo "demo: $1" >&2
	echo "fix: $2" >&2
	exit 1
}
if [ $# -gt 0 ]; then
	fail "takes no arguments (got: $*)" "set DEMO_DURATION, DEMO_DIR or the DEMO_*_PORT variables instead, e.g. DEMO_DURATION=60s make demo"
fi
for p in "$hub_port" "$agent_port" "$printer_port" "$((printer_port + 1))" "$hook_port" "$control_port"; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		fail "port $p on 127.0.0.1 is taken" "stop what listens there, or choose others: DEMO_HUB_PORT, DEMO_AGENT_PORT, DEMO_PRINTER_PORT, DEMO_CONTROL_PORT, DEMO_HOOK_PORT"
	fi
done
command -v curl >/dev/null || fail "curl is not installed" "install it (Debian/Ubuntu: apt-get install curl)"
command -v go >/dev/null || fail "go is not installed" "install Go (https://go.dev/dl/), then make demo"

# wait_for SECONDS WHAT FIX COMMAND...: runs COMMAND every 0.2 s until it
# succeeds, or fails the demo after SECONDS.
wait_for() {
	local n=$(($1 * 5)) what=$2 fix=$3
	shift 3
	for ((i = 0; i < n; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	fail "$what" "$fix"
}

rm -rf "$dir"
mkdir -p "$dir/agent"
# The build is silent and takes a while the first time: say so first.
echo "building printgate, printgate-hub, printersim and webhooksink into $dir (10 to 60 s the first time, seconds after that)…"
start=$SECONDS
for c in printgate printgate-hub printersim webhooksink; do
	CGO_ENABLED=0 go build -o "$dir/$c" "./cmd/$c"
done
echo "built in $((SECONDS - start)) s"

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 0' INT TERM

echo "== 1. two emulated printers (Chinese clones: GB18030), kitchen on 127.0.0.1:$printer_port (printer0) and its backup bar on :$((printer_port + 1)) (printer1); their tickets are drawn below"
"$dir/printersim" -model clone -n 2 -base-port "$printer_port" -control "127.0.0.1:$control_port" &
pids+=($!)

echo "== 2. the hub on $hub: a tenant, a store, an API key, a fleet page user and a webhook endpoint"
h() { "$dir/printgate-hub" "$@" --data-dir "$dir/hub"; }
start_hub() {
	"$dir/printgate-hub" run --data-dir "$dir/hub" --listen "127.0.0.1:$hub_port" >>"$dir/hub.out" 2>>"$dir/hub.log" &
	hub_pid=$!
	pids+=($hub_pid)
}
h tenant add --id demo --name "Demo Foods"
h store add --tenant demo --id s001 --name "Store 1"
key=$(h key add --tenant demo 2>/dev/null)
fleet_pass=demo-manager-0123
printf '%s\n' "$fleet_pass" | h user add --tenant demo --name manager --password-stdin >/dev/null
(umask 077 && h webhook add --tenant demo --url "http://127.0.0.1:$hook_port/printgate" 2>/dev/null >"$dir/webhook.secret")
start_hub
api() { curl -sS -H "Authorization: Bearer $key" "$@"; }
wait_for 60 "the hub did not answer on $hub in 60 s (log: $dir/hub.log)" "read the log's last lines" api -f "$hub/v1/stores"

echo "== 3. a webhook receiver on 127.0.0.1:$hook_port: it checks each message's signature and prints it"
# Its lines go to the terminal and to webhooks.log, which the demo reads.
"$dir/webhooksink" -listen "127.0.0.1:$hook_port" -secret-file "$dir/webhook.secret" > >(tee "$dir/webhooks.log") 2>&1 &
pids+=($!)

cat >"$dir/printgate.toml" <<TOML
data_dir = "$dir/agent"
listen = "127.0.0.1:$agent_port"
api_token = "$api_token"
[cloud]
url = "ws://127.0.0.1:$hub_port/agent/v1"
auth_url = "$hub/oauth"
[defaults]
failover_after = "5s"   # short, so the demo shows a failover quickly
[[printers]]
name = "kitchen"
url = "tcp://127.0.0.1:$printer_port"
profile = "xprinter-80"
backup = "bar"
[[printers]]
name = "bar"
url = "tcp://127.0.0.1:$((printer_port + 1))"
profile = "xprinter-80"
TOML
echo "== 4. the agent pairs with the hub through the device flow (printgate pair; the demo approves the code as the tenant would)"
"$dir/printgate" pair --config "$dir/printgate.toml" >"$dir/pair.out" 2>&1 &
pair_pid=$!
pids+=($pair_pid)
wait_for 30 "printgate pair showed no code in 30 s: $(cat "$dir/pair.out")" "read $dir/hub.log" grep -q "code: " "$dir/pair.out"
sed -n '/^$/,/code: /p' "$dir/pair.out"
code=$(sed -n 's/^ *code: *//p' "$dir/pair.out" | head -n 1)
echo "   POST $hub/v1/stores/s001/pairings/$code/approve → $(api -w '%{http_code}' -o /dev/null -X POST "$hub/v1/stores/s001/pairings/$code/approve")"
wait "$pair_pid" || fail "printgate pair did not finish: $(cat "$dir/pair.out")" "read $dir/hub.log"
grep "^Paired" "$dir/pair.out" | sed 's/^/   /'
echo "$pin" | "$dir/printgate" pin set --config "$dir/printgate.toml" --pin-stdin >/dev/null

echo "== 5. the agent starts, with its page and the LAN API, linked to the hub"
"$dir/printgate" run --config "$dir/printgate.toml" >"$dir/agent.log" 2>&1 &
pids+=($!)
online() { api "$hub/v1/stores/s001" | grep -q '"online":true'; }
wait_for 60 "the agent did not connect to the hub in 60 s (logs: $dir/hub.log, $dir/agent.log)" "read the logs' last lines" online
echo "   GET $hub/v1/stores/s001 → $(api "$hub/v1/stores/s001")"

# printed TASK: the hub reports TASK PRINTED.
printed() { api "$hub/v1/stores/s001/jobs/$1" | grep -q '"state":"PRINTED"'; }
# hooked TASK STATE: the receiver printed TASK's webhook of STATE.
hooked() { grep -q "s001/$1 $2" "$dir/webhooks.log"; }
stamp=$(date +%H%M%S)
task=DEMO-$stamp-1_KITCHEN_v1
job="{\"task_no\":\"$task\",\"printer\":\"kitchen\",\"document\":{\"lines\":[{\"text\":\"4号桌\",\"size\":\"2x2\"},{\"text\":\"1 x 宫保鸡丁\"},{\"text\":\"submitted to printgate-hub\"},{\"cut\":\"partial\"}]}}"
echo "== 6. a ticket submitted to the hub's order API prints on kitchen"
answer=$(api -w ' (%{http_code})' -X POST --data "$job" "$hub/v1/stores/s001/jobs" | tr -d '\n')
echo "   POST $hub/v1/stores/s001/jobs → $answer"
[[ $answer == *"(202)" ]] || fail "the hub did not take the job" "read $dir/hub.log"
wait_for 60 "$task did not reach PRINTED in 60 s: $(api "$hub/v1/stores/s001/jobs/$task")" "read $dir/agent.log and $dir/hub.log" printed "$task"
echo "   GET .../jobs/$task → $(api "$hub/v1/stores/s001/jobs/$task")"
wait_for 60 "the PRINTED webhook of $task did not arrive in 60 s" "read $dir/hub.log (lines of the webhook sender)" hooked "$task" PRINTED

echo "== 7. the same task_no again: a duplicate, not a second ticket"
echo "   POST again → $(api -w ' (%{http_code})' -X POST --data "$job" "$hub/v1/stores/s001/jobs" | tr -d '\n')"

lan=DEMO-$stamp-2_LAN_v1
echo "== 8. a ticket through the agent's LAN API (as a POS in the store sends it): it prints, and the hub sees it too"
answer=$(curl -sS -w ' (%{http_code})' -H "Authorization: Bearer $api_token" -X POST \
	--data "{\"task_no\":\"$lan\",\"printer\":\"kitchen\",\"document\":{\"lines\":[{\"text\":\"Table 7\",\"size\":\"2x2\"},{\"text\":\"2 x Spring rolls\"},{\"text\":\"sent to the agent's LAN API\"},{\"cut\":\"partial\"}]}}" \
	"$agent/api/v1/tasks" | tr -d '\n')
echo "   POST $agent/api/v1/tasks → $answer"
wait_for 60 "$lan did not reach PRINTED on the hub in 60 s: $(api "$hub/v1/stores/s001/jobs/$lan")" "read $dir/agent.log and $dir/hub.log" printed "$lan"
echo "   GET $hub/v1/stores/s001/jobs/$lan → $(api "$hub/v1/stores/s001/jobs/$lan")"
wait_for 60 "the PRINTED webhook of $lan did not arrive in 60 s" "read $dir/hub.log (lines of the webhook sender)" hooked "$lan" PRINTED

fault() { # PRINTER ON: switches printer PRINTER's offline fault
	curl -fsS -o /dev/null -X POST "http://127.0.0.1:$control_port/printers/$1/fault?kind=offline&on=$2"
}
# on_bar TASK: the hub reports TASK PRINTED on bar, kitchen's backup.
on_bar() { api "$hub/v1/stores/s001/jobs/$1" | grep -q '"state":"PRINTED","printer":"kitchen","target":"bar"'; }
over=DEMO-$stamp-3_KITCHEN_v1
echo "== 9. kitchen goes offline; its ticket, submitted to the hub, fails over to bar (after failover_after, 5 s)"
fault 0 true
answer=$(api -w ' (%{http_code})' -X POST --data "{\"task_no\":\"$over\",\"printer\":\"kitchen\",\"document\":{\"lines\":[{\"text\":\"6号桌\",\"size\":\"2x2\"},{\"text\":\"1 x 麻婆豆腐\"},{\"text\":\"for kitchen, printed at bar\"},{\"cut\":\"partial\"}]}}" "$hub/v1/stores/s001/jobs" | tr -d '\n')
echo "   POST $hub/v1/stores/s001/jobs → $answer"
wait_for 60 "$over did not print at bar in 60 s: $(api "$hub/v1/stores/s001/jobs/$over")" "read $dir/agent.log" on_bar "$over"
echo "   GET .../jobs/$over → $(api "$hub/v1/stores/s001/jobs/$over")"
fault 0 false

# printed_local TASK: the agent reports TASK PRINTED on its LAN API.
printed_local() { curl -sS -H "Authorization: Bearer $api_token" "$agent/api/v1/tasks/$1" | grep -q '"state":"PRINTED"'; }
down=DEMO-$stamp-4_BAR_v1
echo "== 10. the hub is SIGKILLed; a ticket prints in the store meanwhile; the hub restarts and the agent replays what it missed"
kill -KILL "$hub_pid"
wait "$hub_pid" 2>/dev/null || true
echo "   the hub (pid $hub_pid) is killed"
answer=$(curl -sS -w ' (%{http_code})' -H "Authorization: Bearer $api_token" -X POST \
	--data "{\"task_no\":\"$down\",\"printer\":\"bar\",\"document\":{\"lines\":[{\"text\":\"Table 9\",\"size\":\"2x2\"},{\"text\":\"1 x Fried rice\"},{\"text\":\"printed while the hub was down\"},{\"cut\":\"partial\"}]}}" \
	"$agent/api/v1/tasks" | tr -d '\n')
echo "   POST $agent/api/v1/tasks → $answer"
wait_for 60 "$down did not print while the hub was down: $(curl -sS -H "Authorization: Bearer $api_token" "$agent/api/v1/tasks/$down")" "read $dir/agent.log" printed_local "$down"
start_hub
wait_for 60 "the hub did not come back on $hub in 60 s (log: $dir/hub.log)" "read the log's last lines" api -f "$hub/v1/stores"
echo "   the hub is back (pid $hub_pid), with everything it had written"
wait_for 90 "the agent did not replay $down to the hub in 90 s: $(api "$hub/v1/stores/s001/jobs/$down")" "read $dir/agent.log and $dir/hub.log" printed "$down"
echo "   GET $hub/v1/stores/s001/jobs/$down → $(api "$hub/v1/stores/s001/jobs/$down")"
wait_for 60 "the PRINTED webhook of $down did not arrive in 60 s" "read $dir/hub.log (lines of the webhook sender)" hooked "$down" PRINTED

echo "== 11. the fleet page: the manager signs in and sees the store online"
jar=$dir/fleet.cookies
# fleet_online: signs in (the form's CSRF token and cookie, then the
# password) and finds s001 online on the fleet page.
fleet_online() {
	local csrf
	csrf=$(curl -sS -c "$jar" "$hub/fleet/login" | sed -n 's/.*name="csrf" value="\([^"]*\)".*/\1/p' | head -n 1)
	[ -n "$csrf" ] || return 1
	curl -sS -b "$jar" -c "$jar" -o /dev/null --data-urlencode "csrf=$csrf" --data-urlencode tenant=demo \
		--data-urlencode name=manager --data-urlencode "password=$fleet_pass" "$hub/fleet/login" || return 1
	curl -sS -b "$jar" "$hub/fleet/" | grep -q 'data-store="s001" data-online="true"'
}
wait_for 60 "the fleet page did not show s001 online in 60 s" "read $dir/hub.log; sign in at $hub/fleet/ as demo / manager / $fleet_pass" fleet_online
echo "   $hub/fleet/ (tenant demo, user manager): s001 online"

cat <<MSG
== running: open these
   the agent's page:  $agent/   (PIN $pin)
   the hub's fleet page: $hub/fleet/   (tenant demo, user manager, password $fleet_pass)
   the hub's API:     $hub/v1/   (Authorization: Bearer $key)
   submit more:  curl -H 'Authorization: Bearer $key' -d '{"task_no":"T-2_K_v1","printer":"kitchen","document":{"lines":[{"text":"hello"},{"cut":"partial"}]}}' $hub/v1/stores/s001/jobs
   the store:    curl -H 'Authorization: Bearer $key' $hub/v1/stores/s001
   logs: $dir/hub.log, $dir/agent.log, $dir/webhooks.log. Ctrl-C stops everything.
MSG
if [ -n "${DEMO_DURATION:-}" ]; then
	sleep "${DEMO_DURATION}"
	echo "demo: DEMO_DURATION ($DEMO_DURATION) is over"
else
	wait "${pids[0]}"
fi
