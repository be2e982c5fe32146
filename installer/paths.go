package installer

import (
	"path"
)

// ServiceName is the name of the service on both systems: the systemd unit
// printgate.service and the Windows service printgate (and its event-log
// source).
const ServiceName = "printgate"

// DisplayName and Description are what the service managers show.
const (
	DisplayName = "printgate print agent"
	Description = "Prints store tickets from the cloud and the POS on receipt printers, exactly once."
)

// Linux paths of a service install. They match the systemd unit's
// StateDirectory= and ConfigurationDirectory=, so systemd creates them and
// the sandbox lets the service write to them.
const (
	LinuxConfigDir  = "/etc/printgate"
	LinuxConfigPath = "/etc/printgate/printgate.toml"
	LinuxDataDir    = "/var/lib/printgate"
	// LinuxUnitPath is where `printgate install` writes the unit;
	// LinuxPackagedUnitPath is where the .deb puts it. A unit in /etc
	// overrides the packaged one, so install skips writing its own when
	// the package's is there.
	LinuxUnitPath         = "/etc/systemd/system/printgate.service"
	LinuxPackagedUnitPath = "/lib/systemd/system/printgate.service"
	// LinuxExe is where the .deb installs the binary.
	LinuxExe = "/usr/bin/printgate"
)

// ServiceUser and ServiceGroup are the account the Linux service runs as.
// It has no login and no home of its own; its only rights are the state
// and config directories and the device groups of SupplementaryGroups.
const (
	ServiceUser  = "printgate"
	ServiceGroup = "printgate"
)

// SupplementaryGroups are the groups that own printer devices on Debian
// and most distributions: lp for /dev/usb/lp*, dialout for serial ports
// (/dev/ttyS*, /dev/ttyUSB*, /dev/ttyACM*).
var SupplementaryGroups = []string{"lp", "dialout"}

// WindowsDataDir is the service's folder under %ProgramData%: its config,
// spool and log. programData is the value of %ProgramData%, or "" when the
// variable is unset, as it can be for a service started early.
func WindowsDataDir(programData string) string {
	if programData == "" {
		programData = `C:\ProgramData`
	}
	// filepath would use the host's separator; these paths are Windows
	// paths wherever the function is tested.
	return programData + `\printgate`
}

// WindowsConfigPath is the config file of a Windows service install.
func WindowsConfigPath(programData string) string {
	return WindowsDataDir(programData) + `\printgate.toml`
}

// Paths are where a service install on one OS keeps its config and data.
type Paths struct {
	Config  string
	DataDir string
}

// ServicePaths returns the config and data paths of a service install on
// goos ("linux" or "windows"; other systems get the Linux layout).
func ServicePaths(goos, programData string) Paths {
	if goos == "windows" {
		return Paths{Config: WindowsConfigPath(programData), DataDir: WindowsDataDir(programData)}
	}
	return Paths{Config: LinuxConfigPath, DataDir: LinuxDataDir}
}

// DataDirFor is the data_dir to write into a new config at configPath: the
// service's own data dir when the config is in the service's place, else a
// "data" folder beside the config, so a config written elsewhere (a test,
// a second agent) never shares the service's spool.
func DataDirFor(goos, programData, configPath string) string {
	p := ServicePaths(goos, programData)
	if samePath(goos, configPath, p.Config) {
		return p.DataDir
	}
	if goos == "windows" {
		return windowsDir(configPath) + `\data`
	}
	// path, not filepath: goos's separator, whatever this binary runs on.
	return path.Join(path.Dir(configPath), "data")
}

func samePath(goos, a, b string) bool {
	if goos == "windows" {
		return equalFoldASCII(a, b)
	}
	return path.Clean(a) == path.Clean(b)
}

func windowsDir(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '\\' || p[i] == '/' {
			return p[:i]
		}
	}
	return "."
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
