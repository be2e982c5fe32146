#!/usr/bin/env bash
# Wine prefix for the Windows checks (sourced by scripts/wine/test-windows.sh;
# also usable by hand: `source scripts/wine/setup.sh; wine_setup /tmp/pfx`).
#
# wine_setup DIR makes a fresh 64-bit prefix in DIR/prefix (wineboot -u),
# builds the ProcessPrng shim (bcryptprimitives.c/.def, see there) with
# x86_64-w64-mingw32-gcc into the prefix's drive_c/windows/system32, the one
# place Go's loader takes it from, and starts `wineserver -p` so that
# services started by Wine's service manager outlive the last ordinary Wine
# process (without it Wine ends them ~1 s later, with no Shutdown). It
# exports WINEPREFIX, WINEDEBUG and WINEDLLOVERRIDES. wine_teardown ends that
# wineserver (and with it every process of the prefix) and removes DIR/prefix.
# Every step is bounded by a timeout.

WINE_SETUP_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

wine_setup() {
	local dir=$1
	export WINEPREFIX="$dir/prefix"
	export WINEARCH=win64
	# No debug channels (Wine's fixme lines would bury the agent's output),
	# and no Mono or Gecko installer prompts during wineboot.
	export WINEDEBUG=-all
	export WINEDLLOVERRIDES="mscoree,mshtml="
	rm -rf "$WINEPREFIX"
	mkdir -p "$dir"
	if ! timeout 180 wineboot -u >"$dir/wineboot.log" 2>&1; then
		echo "wine_setup: wineboot -u failed or took over 180 s; see $dir/wineboot.log" >&2
		return 1
	fi
	if ! timeout 60 x86_64-w64-mingw32-gcc -shared -O2 -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
		"$WINE_SETUP_DIR/bcryptprimitives.c" "$WINE_SETUP_DIR/bcryptprimitives.def" -lbcrypt; then
		echo "wine_setup: building the ProcessPrng shim failed" >&2
		return 1
	fi
	# wineboot's own wineserver may still be winding down; a persistent one
	# replaces it for the rest of the run.
	timeout 30 wineserver -w || true
	if ! timeout 30 wineserver -p; then
		echo "wine_setup: wineserver -p failed" >&2
		return 1
	fi
}

wine_teardown() {
	[ -n "${WINEPREFIX:-}" ] || return 0
	timeout 30 wineserver -k >/dev/null 2>&1 || true
	timeout 30 wineserver -w >/dev/null 2>&1 || true
	rm -rf "$WINEPREFIX"
}
