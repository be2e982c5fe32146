package installer

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// UnitOptions shape the systemd unit.
type UnitOptions struct {
	// Exe is the absolute path of the printgate binary; Config the
	// absolute path of its config.
	Exe, Config string
	// NoRestartSteps leaves out RestartSteps= and RestartMaxDelaySec=,
	// which systemd before 254 does not know (it would log "Unknown key"
	// at every load). Without them the restart delay stays at RestartSec.
	NoRestartSteps bool
}

// RestartStepsMinSystemd is the first systemd version that grows the
// restart delay (RestartSteps=, RestartMaxDelaySec=).
const RestartStepsMinSystemd = 254

// SystemdUnit returns the text of printgate.service. The unit runs
// `printgate run` as the printgate system user, in the groups that own
// printer devices, inside a sandbox: the whole file system read-only
// except the state and config directories, no home directories, a private
// /tmp and no privilege gain. It does not use PrivateDevices=, which would
// hide the printers. It restarts the agent when it fails, after a delay
// that grows from 2 s to 2 min, and never gives up, since a store's
// printing must come back by itself once whatever failed is fixed.
//
// The config directory is writable because the manager page adds
// discovered printers to the config (atomically, by writing a new file
// beside it and renaming it).
func SystemdUnit(o UnitOptions) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# printgate.service: the printgate print agent.")
	w("# Written by `printgate install` or the printgate package; `printgate status`")
	w("# shows its state and the agent's health, `journalctl -u printgate` its output.")
	w("[Unit]")
	w("Description=%s", DisplayName)
	w("After=network-online.target")
	w("Wants=network-online.target")
	w("# Keep restarting however often it fails: see RestartSec below.")
	w("StartLimitIntervalSec=0")
	w("")
	w("[Service]")
	w("Type=simple")
	w("ExecStart=%s run --config %s", systemdQuote(o.Exe), systemdQuote(o.Config))
	w("# systemctl reload: the agent rereads its printers (SIGHUP) without a restart.")
	w("ExecReload=/bin/kill -HUP $MAINPID")
	w("User=%s", ServiceUser)
	w("Group=%s", ServiceGroup)
	w("SupplementaryGroups=%s", strings.Join(SupplementaryGroups, " "))
	w("Restart=on-failure")
	w("RestartSec=2s")
	if !o.NoRestartSteps {
		w("RestartSteps=10")
		w("RestartMaxDelaySec=2min")
	}
	w("# In-flight tickets finish their completion check before the agent exits.")
	w("TimeoutStopSec=45s")
	w("StateDirectory=printgate")
	w("StateDirectoryMode=0700")
	w("ConfigurationDirectory=printgate")
	w("ConfigurationDirectoryMode=0770")
	w("ReadWritePaths=%s %s", LinuxDataDir, LinuxConfigDir)
	w("UMask=0077")
	w("ProtectSystem=strict")
	w("ProtectHome=yes")
	w("PrivateTmp=yes")
	w("NoNewPrivileges=yes")
	w("ProtectKernelTunables=yes")
	w("ProtectKernelModules=yes")
	w("ProtectControlGroups=yes")
	w("RestrictSUIDSGID=yes")
	w("RestrictRealtime=yes")
	w("LockPersonality=yes")
	w("RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK")
	w("")
	w("[Install]")
	w("WantedBy=multi-user.target")
	return b.String()
}

// PackagedUnit is the unit the .deb ships: the binary in /usr/bin and the
// config in /etc/printgate, with the growing restart delay (older systemd
// ignores those two keys with a warning).
func PackagedUnit() string {
	return SystemdUnit(UnitOptions{Exe: LinuxExe, Config: LinuxConfigPath})
}

// systemdQuote quotes a path for ExecStart= when it needs it. Paths with
// a space are rare but legal; "%" and "$" would be expanded by systemd.
func systemdQuote(s string) string {
	r := strings.NewReplacer(`%`, `%%`, `$`, `$$`)
	s = r.Replace(s)
	if !strings.ContainsAny(s, " \t\"'\\") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

var systemdVersionRE = regexp.MustCompile(`(?m)^systemd ([0-9]+)`)

// SystemdVersion reads the version from the output of `systemctl
// --version` ("systemd 252 (252.39-1~deb12u2)"), or returns 0.
func SystemdVersion(out string) int {
	m := systemdVersionRE.FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

// UnsafeServicePath says why path cannot be used by the sandboxed service,
// or returns "": ProtectHome= hides /home, /root and /run/user, and
// PrivateTmp= gives the service its own /tmp.
func UnsafeServicePath(path string) string {
	for _, p := range []string{"/home/", "/root/", "/run/user/", "/tmp/", "/var/tmp/"} {
		if strings.HasPrefix(path, p) {
			return fmt.Sprintf("%s is under %s, which the service's sandbox hides from it", path, strings.TrimSuffix(p, "/"))
		}
	}
	return ""
}
