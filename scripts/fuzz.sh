#!/usr/bin/env bash
# Runs every Fuzz* target in the module for the given time each. go test can
# fuzz only one target per invocation, so the targets are found and run in turn.
set -euo pipefail
fuzztime=${1:-30s}
cd "$(dirname "$0")/.."
found=0
while IFS= read -r line; do
  file=${line%%:*}
  name=$(sed -E 's/^.*func (Fuzz[A-Za-z0-9_]+).*/\1/' <<<"$line")
  pkg=$(dirname "$file")
  echo "== fuzz $pkg $name for $fuzztime"
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"
  found=$((found+1))
done < <(grep -rEn --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' . | sed -E 's/:[0-9]+:/:/')
echo "fuzzed $found targets"
[ "$found" -gt 0 ]
