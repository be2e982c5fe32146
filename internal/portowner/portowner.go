// Package portowner finds the program listening on a TCP port, so that "the
// port is taken" can say by whom: printgate itself (a second agent) or
// another program, with its process id. It reads /proc on Linux; elsewhere,
// and where /proc does not say (another user's process seen without root),
// it finds nothing and the caller says "another program".
package portowner

import "fmt"

// Process is a program holding a port.
type Process struct {
	// PID is its process id.
	PID int
	// Name is the program's name as the kernel keeps it (/proc/PID/comm).
	Name string
}

// String is the process as a message names it: "printgate (pid 4242)".
func (p Process) String() string { return fmt.Sprintf("%s (pid %d)", p.Name, p.PID) }
