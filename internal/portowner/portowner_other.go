//go:build !linux

package portowner

// Listening finds nothing outside Linux: there is no /proc to read.
func Listening(port int) (Process, bool) { return Process{}, false }
