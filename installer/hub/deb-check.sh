#!/usr/bin/env bash
# deb-check.sh [DEB]: checks the printgate-hub .deb (`make deb-check-hub`), as
# scripts/deb-check.sh checks the agent's. Without an argument it builds the
# amd64 one with installer/hub/package.sh into a temporary folder.
#  - always: dpkg-deb --info and --contents show the binary, the unit, the
#    config as a conffile and the maintainer scripts;
#  - as root, on a machine where printgate-hub is not installed: dpkg -i, then
#    the printgate-hub user, the unit, the folders' and the config's owners
#    and modes; the postinst's steps in order as printgate-hub (tenant,
#    store, key on the stopped hub; the same as root refused), the hub started (systemctl where systemd
#    runs, else in the foreground as printgate-hub, as the unit would), its
#    /healthz and the order API with the key; a second hub on the same data
#    refused with a fix; dpkg -r (binary and unit gone, config and data kept)
#    and dpkg -P (config gone, data and user kept, as postrm says), then the
#    check removes the data and the user itself.
# The hub listens on the packaged config's 127.0.0.1:8640; the install checks
# are skipped when that port is taken. It ends with "deb-check: N passed, N
# failed" and exits 1 on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

hubpid= # the hub run by hand where systemd is not running
package_script=./installer/hub/package.sh pid_var=hubpid
# shellcheck source=scripts/deb-check-frame.sh
. ./scripts/deb-check-frame.sh
base=http://127.0.0.1:8640
conf=/etc/printgate-hub/hub.toml
as_hub() { runuser -u printgate-hub -- /usr/bin/printgate-hub "$@"; }

dpkg-deb --info "$deb" >"$tmp/info"
dpkg-deb --contents "$deb" >"$tmp/contents"
dpkg-deb --info "$deb" conffiles >"$tmp/conffiles"
check "package name and architecture" bash -c "grep -q '^ Package: printgate-hub$' '$tmp/info' && grep -q '^ Architecture: amd64$' '$tmp/info'"
for s in postinst prerm postrm; do
	check "maintainer script $s" has " $s " "$tmp/info"
done
check "binary /usr/bin/printgate-hub, mode 0755" has '^-rwxr-xr-x .* \./usr/bin/printgate-hub$' "$tmp/contents"
check "unit /lib/systemd/system/printgate-hub.service" has ' \./lib/systemd/system/printgate-hub\.service$' "$tmp/contents"
check "config /etc/printgate-hub/hub.toml, mode 0640" has '^-rw-r----- .* \./etc/printgate-hub/hub\.toml$' "$tmp/contents"
check "the config is a conffile" has '^/etc/printgate-hub/hub\.toml$' "$tmp/conffiles"
check "no data dir shipped in the package" bash -c "! grep -q 'var/lib' '$tmp/contents'"

if [ "$(id -u)" -ne 0 ]; then
	echo "skip install checks: not root (dpkg -i needs root)"
elif ! command -v dpkg >/dev/null 2>&1 || ! command -v runuser >/dev/null 2>&1; then
	echo "skip install checks: no dpkg or runuser on this machine"
elif dpkg -s printgate-hub >/dev/null 2>&1 || getent passwd printgate-hub >/dev/null || [ -e /var/lib/printgate-hub ]; then
	echo "skip install checks: printgate-hub (package, user or data) is already on this machine, and the checks would remove it"
elif curl -sS -o /dev/null "$base/healthz" 2>/dev/null; then
	echo "skip install checks: something already answers on 127.0.0.1:8640, the packaged config's listen"
else
	echo "== dpkg -i"
	check "dpkg -i" dpkg -i "$deb"
	check "user printgate-hub exists" id printgate-hub
	check "printgate-hub has no login shell" bash -c '[ "$(getent passwd printgate-hub | cut -d: -f7)" = /usr/sbin/nologin ]'
	check "unit file in place" test -f /lib/systemd/system/printgate-hub.service
	check "config root:printgate-hub 0640" bash -c '[ "$(stat -c %U:%G:%a '$conf')" = root:printgate-hub:640 ]'
	check "config folder root:printgate-hub 0750" bash -c '[ "$(stat -c %U:%G:%a /etc/printgate-hub)" = root:printgate-hub:750 ]'
	check "data folder printgate-hub 0700" bash -c '[ "$(stat -c %U:%a /var/lib/printgate-hub)" = printgate-hub:700 ]'
	echo "== the postinst's steps, in order: tenant, store, key, start"
	check "tenant add as printgate-hub" as_hub tenant add --config "$conf" --id acme --name "Acme Foods"
	check "store add as printgate-hub" as_hub store add --config "$conf" --tenant acme --id s001
	check "key add as printgate-hub" bash -c "runuser -u printgate-hub -- /usr/bin/printgate-hub key add --config $conf --tenant acme >'$tmp/key' && grep -q '^pgk_' '$tmp/key'"
	check "root on the packaged data is refused, with the runuser fix" bash -c '
		! /usr/bin/printgate-hub tenant add --config "$1" --id rooted 2>"$0" && cat "$0" &&
		tail -n1 "$0" | grep -qF "fix: run it as printgate-hub: runuser -u printgate-hub -- printgate-hub tenant add"' "$tmp/root.err" "$conf"
	check "the data is printgate-hub's" bash -c '! find /var/lib/printgate-hub ! -user printgate-hub | grep .'
	if [ -d /run/systemd/system ]; then
		check "systemctl enable --now printgate-hub" systemctl enable --now printgate-hub
	else
		# What the unit runs, as its account, in the foreground.
		runuser -u printgate-hub -- /usr/bin/printgate-hub run --config "$conf" >"$tmp/hub.log" 2>&1 &
		hubpid=$!
	fi
	check "the hub answers /healthz" bash -c 'for _ in $(seq 150); do curl -fsS -o /dev/null "$1/healthz" && exit 0; sleep 0.2; done; cat "$0"; exit 1' "$tmp/hub.log" "$base"
	check "the order API lists store s001 to the key" bash -c 'curl -fsS -H "Authorization: Bearer $(cat "$0")" "$1/v1/stores" | grep -q "\"s001\""' "$tmp/key" "$base"
	check "an add command on the running hub's data says so, with a fix" bash -c '
		! runuser -u printgate-hub -- /usr/bin/printgate-hub tenant add --config "$1" --id other 2>"$0" && cat "$0" &&
		tail -n1 "$0" | grep -q "^fix: another printgate-hub has this data dir open"' "$tmp/locked.err" "$conf"
	if [ -n "$hubpid" ]; then
		check "the hub stops on SIGTERM" bash -c 'kill -TERM "$0" && for _ in $(seq 150); do kill -0 "$0" 2>/dev/null || exit 0; sleep 0.2; done; exit 1' "$hubpid"
		wait "$hubpid" 2>/dev/null || true
		hubpid=
	else
		check "systemctl stop printgate-hub" systemctl stop printgate-hub
	fi
	echo "== dpkg -r"
	check "dpkg -r" dpkg -r printgate-hub
	check "/usr/bin/printgate-hub removed" test ! -e /usr/bin/printgate-hub
	check "unit removed" test ! -e /lib/systemd/system/printgate-hub.service
	check "remove keeps the config, the data and the user" bash -c 'test -f '$conf' && test -d /var/lib/printgate-hub/jetstream && id printgate-hub'
	echo "== dpkg -P"
	check "dpkg -P says the data is kept" bash -c 'dpkg -P printgate-hub >"$0" 2>&1; rc=$?; cat "$0"; [ $rc = 0 ] && grep -q "rm -rf /var/lib/printgate-hub && userdel printgate-hub" "$0"' "$tmp/purge.out"
	check "config removed" test ! -e /etc/printgate-hub
	check "purge keeps the data and the user" bash -c 'test -d /var/lib/printgate-hub/jetstream && id printgate-hub'
	check "package gone" bash -c '! dpkg -s printgate-hub'
	# What the purge message says, to leave the machine as it was.
	rm -rf /var/lib/printgate-hub
	userdel printgate-hub 2>/dev/null || true
	getent group printgate-hub >/dev/null && groupdel printgate-hub || true
fi

deb_check_end
