// Package installer holds the pure parts of installing printgate as a
// service: the systemd unit, the commands that create the service account,
// the Windows recovery policy, the per-OS paths, the discovery of the PC's
// own LAN and the commented config written on first install. Everything
// here builds text or argument lists and touches no system state except
// the config file writers, so it is tested on any OS without root; the
// commands in cmd/printgate carry the results out.
package installer
