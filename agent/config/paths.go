package config

import (
	"os"
	"path/filepath"
	"runtime"
)

// DefaultConfigPath is where `printgate run` and the service look for the
// config when none is named: /etc/printgate/printgate.toml, or
// %ProgramData%\printgate\printgate.toml on Windows.
func DefaultConfigPath() string {
	if runtime.GOOS == "windows" {
		base := os.Getenv("ProgramData")
		if base == "" {
			base = `C:\ProgramData`
		}
		return filepath.Join(base, "printgate", "printgate.toml")
	}
	return "/etc/printgate/printgate.toml"
}
