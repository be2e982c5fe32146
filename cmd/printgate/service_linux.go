package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kardianos/service"

	"printgate/installer"
)

// serviceOptions give kardianos our own unit (installer.SystemdUnit) in
// place of its template. The unit has no template actions, so it is
// written as is.
func serviceOptions(exe, configPath string) service.KeyValue {
	v := 0
	if out, err := exec.Command("systemctl", "--version").Output(); err == nil {
		v = installer.SystemdVersion(string(out))
	}
	return service.KeyValue{
		"SystemdScript": installer.SystemdUnit(installer.UnitOptions{
			Exe: exe, Config: configPath,
			// Unknown versions get the keys: newer systemd is the common case.
			NoRestartSteps: v > 0 && v < installer.RestartStepsMinSystemd,
		}),
	}
}

func adminHint() string {
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

// noServiceManager says why there is no service to ask about: no systemd
// (a container, a chroot).
func noServiceManager() string {
	if !systemdRunning() {
		return "no service manager: systemd is not running on this machine (printgate run runs the agent)"
	}
	return ""
}

// packagedUnit returns the unit the .deb installed, or "".
func packagedUnit() string {
	for _, p := range []string{installer.LinuxPackagedUnitPath, "/usr/lib/systemd/system/printgate.service"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// checkServicePaths refuses paths the sandboxed service could not use: the
// binary or the config in a home folder or /tmp, and a config outside
// /etc/printgate, the only config folder the unit lets the agent write.
func checkServicePaths(exe, configPath string) error {
	if why := installer.UnsafeServicePath(exe); why != "" {
		return fmt.Errorf("%s: copy the binary first, e.g. sudo install -m 0755 %s /usr/local/bin/printgate, then run /usr/local/bin/printgate install", why, exe)
	}
	if filepath.Dir(configPath) != installer.LinuxConfigDir {
		return fmt.Errorf("the service's config must be in %s (the unit's ConfigurationDirectory), not %s; use --config-only to write a config elsewhere", installer.LinuxConfigDir, configPath)
	}
	return nil
}

// registerService installs and enables the unit: ours through kardianos,
// or, when the .deb put its unit in /lib/systemd/system, that one (a unit
// in /etc would shadow the package's updates).
func registerService(s service.Service, w io.Writer) error {
	if !systemdRunning() {
		fmt.Fprintln(w, "systemd is not running on this machine, so no service was registered; the config and the")
		fmt.Fprintln(w, "printgate user are ready. Run the agent with your init system as the printgate user:")
		fmt.Fprintf(w, "  printgate run --config %s\n", installer.LinuxConfigPath)
		return nil
	}
	if p := packagedUnit(); p != "" {
		for _, args := range [][]string{{"daemon-reload"}, {"enable", installer.ServiceName + ".service"}} {
			if out, err := exec.Command("systemctl", args...).CombinedOutput(); err != nil {
				return fmt.Errorf("systemctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
			}
		}
		fmt.Fprintf(w, "service enabled: %s (from the package)\n", p)
		return nil
	}
	if _, err := os.Stat(installer.LinuxUnitPath); err == nil {
		fmt.Fprintf(w, "service already installed: %s (printgate uninstall removes it)\n", installer.LinuxUnitPath)
		return nil
	}
	if err := s.Install(); err != nil {
		return fmt.Errorf("install the service: %w", err)
	}
	fmt.Fprintf(w, "service installed and enabled: %s\n", installer.LinuxUnitPath)
	return nil
}

// unregisterService disables the service and removes the unit install
// wrote; a packaged unit stays for the package manager to remove.
func unregisterService(s service.Service, w io.Writer) error {
	if _, err := os.Stat(installer.LinuxUnitPath); err != nil {
		if p := packagedUnit(); p != "" {
			if out, err := exec.Command("systemctl", "disable", installer.ServiceName+".service").CombinedOutput(); err != nil {
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

// underServiceManager is false on Linux: systemd runs `printgate run` like
// any foreground program and stops it with SIGTERM.
func underServiceManager() bool { return false }

func runUnderServiceManager(string, io.Writer) error {
	return errors.New("not a Windows service")
}
