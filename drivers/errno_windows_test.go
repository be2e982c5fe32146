package drivers

import (
	"net"
	"os"

	"golang.org/x/sys/windows"
)

// errnoCases are TestWrapErr's rows for the error numbers Windows returns
// (Winsock's WSAE* and ERROR_*, not the Unix numbers Go's syscall package
// defines for Windows but Windows never returns). Windows has no paper-out
// number.
func errnoCases() []wrapCase {
	return []wrapCase{
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connectex", windows.WSAECONNREFUSED)}, "connection refused by 10.0.0.9:9100: is the printer on and the address right?", true},
		{"no route", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connectex", windows.WSAEHOSTUNREACH)}, "no route to host 10.0.0.9:9100", true},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("wsarecv", windows.WSAECONNRESET)}, "closed the connection", true},
		{"permission", &os.PathError{Op: "open", Path: `\\?\usb#vid_04b8`, Err: windows.ERROR_ACCESS_DENIED}, "run the service as LocalSystem", false},
		{"busy", windows.ERROR_SHARING_VIOLATION, "another program has the printer open", true},
		{"no device", windows.ERROR_DEVICE_NOT_CONNECTED, "no such device", true},
	}
}

// Winsock's numbers of a refused and a reset connection.
var errnoRefused, errnoReset error = windows.WSAECONNREFUSED, windows.WSAECONNRESET
