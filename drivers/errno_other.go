//go:build !windows

package drivers

import "syscall"

// permissionAdvice is how to get access to printer devices on this OS: udev
// gives /dev/usb/lp* to group lp and serial ports to group dialout.
const permissionAdvice = "add the service user to the lp group (usermod -aG lp printgate) for USB printers, or to dialout for serial ports, then restart the service"

func errnoKind(e syscall.Errno) errKind {
	switch e {
	case syscall.ECONNREFUSED:
		return kindRefused
	case syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.EHOSTDOWN, syscall.ENETDOWN:
		return kindUnreachable
	case syscall.ECONNRESET, syscall.EPIPE, syscall.ECONNABORTED:
		return kindReset
	case syscall.ETIMEDOUT:
		return kindTimeout
	case syscall.EACCES, syscall.EPERM:
		return kindPermission
	case syscall.EBUSY:
		return kindBusy
	case syscall.ENOENT, syscall.ENODEV, syscall.ENXIO:
		return kindNoDevice
	case syscall.ENOSPC:
		return kindPaperOut
	case syscall.EIO:
		return kindIO
	}
	return kindUnknown
}
