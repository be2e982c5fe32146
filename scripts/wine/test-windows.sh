#!/usr/bin/env bash
# make test-windows: the Windows build run under Wine.
#
# It installs Wine and the MinGW cross-compiler when missing (Debian's
# packages; root or sudo), makes a temporary Wine prefix with the ProcessPrng
# shim (setup.sh), cross-compiles printgate.exe and the Windows test
# binaries, and runs:
#   - the unit tests of every package with _windows.go code, compiled for
#     Windows (with overlay.sh's Wine patch) and run under Wine, one line per
#     package;
#   - the end-to-end checks of scripts/wine/e2e: the real printgate.exe
#     under Wine against the emulated printers of drivers/printertest on
#     loopback, one line per check; the spooler checks (winspool://) also
#     run a private cupsd of their own (its socket in a temp dir) and skip,
#     saying why, where CUPS is not installed.
# Each check prints PASS or FAIL with its time, a failure its log's tail,
# and the run ends with a summary and the total time. Exit 0 only when
# every check passed. Everything listens on 127.0.0.1 only.
#
# Every step has a timeout, and the run as a whole a budget
# (WINE_BUDGET seconds, default 1500): a step that would start past it fails
# the run instead, so CI's worst case is the budget plus one step.
#
# Environment: GO (default go); WINE_KEEP=1 keeps the work dir (its path is
# printed) for a look at the logs; WINE_CHECKS, a regexp, runs only the e2e
# checks whose test name matches (e.g. WINE_CHECKS=Service).
set -uo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
t_start=$(date +%s)
budget=${WINE_BUDGET:-1500}

# The packages with Windows-only code, whose tests run under Wine, and
# cmd/printgate: its unit tests and the real-binary tests that -short keeps
# (test-print, tasks, reprint and TLS against printgate.exe, which
# PRINTGATE_TEST_BIN hands them: Wine has no go command to build one). The
# real-binary tests -short skips need what Wine lacks or this script does
# not set up (SIGKILL and wait status, strace, CUPS, chromium) or repeat
# scripts/wine/e2e.
UNIT_PKGS=(drivers spool installer agent/config agent/daemon cmd/printgate/internal/doctor cmd/printgate)

need=()
command -v wine >/dev/null 2>&1 || need+=(wine)
command -v wine64 >/dev/null 2>&1 || [ -x /usr/lib/wine/wine64 ] || need+=(wine64)
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || need+=(gcc-mingw-w64-x86-64)
if [ ${#need[@]} -gt 0 ]; then
	SUDO=""
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
			SUDO="sudo"
		else
			echo "test-windows: ${need[*]} missing and this is not root: run" >&2
			echo "  sudo apt-get install -y wine wine64 gcc-mingw-w64-x86-64" >&2
			echo "then make test-windows again." >&2
			exit 1
		fi
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "test-windows: ${need[*]} missing and there is no apt-get: install Wine 8 (64-bit) and the x86_64 MinGW gcc by hand" >&2
		exit 1
	fi
	echo "== install ${need[*]}"
	timeout 300 $SUDO apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive timeout 600 $SUDO apt-get install -y -qq wine wine64 gcc-mingw-w64-x86-64 >/dev/null ||
		{ echo "test-windows: apt-get install wine wine64 gcc-mingw-w64-x86-64 failed" >&2; exit 1; }
fi
echo "== $(wine --version 2>/dev/null | head -1), $(x86_64-w64-mingw32-gcc --version | head -1), $($GO version)"

WORK=$(mktemp -d /tmp/printgate-wine.XXXXXX)
# shellcheck source=scripts/wine/setup.sh
source scripts/wine/setup.sh
cleanup() {
	wine_teardown
	if [ "${WINE_KEEP:-}" = 1 ]; then echo "== kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

passed=0
failed=0
skipped=0
failures=()
# line STATUS NAME SECONDS [NOTE]: one result line.
line() {
	printf '%-4s %-48s %6ss%s\n' "$1" "$2" "$3" "${4:+  $4}"
	case $1 in
	FAIL) failed=$((failed + 1)); failures+=("$2") ;;
	SKIP) skipped=$((skipped + 1)) ;;
	*) passed=$((passed + 1)) ;;
	esac
}
now() { date +%s%N; }
# since T0: seconds from T0 (a now) to now, to a tenth.
since() { local ms=$((($(date +%s%N) - $1) / 1000000)); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }

# in_budget NAME: fails the run when the budget is spent before NAME.
in_budget() {
	local spent=$(($(date +%s) - t_start))
	if [ $spent -gt "$budget" ]; then
		line FAIL "$1" 0 "not started: $spent s spent of the ${budget} s budget (WINE_BUDGET)"
		echo "== test-windows: over budget; $passed passed, $failed failed in $spent s"
		exit 1
	fi
}

# step NAME LOG CMD...: a setup step; the run stops when it fails.
step() {
	local name=$1 log=$2 t0
	shift 2
	in_budget "$name"
	t0=$(now)
	if "$@" >"$log" 2>&1; then
		line PASS "$name" "$(since "$t0")"
	else
		line FAIL "$name" "$(since "$t0")"
		tail -n 30 "$log" | sed 's/^/    /'
		echo "== test-windows: setup failed; $passed passed, $failed failed in $(($(date +%s) - t_start)) s"
		exit 1
	fi
}

step "setup: Wine prefix, ProcessPrng shim, wineserver -p" "$WORK/setup.log" wine_setup "$WORK"
step "setup: test-binary overlay (Wine delete call)" "$WORK/overlay.log" scripts/wine/overlay.sh "$WORK/overlay"

build() {
	# Cold, the Windows standard library and every module compile here.
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 timeout 600 $GO build -o "$WORK/bin/printgate.exe" ./cmd/printgate || return 1
	for p in "${UNIT_PKGS[@]}"; do
		CGO_ENABLED=0 GOOS=windows GOARCH=amd64 timeout 300 $GO test -c -overlay "$WORK/overlay/overlay.json" \
			-o "$WORK/bin/$(echo "$p" | tr / _).test.exe" "./$p" || return 1
	done
}
step "build: printgate.exe and ${#UNIT_PKGS[@]} test binaries" "$WORK/build.log" build

# Unit tests: one line per package, with how many tests skipped on Windows.
for p in "${UNIT_PKGS[@]}"; do
	in_budget "unit: $p"
	log="$WORK/unit-$(echo "$p" | tr / _).log"
	t0=$(now)
	extra=()
	[ "$p" = cmd/printgate ] && extra=(-test.short)
	(cd "$p" && PRINTGATE_TEST_BIN="Z:${WORK//\//\\}\\bin\\printgate.exe" timeout 240 wine "$WORK/bin/$(echo "$p" | tr / _).test.exe" \
		-test.v -test.count=1 -test.timeout=210s "${extra[@]}") >"$log" 2>&1
	rc=$?
	nskip=$(grep -cE -- '^ *--- SKIP' "$log")
	ran=$(grep -cE -- '^ *--- (PASS|FAIL)' "$log")
	if [ $rc -eq 0 ] && grep -q '^PASS$' "$log"; then
		line PASS "unit: $p" "$(since "$t0")" "$ran ran, $nskip skipped"
	else
		line FAIL "unit: $p" "$(since "$t0")" "exit $rc"
		grep -E -- '^(--- FAIL|panic)|^\s+\S+_test\.go:[0-9]+' "$log" | head -n 30 | sed 's/^/    /'
	fi
done

# End-to-end checks: scripts/wine/e2e, one line per test.
in_budget "e2e"
log="$WORK/e2e.log"
t0=$(now)
PRINTGATE_WINE_EXE="$WORK/bin/printgate.exe" timeout 660 $GO test -count=1 -v -timeout 10m \
	${WINE_CHECKS:+-run "$WINE_CHECKS"} ./scripts/wine/e2e >"$log" 2>&1
rc=$?
while read -r status name secs; do
	if [ "$status" = FAIL ]; then
		line FAIL "e2e: $name" "$secs"
		awk -v n="$name" '$0 == "=== RUN   "n {on=1; next} /^=== RUN/ {on=0} on' "$log" | grep -v '^=== ' | tail -n 25 | sed 's/^/    /'
	elif [ "$status" = SKIP ]; then
		# The reason is the t.Skip line right after the SKIP line.
		why=$(awk -v n="$name" 'on {sub(/^ *[^ ]*_test\.go:[0-9]+: /, ""); print; exit} index($0, "--- SKIP: "n" (") {on=1}' "$log")
		line SKIP "e2e: $name" "$secs" "$why"
	else
		line "$status" "e2e: $name" "$secs"
	fi
done < <(sed -nE 's/^ *--- (PASS|FAIL|SKIP): (Test[^ ]*\/[^ ]*) \(([0-9.]+)s\)$/\1 \2 \3/p' "$log")
if [ $rc -ne 0 ] && ! grep -q '^--- FAIL' "$log"; then
	line FAIL "e2e: go test" "$(since "$t0")" "exit $rc"
	tail -n 30 "$log" | sed 's/^/    /'
fi

echo "== test-windows: $passed passed, $failed failed, $skipped skipped in $(($(date +%s) - t_start)) s"
[ $failed -eq 0 ] || { printf '   failed: %s\n' "${failures[@]}"; exit 1; }
