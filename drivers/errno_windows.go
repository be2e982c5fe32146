package drivers

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// permissionAdvice is how to get access to printer devices on Windows.
const permissionAdvice = "run the service as LocalSystem or as an administrator, and close any program holding the printer"

func errnoKind(e syscall.Errno) errKind {
	switch e {
	case windows.WSAECONNREFUSED, windows.ERROR_CONNECTION_REFUSED:
		return kindRefused
	case windows.WSAEHOSTUNREACH, windows.WSAENETUNREACH, windows.ERROR_HOST_UNREACHABLE, windows.ERROR_NETWORK_UNREACHABLE, windows.WSAENETDOWN, windows.WSAEHOSTDOWN:
		return kindUnreachable
	case windows.WSAECONNRESET, windows.WSAECONNABORTED, windows.ERROR_BROKEN_PIPE, windows.ERROR_NETNAME_DELETED:
		return kindReset
	case windows.WSAETIMEDOUT, windows.ERROR_SEM_TIMEOUT:
		return kindTimeout
	case windows.ERROR_ACCESS_DENIED:
		return kindPermission
	case windows.ERROR_SHARING_VIOLATION, windows.ERROR_BUSY:
		return kindBusy
	case windows.ERROR_FILE_NOT_FOUND, windows.ERROR_PATH_NOT_FOUND, windows.ERROR_DEVICE_NOT_CONNECTED, windows.ERROR_DEV_NOT_EXIST, windows.ERROR_BAD_UNIT:
		return kindNoDevice
	case windows.ERROR_GEN_FAILURE, windows.ERROR_IO_DEVICE:
		return kindIO
	case windows.ERROR_INVALID_PRINTER_NAME:
		return kindNoQueue
	}
	return kindUnknown
}
