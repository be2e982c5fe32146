package config

// DefaultDataDir is where the agent keeps its spool, log and state when the
// config sets no data_dir: /var/lib/printgate, the FHS place for a
// service's persistent data, which the systemd unit grants write access to.
func DefaultDataDir() string { return "/var/lib/printgate" }
