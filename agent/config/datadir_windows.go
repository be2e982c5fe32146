package config

import (
	"os"
	"path/filepath"
)

// DefaultDataDir is where the agent keeps its spool, log and state when the
// config sets no data_dir: %ProgramData%\printgate, the machine-wide data
// folder a Windows service can write to whichever user is logged on.
func DefaultDataDir() string {
	base := os.Getenv("ProgramData")
	if base == "" {
		// Services started very early can lack the variable; this is its
		// value on every Windows since Vista.
		base = `C:\ProgramData`
	}
	return filepath.Join(base, "printgate")
}
