# shellcheck shell=bash
# deb-check-frame.sh is what the two .deb checks share: scripts/deb-check.sh
# (the agent's package) and installer/hub/deb-check.sh (the hub's) source it
# from the repository's root after setting
#   package_script  the script that builds the .deb (it honours DIST and
#                   TARGETS), e.g. ./scripts/package.sh;
#   pid_var         the name of their variable holding the pid of a process
#                   they run by hand (empty: none), stopped at exit;
# and pass their arguments on. It sets deb (the first argument, a .deb to
# check, or the amd64 one package_script builds) and tmp (a temporary
# folder removed at exit), and defines
#   check DESCRIPTION COMMAND...  runs COMMAND and counts it passed or failed,
#                                 showing a failure's output;
#   has PATTERN FILE              grep -E for PATTERN in FILE;
#   deb_check_end                 the summary line "deb-check: N passed, N
#                                 failed"; it fails on any failure.
deb=${1:-}
tmp=$(mktemp -d)
cleanup() {
	local pid=${!pid_var:-}
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
if [ -z "$deb" ]; then
	echo "== building the amd64 .deb"
	DIST="$tmp/dist" TARGETS=linux/amd64 "$package_script" >"$tmp/package.log" 2>&1 || {
		cat "$tmp/package.log"
		exit 1
	}
	deb=$(ls "$tmp"/dist/*_amd64.deb)
fi
echo "== checking $deb"

passed=0 failed=0
check() { # DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@" >"$tmp/check.out" 2>&1; then
		echo "ok   $what"
		passed=$((passed + 1))
	else
		echo "FAIL $what"
		sed 's/^/     /' "$tmp/check.out"
		failed=$((failed + 1))
	fi
}
has() { grep -qE -- "$1" "$2"; }
deb_check_end() {
	echo "deb-check: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
