//go:build !linux && !windows

package config

// DefaultDataDir is where the agent keeps its spool, log and state when the
// config sets no data_dir. printgate ships for Linux and Windows; other
// systems (developer Macs, BSDs) get the same Unix path as Linux.
func DefaultDataDir() string { return "/var/lib/printgate" }
