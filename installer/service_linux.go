package installer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kardianos/service"
)

// serviceOptions give kardianos our own unit (SystemdUnit) in
// place of its template. The unit has no template actions, so it is
// written as is.
func serviceOptions(exe, configPath string) service.KeyValue {
	v := 0
	if out, err := exec.Command("systemctl", "--version").Output(); err == nil {
		v = SystemdVersion(string(out))
	}
	return service.KeyValue{
		"SystemdScript": SystemdUnit(UnitOptions{
			Exe: exe, Config: configPath,
			// Unknown versions get the keys: newer systemd is the common case.
			NoRestartSteps: v > 0 && v < RestartStepsMinSystemd,
		}),
	}
}

// AdminHint is what to add to a service command's error: how to run it
// with the rights it needs.
func AdminHint() string {
	if os.Geteuid() != 0 {
		return " (run it as root, with sudo)"
	}
	return ""
}

// systemdRunning is sd_booted(): systemd is the init system of this boot.
func systemdRunning() bool {
	st, err := os.Stat("/run/systemd/system")
	return err == nil && st.IsDir()
}

// NoServiceManager says why there is no service to ask about: no systemd
// (a container, a chroot).
func NoServiceManager() string {
	if !systemdRunning() {
		return "no service manager: systemd is not running on this machine (printgate run runs the agent)"
	}
	return ""
}

// packagedUnit returns the unit the .deb installed, or "".
func packagedUnit() string {
	for _, p := range []string{LinuxPackagedUnitPath, "/usr/lib/systemd/system/printgate.service"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// CheckServicePaths refuses paths the sandboxed service could not use: the
// binary or the config in a home folder or /tmp, and a config outside
// /etc/printgate, the only config folder the unit lets the agent write.
func CheckServicePaths(exe, configPath string) error {
	if why := UnsafeServicePath(exe); why != "" {
		return fmt.Errorf("%s: copy the binary first, e.g. sudo install -m 0755 %s /usr/local/bin/printgate, then run /usr/local/bin/printgate install", why, exe)
	}
	if filepath.Dir(configPath) != LinuxConfigDir {
		return fmt.Errorf("the service's config must be in %s (the unit's ConfigurationDirectory), not %s; use --config-only to write a config elsewhere", LinuxConfigDir, configPath)
	}
	return nil
}

// RegisterService installs and enables the unit: ours through kardianos,
// or, when the .deb put its unit in /lib/systemd/system, that one (a unit
// in /etc would shadow the package's updates).
func RegisterService(s service.Service, exe, configPath string, w io.Writer) error {
	if !systemdRunning() {
		fmt.Fprintln(w, "systemd is not running on this machine, so no service was registered; the config and the")
		fmt.Fprintln(w, "printgate user are ready. Run the agent with your init system as the printgate user:")
		fmt.Fprintf(w, "  printgate run --config %s\n", LinuxConfigPath)
		return nil
	}
	if p := packagedUnit(); p != "" {
		for _, args := range [][]string{{"daemon-reload"}, {"enable", ServiceName + ".service"}} {
			if out, err := exec.Command("systemctl", args...).CombinedOutput(); err != nil {
				return fmt.Errorf("systemctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
			}
		}
		fmt.Fprintf(w, "service enabled: %s (from the package)\n", p)
		return nil
	}
	if _, err := os.Stat(LinuxUnitPath); err == nil {
		fmt.Fprintf(w, "service already installed: %s (printgate uninstall removes it)\n", LinuxUnitPath)
		return nil
	}
	if err := s.Install(); err != nil {
		return fmt.Errorf("install the service: %w", err)
	}
	fmt.Fprintf(w, "service installed and enabled: %s\n", LinuxUnitPath)
	return nil
}

// UnregisterService disables the service and removes the unit install
// wrote; a packaged unit stays for the package manager to remove.
func UnregisterService(s service.Service, w io.Writer) error {
	if _, err := os.Stat(LinuxUnitPath); err != nil {
		if p := packagedUnit(); p != "" {
			if out, err := exec.Command("systemctl", "disable", ServiceName+".service").CombinedOutput(); err != nil {
				return fmt.Errorf("systemctl disable: %w: %s", err, strings.TrimSpace(string(out)))
			}
			fmt.Fprintf(w, "service disabled; %s belongs to the package: apt remove printgate removes it\n", p)
			return nil
		}
	}
	if err := s.Uninstall(); err != nil {
		return fmt.Errorf("remove the service: %w", err)
	}
	return nil
}

// UnderServiceManager is false on Linux: systemd runs `printgate run` like
// any foreground program and stops it with SIGTERM.
func UnderServiceManager() bool { return false }

// RunUnderServiceManager is for Windows only: `run --service` is the
// command line of the Windows service.
func RunUnderServiceManager(string, func(context.Context) error) error {
	return errors.New("--service is for the Windows service manager only; here the agent runs with printgate run")
}

// ServiceArguments is the command line the service runs the binary with.
func ServiceArguments(configPath string) []string { return []string{"run", "--config", configPath} }

// AdminHintFor is what to add to the error err of a service command:
// AdminHint, since a Linux service command needs root whatever failed.
func AdminHintFor(err error) string { return AdminHint() }

// controlService is Control through kardianos.
func controlService(s service.Service, action string) (string, error) {
	return kardianosControl(s, action)
}
