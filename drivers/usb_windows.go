package drivers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

// guidUSBPrint is GUID_DEVINTERFACE_USBPRINT, the interface class of printers
// bound to usbprint.sys.
var guidUSBPrint = windows.GUID{Data1: 0x28D78FAD, Data2: 0x5A12, Data3: 0x11D1,
	Data4: [8]byte{0xAE, 0x5B, 0x00, 0x00, 0xF8, 0x03, 0xA8, 0xC2}}

// usbprint ioctls (usbprint.h).
const (
	ioctlUSBPrintGetLPTStatus = 0x220030
	ioctlUSBPrintGet1284ID    = 0x220034
)

// usbConn is a printer on the Windows usbprint.sys driver, opened through
// its device interface path with an overlapped handle so *os.File gives real
// deadlines.
type usbConn struct {
	f      *os.File
	target string
	path   string
	oneWay atomic.Bool

	// ioctls run one at a time with a heap-resident OVERLAPPED, which the
	// kernel writes to after DeviceIoControl returns.
	mu sync.Mutex
	ov windows.Overlapped
}

var (
	_ Conn           = (*usbConn)(nil)
	_ OneWayer       = (*usbConn)(nil)
	_ LPStatusReader = (*usbConn)(nil)
	_ DeviceIDReader = (*usbConn)(nil)
)

// usbPrintInterfaces lists the device paths of the present USBPRINT
// interfaces. No USB printer is an empty list, not an error, also where the
// Configuration Manager fails the listing because the interface class was
// never registered on this PC (no USB printer ever plugged in: no
// DeviceClasses key; Wine answers CR_FAILURE then).
func usbPrintInterfaces() ([]string, error) {
	paths, err := windows.CM_Get_Device_Interface_List("", &guidUSBPrint, windows.CM_GET_DEVICE_INTERFACE_LIST_PRESENT)
	if err == nil {
		return paths, nil
	}
	var cr windows.CONFIGRET
	if !errors.As(err, &cr) {
		return nil, fmt.Errorf("list usb printers: %w", err)
	}
	if cr == windows.CR_NO_SUCH_DEVICE_INTERFACE || !usbPrintClassRegistered() {
		return nil, nil
	}
	return nil, fmt.Errorf("list usb printers: %s", configretText(cr))
}

// usbPrintClassRegistered reports whether the registry has the USBPRINT
// interface class, which Windows adds when the first USB printer is bound
// to usbprint.sys.
func usbPrintClassRegistered() bool {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE,
		`SYSTEM\CurrentControlSet\Control\DeviceClasses\{28d78fad-5a12-11d1-ae5b-0000f803a8c2}`, registry.QUERY_VALUE)
	if err != nil {
		return !errors.Is(err, windows.ERROR_FILE_NOT_FOUND)
	}
	k.Close()
	return true
}

// configretText words a Configuration Manager error without panicking:
// CONFIGRET's own Error calls CM_MapCrToWin32Err, which older systems and
// Wine lack (the lazy lookup then panics inside the message).
func configretText(cr windows.CONFIGRET) string {
	if windows.NewLazySystemDLL("cfgmgr32.dll").NewProc("CM_MapCrToWin32Err").Find() == nil {
		return cr.Error()
	}
	return fmt.Sprintf("Configuration Manager error %#x", uint32(cr))
}

func resolveUSBPrint(vid, pid uint16, serial string) (string, error) {
	paths, err := usbPrintInterfaces()
	if err != nil {
		return "", err
	}
	var match []string
	for _, p := range paths {
		v, d, inst, ok := parseUSBPrintPath(p)
		if ok && v == vid && d == pid && (serial == "" || strings.EqualFold(inst, serial)) {
			match = append(match, p)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return "", fmt.Errorf("no USB printer %04x:%04x found (%d usbprint devices present): %w", vid, pid, len(paths), windows.ERROR_DEVICE_NOT_CONNECTED)
	}
	return "", fmt.Errorf("%d USB printers match %04x:%04x: add ?serial=... to the url to pick one", len(match), vid, pid)
}

func openUSB(ctx context.Context, t Target, opts Options) (Conn, error) {
	if !t.ByID() {
		return nil, &Error{Op: "open", Target: t.label(), Err: ErrUnsupported,
			Hint: "device paths are for Linux; on Windows write usb://VID:PID (such as usb://04b8:0202) or winspool://QUEUE"}
	}
	path, err := resolveUSBPrint(t.VendorID, t.ProductID, t.SerialNumber)
	if err != nil {
		return nil, &Error{Op: "open", Target: t.label(), Err: err,
			Hint: err.Error() + "; is the printer plugged in and switched on?", retry: errors.Is(err, windows.ERROR_DEVICE_NOT_CONNECTED)}
	}
	f, err := openUSBPrintPath(path)
	if err != nil {
		if errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_SHARING_VIOLATION) {
			return nil, &Error{Op: "open", Target: t.label(), Err: err, retry: true,
				Hint: "the printer is in use: another program (or the Windows spooler port) has it open"}
		}
		return nil, wrapErr("open", t.label(), path, err)
	}
	return &usbConn{f: f, target: t.label(), path: path}, nil
}

func openUSBPrintPath(path string) (*os.File, error) {
	name, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	h, err := windows.CreateFile(name, windows.GENERIC_READ|windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil, windows.OPEN_EXISTING,
		windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OVERLAPPED, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}

func (c *usbConn) Read(p []byte) (int, error) {
	if c.oneWay.Load() {
		return 0, wrapErr("read", c.target, c.path, ErrOneWay)
	}
	n, err := c.f.Read(p)
	if errors.Is(err, windows.ERROR_INVALID_FUNCTION) || errors.Is(err, windows.ERROR_NOT_SUPPORTED) {
		c.oneWay.Store(true)
		return 0, wrapErr("read", c.target, c.path, ErrOneWay)
	}
	return n, wrapErr("read", c.target, c.path, err)
}

func (c *usbConn) Write(p []byte) (int, error) {
	n, err := c.f.Write(p)
	return n, wrapErr("write", c.target, c.path, err)
}

func (c *usbConn) SetReadDeadline(t time.Time) error {
	return wrapErr("set deadline", c.target, c.path, c.f.SetReadDeadline(t))
}

func (c *usbConn) SetWriteDeadline(t time.Time) error {
	return wrapErr("set deadline", c.target, c.path, c.f.SetWriteDeadline(t))
}

func (c *usbConn) Close() error { return wrapErr("close", c.target, c.path, c.f.Close()) }

// OneWay reports whether a read has shown the interface to be one-way.
func (c *usbConn) OneWay() bool { return c.oneWay.Load() }

// LPStatus asks usbprint.sys for the printer's port status byte.
func (c *usbConn) LPStatus() (LPStatus, error) {
	var b [1]byte
	n, err := c.ioctl(ioctlUSBPrintGetLPTStatus, b[:])
	if err != nil {
		return 0, c.ioctlErr(err)
	}
	if n < 1 {
		return 0, c.ioctlErr(windows.ERROR_NOT_SUPPORTED)
	}
	return LPStatus(b[0]), nil
}

// DeviceID asks the printer for its IEEE 1284 device id.
func (c *usbConn) DeviceID() (DeviceID, error) {
	buf := make([]byte, 1024)
	n, err := c.ioctl(ioctlUSBPrintGet1284ID, buf)
	if err != nil {
		return DeviceID{}, c.ioctlErr(err)
	}
	id, err := parseDeviceIDReply(buf[:n])
	return id, wrapErr("status", c.target, c.path, err)
}

// ioctl runs DeviceIoControl on the overlapped handle. The event handle's
// low bit is set so the completion is not queued to the runtime's I/O
// completion port, which would not know this OVERLAPPED.
func (c *usbConn) ioctl(code uint32, out []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ev, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		return 0, err
	}
	defer windows.CloseHandle(ev)
	rc, err := c.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n uint32
	var ierr error
	cerr := rc.Control(func(fd uintptr) {
		h := windows.Handle(fd)
		c.ov = windows.Overlapped{HEvent: ev | 1}
		ierr = windows.DeviceIoControl(h, code, nil, 0, &out[0], uint32(len(out)), &n, &c.ov)
		if ierr == windows.ERROR_IO_PENDING {
			if _, werr := windows.WaitForSingleObject(ev, 5000); werr != nil {
				ierr = werr
				return
			}
			ierr = windows.GetOverlappedResult(h, &c.ov, &n, false)
			if ierr == windows.ERROR_IO_INCOMPLETE {
				_ = windows.CancelIoEx(h, &c.ov)
				_ = windows.GetOverlappedResult(h, &c.ov, &n, true)
				ierr = windows.WAIT_TIMEOUT
			}
		}
	})
	if cerr != nil {
		return 0, cerr
	}
	return int(n), ierr
}

func (c *usbConn) ioctlErr(err error) error {
	if errors.Is(err, windows.ERROR_INVALID_FUNCTION) || errors.Is(err, windows.ERROR_NOT_SUPPORTED) {
		return &Error{Op: "status", Target: c.target, Err: fmt.Errorf("%w: %w", ErrNoStatus, err), Hint: ErrNoStatus.Error()}
	}
	return wrapErr("status", c.target, c.path, err)
}
