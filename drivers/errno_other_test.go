//go:build !windows

package drivers

import (
	"net"
	"os"
	"syscall"
)

// errnoCases are TestWrapErr's rows for the Unix error numbers.
func errnoCases() []wrapCase {
	return []wrapCase{
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "connection refused by 10.0.0.9:9100: is the printer on and the address right?", true},
		{"no route", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, "no route to host 10.0.0.9:9100", true},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, "closed the connection", true},
		{"permission", &os.PathError{Op: "open", Path: "/dev/ttyUSB0", Err: syscall.EACCES}, "usermod -aG lp printgate", false},
		{"busy", syscall.EBUSY, "another program has the printer open", true},
		{"no device", syscall.ENODEV, "no such device", true},
		{"paper out", syscall.ENOSPC, "out of paper?", true},
	}
}

// The Unix numbers of a refused and a reset connection.
var errnoRefused, errnoReset error = syscall.ECONNREFUSED, syscall.ECONNRESET
