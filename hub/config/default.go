package config

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
)

// DefaultPath is what Config.Path says of the built-in config, which
// `printgate-hub` uses when no --config names a file.
const DefaultPath = "(built-in default)"

// Default is the config of a first try without a file: the documented
// defaults, listening on DefaultListen, with the data in DefaultDataDir.
func Default() *Config {
	return &Config{Path: DefaultPath, DataDir: DefaultDataDir(), Listen: DefaultListen, Retention: DefaultRetention,
		ExpireAfter: DefaultExpireAfter, MaxStoreMB: DefaultMaxStoreMB, MaxJobsPerStore: DefaultMaxJobsPerStore,
		MaxJobsPerTenant: DefaultMaxJobsPerTenant, LogLevel: slog.LevelInfo}
}

// DefaultDataDir is where the built-in config keeps the hub's data: the
// current user's state dir ($XDG_STATE_HOME/printgate-hub, else
// ~/.local/state/printgate-hub; %LocalAppData%\printgate-hub on Windows),
// or ./printgate-hub-data (absolute) when the user has no home to hold it.
// It is the same for run and the commands that add tenants, stores and
// keys, so they find one another's data.
func DefaultDataDir() string {
	if runtime.GOOS == "windows" {
		if d := os.Getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "printgate-hub")
		}
	} else if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "printgate-hub")
	} else if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) && home != "/" && isDir(home) {
		return filepath.Join(home, ".local", "state", "printgate-hub")
	}
	d, err := filepath.Abs("printgate-hub-data")
	if err != nil {
		return "printgate-hub-data"
	}
	return d
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// CheckDefault checks what flags may change in the built-in config (the
// data dir and the listen address) and says what is wrong in a sentence,
// or returns "".
func CheckDefault(cfg *Config) string {
	if cfg.DataDir == "" {
		return "the data dir is empty; name a directory the hub may keep its data in"
	}
	if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
		return fmt.Sprintf("listen %q is not host:port; write e.g. 127.0.0.1:8640 or :8640", cfg.Listen)
	}
	return ""
}
