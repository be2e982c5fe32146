#!/usr/bin/env bash
# make demo: the most complete end-to-end run that exists today, on emulated
# printers, with no hardware.
#
# What it runs: printersim (three emulated ESC/POS printers on loopback, each
# ticket drawn in the terminal), the real `printgate run` with a demo config,
# and sample tickets (Chinese and English) submitted over the local HTTP API:
# a duplicate submission, a printer out of paper that resumes in order, and a
# printer going offline that fails over to its backup.
#
# Also: the reference cloud (cloudsim), QR pairing, a ticket from the cloud
# and a WAN outage with replay. Not yet: the manager page and `printgate
# demo` (one process, everything included).
set -euo pipefail
cd "$(dirname "$0")/.."

API=18631 P0=19100 CTL=19180 CLOUD=18700
DIR=${DEMO_DIR:-$PWD/.demo}
rm -rf "$DIR" && mkdir -p "$DIR/bin"

echo "== building printgate, printersim and cloudsim"
go mod download
CGO_ENABLED=0 go build -o "$DIR/bin/" ./cmd/printgate ./cmd/printersim ./cmd/cloudsim
"$DIR/bin/printgate" token > "$DIR/api-token.txt"
TOKEN=$(cat "$DIR/api-token.txt")

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

echo "== starting 3 emulated printers (epson, clone, oneway) on 127.0.0.1:$P0-$((P0+2))"
"$DIR/bin/printersim" -n 3 -model epson,clone,oneway -base-port "$P0" -control "127.0.0.1:$CTL" > "$DIR/paper.txt" 2>&1 &
pids+=($!)

echo "== starting the reference cloud (cloudsim, a test double) on 127.0.0.1:$CLOUD"
"$DIR/bin/cloudsim" -listen "127.0.0.1:$CLOUD" -poll 1s > "$DIR/cloud.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$CLOUD/api/agents" >/dev/null 2>&1 && break; sleep 0.1; done

sed -e "s|@DIR@|$DIR|g" -e "s|@API@|$API|g" -e "s|@CLOUD@|$CLOUD|g" -e "s|@PORT0@|$P0|g" -e "s|@PORT1@|$((P0+1))|g" -e "s|@PORT2@|$((P0+2))|g" \
  testdata/demo/printgate.toml.in > "$DIR/printgate.toml"
echo "== pairing with the cloud: printgate pair shows a QR code; the demo approves it as a manager would"
"$DIR/bin/printgate" pair --config "$DIR/printgate.toml" > "$DIR/pair.txt" 2>&1 &
pairpid=$!
for _ in $(seq 100); do grep -q "code: " "$DIR/pair.txt" 2>/dev/null && break; sleep 0.1; done
cat "$DIR/pair.txt"
CODE=$(sed -n 's/.*code: \([^ ]*\).*/\1/p' "$DIR/pair.txt" | head -1)
curl -fs -X POST "http://127.0.0.1:$CLOUD/oauth/device/approve?user_code=$CODE" >/dev/null
wait "$pairpid"; tail -1 "$DIR/pair.txt"

echo "== starting printgate run --config $DIR/printgate.toml"
"$DIR/bin/printgate" run --config "$DIR/printgate.toml" > "$DIR/console.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$API/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "http://127.0.0.1:$API/healthz" >/dev/null || { echo "printgate did not start:"; cat "$DIR/console.log"; exit 1; }

api() { curl -s -H "Authorization: Bearer $TOKEN" "$@"; echo; }
task() { # task_no printer document-file
  printf '{"task_no":"%s","printer":"%s","document":%s}' "$1" "$2" "$(cat "$3")" > "$DIR/req.json"
  api -X POST -H 'Content-Type: application/json' --data-binary @"$DIR/req.json" "http://127.0.0.1:$API/api/v1/tasks"
}
fault() { curl -fs -X POST "http://127.0.0.1:$CTL/printers/$1/fault?kind=$2&on=$3" >/dev/null; }
state() { api "http://127.0.0.1:$API/api/v1/tasks/$1" | sed -E 's/"timeline".*//'; }

echo; echo "== 1. a Chinese kitchen ticket to the clone printer (GB18030), an English receipt to the Epson"
task ORD20261130-0042_KITCHEN_v1 bar testdata/escpos/kitchen-zh.json
task ORD20261130-0042_RECEIPT_v1 kitchen testdata/escpos/receipt-en.json
task ORD20261130-0042_FRONT_v1 front testdata/demo/front.json
echo; echo "== 2. the POS retries the same task_no: answered 200 duplicate, never printed twice"
task ORD20261130-0042_KITCHEN_v1 bar testdata/escpos/kitchen-zh.json
sleep 2
echo; echo "== 3. the Epson runs out of paper: the ticket waits, no attempt spent"
fault 0 paper_out true
task ORD20261130-0043_KITCHEN_v1 kitchen testdata/demo/small.json
sleep 2; state ORD20261130-0043_KITCHEN_v1
echo "   ...paper is back"
fault 0 paper_out false
sleep 6; state ORD20261130-0043_KITCHEN_v1
echo; echo "== 4. the Epson goes offline with work waiting: after failover_after (5s) it moves to bar"
fault 0 offline true
task ORD20261130-0044_KITCHEN_v1 kitchen testdata/demo/small.json
sleep 9; state ORD20261130-0044_KITCHEN_v1
fault 0 offline false
AGENT=$(cat "$DIR/data/agent-id")
echo; echo "== 5. a ticket from the cloud, then the internet goes down: local tickets keep printing"
curl -fs -X POST -H 'Content-Type: application/json' --data-binary \
  "{\"task_no\":\"CLOUD20261130-0045_KITCHEN_v1\",\"printer\":\"kitchen\",\"document\":$(cat testdata/demo/small.json)}" \
  "http://127.0.0.1:$CLOUD/api/agents/$AGENT/jobs"; echo
sleep 2
curl -fs -X POST "http://127.0.0.1:$CLOUD/api/connections/refuse?on=true" >/dev/null
curl -fs -X POST "http://127.0.0.1:$CLOUD/api/connections/drop" >/dev/null
task ORD20261130-0046_KITCHEN_v1 kitchen testdata/demo/small.json
sleep 2; echo "   link while offline: $(curl -s "http://127.0.0.1:$API/healthz")"
curl -fs -X POST "http://127.0.0.1:$CLOUD/api/connections/refuse?on=false" >/dev/null
echo "   ...the internet is back; the agent replays what the cloud missed, in task_no order"
sleep 8
echo "   the cloud now knows: $(curl -s "http://127.0.0.1:$CLOUD/api/agents/$AGENT/events" | grep -o '"state":"PRINTED"' | wc -l) tickets PRINTED"
echo; echo "== printers"; api "http://127.0.0.1:$API/api/v1/printers"
echo; echo "== health"; curl -s "http://127.0.0.1:$API/healthz"; echo

echo; echo "== paper, as the emulated printers printed it"
cat "$DIR/paper.txt"
echo
echo "Demo files are in $DIR (printgate.log, console.log, paper.txt, data/spool.db)."
echo "This demo ran printgate on emulated printers and the reference cloud. The manager"
echo "page is not built yet; 'printgate demo' will run all of this in one process."
