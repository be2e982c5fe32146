#!/usr/bin/env bash
# deb-check.sh [DEB]: checks the printgate .deb. Without an argument it builds
# the amd64 one with scripts/package.sh into a temporary folder.
#  - always: dpkg-deb --info and --contents show the binary, the unit, the
#    config as a conffile and the maintainer scripts;
#  - as root, on a machine where printgate is not installed: dpkg -i, then
#    the printgate user (in lp and dialout), the unit, the token, the
#    folders' owners, `printgate version` and `printgate install` on the
#    packaged config; then the README's steps in order: `printgate start`
#    (without systemd: its message and fix, then the agent run as printgate
#    the way the fix says), `printgate status`, `printgate pin set`, doctor's
#    service-files check, and a login with the PIN that must get a session
#    (a PIN file root once wrote locked the manager out); without
#    systemd, stop's fix names the agent, which is left running for dpkg -r
#    to stop (prerm finds it in /proc); dpkg -r (agent stopped, binary gone,
#    config kept) and dpkg -P (user, group and config gone, no process of
#    printgate's in the way).
# It ends with "deb-check: N passed, N failed" and exits 1 on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

agent= # the pid of the agent run by hand where systemd is not running
package_script=./scripts/package.sh pid_var=agent
# shellcheck source=scripts/deb-check-frame.sh
. ./scripts/deb-check-frame.sh
# login PIN: what a manager's browser does on http://127.0.0.1:8631/login:
# read the form (its CSRF field and cookie), post the PIN, and expect a
# redirect with a session cookie that opens the page, not an error page.
login() {
	local base=http://127.0.0.1:8631 jar=$tmp/cookies csrf code
	curl -fsS -c "$jar" -b "$jar" -o "$tmp/login.html" "$base/login" || return 1
	csrf=$(sed -n 's/.*name="csrf" value="\([^"]*\)".*/\1/p' "$tmp/login.html")
	[ -n "$csrf" ] || { echo "no csrf field in the login form:"; cat "$tmp/login.html"; return 1; }
	code=$(curl -sS -c "$jar" -b "$jar" -o "$tmp/after.html" -w '%{http_code}' \
		--data-urlencode "csrf=$csrf" --data-urlencode "pin=$1" --data-urlencode "next=/" "$base/login") || return 1
	[ "$code" = 303 ] || { echo "the login answered $code:"; cat "$tmp/after.html"; return 1; }
	grep -q printgate_session "$jar" || { echo "no session cookie after the login"; return 1; }
	code=$(curl -sS -b "$jar" -o "$tmp/page.html" -w '%{http_code}' "$base/")
	[ "$code" = 200 ] || { echo "the page with the session answered $code"; return 1; }
}
lacks() { ! grep -qE -- "$1" "$2"; }

dpkg-deb --info "$deb" >"$tmp/info"
dpkg-deb --contents "$deb" >"$tmp/contents"
dpkg-deb --info "$deb" conffiles >"$tmp/conffiles"
check "package name and architecture" bash -c "grep -q '^ Package: printgate$' '$tmp/info' && grep -q '^ Architecture: amd64$' '$tmp/info'"
for s in postinst prerm postrm; do
	check "maintainer script $s" has " $s " "$tmp/info"
done
check "binary /usr/bin/printgate, mode 0755" has '^-rwxr-xr-x .* \./usr/bin/printgate$' "$tmp/contents"
check "unit /lib/systemd/system/printgate.service" has ' \./lib/systemd/system/printgate\.service$' "$tmp/contents"
check "config /etc/printgate/printgate.toml, mode 0600" has '^-rw------- .* \./etc/printgate/printgate\.toml$' "$tmp/contents"
check "the config is a conffile" has '^/etc/printgate/printgate\.toml$' "$tmp/conffiles"
check "no token shipped in the package" lacks 'api-token' "$tmp/contents"

if [ "$(id -u)" -ne 0 ]; then
	echo "skip install checks: not root (dpkg -i needs root)"
elif ! command -v dpkg >/dev/null 2>&1; then
	echo "skip install checks: no dpkg on this machine"
elif dpkg -s printgate >/dev/null 2>&1 || getent passwd printgate >/dev/null; then
	echo "skip install checks: printgate (package or user) is already on this machine, and the checks would remove it"
else
	echo "== dpkg -i"
	check "dpkg -i" dpkg -i "$deb"
	check "user printgate exists" id printgate
	check "printgate is in lp and dialout" bash -c 'g=" $(id -nG printgate) "; [[ $g == *" lp "* && $g == *" dialout "* ]]'
	check "printgate has no login shell" bash -c '[ "$(getent passwd printgate | cut -d: -f7)" = /usr/sbin/nologin ]'
	check "unit file in place" test -f /lib/systemd/system/printgate.service
	check "printgate version runs" /usr/bin/printgate version
	check "token written, printgate 0600" bash -c '[ "$(stat -c %U:%a /etc/printgate/api-token.txt)" = printgate:600 ]'
	check "config owned by printgate, 0600" bash -c '[ "$(stat -c %U:%a /etc/printgate/printgate.toml)" = printgate:600 ]'
	check "config folder root:printgate 0770" bash -c '[ "$(stat -c %U:%G:%a /etc/printgate)" = root:printgate:770 ]'
	check "data folder printgate 0700" bash -c '[ "$(stat -c %U:%a /var/lib/printgate)" = printgate:700 ]'
	cp -p /etc/printgate/printgate.toml "$tmp/config.before"
	check "printgate install on the packaged config" /usr/bin/printgate install --no-discover
	check "install kept the packaged config" cmp /etc/printgate/printgate.toml "$tmp/config.before"
	echo "== the README's steps, in order: start, status, pin set, a login"
	pin=246810-deb-check
	if [ -d /run/systemd/system ]; then
		check "printgate start" /usr/bin/printgate start
	else
		# The fix is written for this shell: runuser in a root shell (a fresh
		# Debian may have no sudo), sudo after sudo.
		as_service="runuser -u printgate --"
		[ -z "${SUDO_USER:-}" ] || as_service="sudo -u printgate"
		check "printgate start without systemd says it needs it, with a fix" bash -c '
			! /usr/bin/printgate start 2>"$0" && cat "$0" &&
			grep -q "it needs systemd" "$0" &&
			grep -qF "fix: run the agent in the foreground instead: $1 printgate run --config /etc/printgate/printgate.toml" "$0"' "$tmp/start.err" "$as_service"
		# What the fix says: the agent in the foreground, as the service's account.
		runuser -u printgate -- /usr/bin/printgate run --config /etc/printgate/printgate.toml >"$tmp/agent.log" 2>&1 &
		agent=$!
	fi
	check "the agent answers /healthz" bash -c 'for _ in $(seq 150); do curl -fsS -o /dev/null http://127.0.0.1:8631/healthz && exit 0; sleep 0.2; done; cat "$0"; exit 1' "$tmp/agent.log"
	check "printgate status" /usr/bin/printgate status
	check "printgate pin set" bash -c 'echo "$0" | /usr/bin/printgate pin set --pin-stdin' "$pin"
	check "the PIN file sudo wrote is printgate's, 0600" bash -c '[ "$(stat -c %U:%G:%a /var/lib/printgate/manager-pin)" = printgate:printgate:600 ]'
	check "doctor: printgate can read its files" bash -c '/usr/bin/printgate doctor >"$0" 2>&1; cat "$0"; grep -q "^✓ service files: printgate" "$0"' "$tmp/doctor.out"
	check "a login with the PIN gets a session" login "$pin"
	if [ -n "$agent" ]; then
		check "printgate stop without systemd names the agent to stop" bash -c '
			! /usr/bin/printgate stop 2>"$0" && cat "$0" &&
			grep -qE "^fix: stop the agent where it runs \(Ctrl-C in its terminal\), or: kill [0-9]+ \(the agent, printgate \(pid [0-9]+\)" "$0"' "$tmp/stop.err"
		# Left running: the remove must stop it (prerm, from /proc).
	else
		check "printgate stop" /usr/bin/printgate stop
	fi
	echo "== dpkg -r"
	check "dpkg -r" dpkg -r printgate
	if [ -n "$agent" ]; then
		check "dpkg -r stopped the agent run without systemd" bash -c '
			for _ in $(seq 50); do kill -0 "$0" 2>/dev/null || exit 0; sleep 0.2; done
			echo "pid $0 still runs:"; ps -o pid,user,args -p "$0"; exit 1' "$agent"
		kill "$agent" 2>/dev/null || true # when the check above failed
		wait "$agent" 2>/dev/null || true
		agent=
		check "no process of printgate's left, port 8631 free" bash -c '
			! ps -u printgate -o pid,args --no-headers && ! curl -fsS -o /dev/null http://127.0.0.1:8631/healthz'
	fi
	check "/usr/bin/printgate removed" test ! -e /usr/bin/printgate
	check "unit removed" test ! -e /lib/systemd/system/printgate.service
	check "remove keeps the config and the user" bash -c 'test -f /etc/printgate/printgate.toml && id printgate'
	echo "== dpkg -P"
	check "dpkg -P" bash -c 'dpkg -P printgate 2>&1 | tee "$0"; [ "${PIPESTATUS[0]}" = 0 ] && ! grep -q "currently used by process" "$0"' "$tmp/purge.out"
	check "user printgate removed" bash -c '! getent passwd printgate'
	check "group printgate removed" bash -c '! getent group printgate'
	check "config and data removed" bash -c 'test ! -e /etc/printgate && test ! -e /var/lib/printgate'
	check "package gone" bash -c '! dpkg -s printgate'
fi

deb_check_end
