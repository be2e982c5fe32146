//go:build windows

package doctor

import (
	"fmt"

	"golang.org/x/sys/windows"

	"printgate/agent/config"
	"printgate/drivers"
)

// errAddrNotAvail and errPermission classify a failed listen.
var (
	errAddrNotAvail error = windows.WSAEADDRNOTAVAIL
	errPermission   error = windows.WSAEACCES
)

// timeSyncFix is the fix for a clock that drifted.
const timeSyncFix = "enable time sync: Settings > Time & language > Set time automatically, or run w32tm /resync as an administrator"

// diskFreeAt reports the bytes available to this process on dir's volume,
// as the spool measures it.
func diskFreeAt(dir string) (uint64, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, err
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	return avail, nil
}

// dataDirFix says how to give the service the data dir.
func dataDirFix(dir string) string {
	return fmt.Sprintf("give the service's account (LocalSystem by default) full control of %s, or run printgate as an administrator", dir)
}

// whoListensHint says how to find the program on a port.
func whoListensHint(port string) string {
	return "netstat -ano | findstr :" + port + " shows its process id"
}

// devicePermission is not checked on Windows: COM ports and USB printers
// are opened by the service account, which Windows does not restrict by
// group.
func devicePermission(path string, scheme drivers.Scheme) Result {
	return Result{Status: Skip, Detail: path + ": not checked on Windows (the service account opens devices; a port held by another program shows in the printer check)"}
}

// CheckServiceFiles is not made on Windows: the files inherit the data
// dir's ACL, which the installer gives the service's account.
func CheckServiceFiles(env Env, cfg *config.Config) []Result {
	return []Result{{Name: "service files", Status: Skip, Detail: "not checked on Windows (the data dir's ACL, which the installer sets, decides)"}}
}
