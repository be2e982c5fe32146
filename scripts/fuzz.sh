#!/usr/bin/env bash
# Runs every Fuzz* target in the module for the given time each (default
# 60s). go test can fuzz only one target per invocation,
# so the targets are found and run in turn, one at a time: each already
# uses every core. A failing target does not stop the others; the summary
# at the end lists each target's executions and result, and the script
# exits non-zero if any failed. A failure's input is written by go test to
# the package's testdata/fuzz/<Target>/ and replays in plain `go test`.
#
# Minimizing is capped at 5 s an input (go test's default is 60 s): the
# fuzzer minimizes every input that finds new coverage too, and on a slow
# target (a whole config file parsed three times an execution) both workers
# spent most of a 60 s run minimizing, executing nothing new.
set -euo pipefail
fuzztime=${1:-60s}
minimize=${FUZZMINIMIZETIME:-5s}
go=${GO:-go}
cd "$(dirname "$0")/.."
found=0
failed=0
summary=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT
while IFS= read -r line; do
  file=${line%%:*}
  name=$(sed -E 's/^.*func (Fuzz[A-Za-z0-9_]+).*/\1/' <<<"$line")
  pkg=$(dirname "$file")
  echo "== fuzz $pkg $name for $fuzztime"
  result=ok
  if ! "$go" test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg" 2>&1 | tee "$log"; then
    result=FAIL
    failed=$((failed+1))
  fi
  execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+' || true)
  summary+=$(printf '%-26s %-22s %12s  %s' "$pkg" "$name" "${execs:-?}" "$result")$'\n'
  found=$((found+1))
done < <(grep -rEn --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' . | sed -E 's/:[0-9]+:/:/' | sort)
echo
printf '%-26s %-22s %12s  %s\n' package target execs result
printf '%s' "$summary"
echo "fuzzed $found targets for $fuzztime each, $failed failed"
[ "$found" -gt 0 ] && [ "$failed" -eq 0 ]
