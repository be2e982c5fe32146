package drivers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// usblp ioctls (linux/drivers/usb/class/usblp.c, linux/lp.h).
const (
	ioctlLPGETSTATUS = 0x060B
	ioctlLPABORT     = 0x0604
	// ioctlGetDeviceID is _IOC(_IOC_READ, 'P', IOCNR_GET_DEVICE_ID, 1024).
	ioctlGetDeviceID = 0x84005001
	deviceIDBufLen   = 1024
)

// usbConn is a printer on the Linux usblp driver. The device is opened
// non-blocking so the runtime poller gives reads and writes real deadlines:
// a blocking usblp read waits forever, and a write to a stalled printer
// would hold the lane's goroutine with no way out.
type usbConn struct {
	f      *os.File
	target string
	path   string
	oneWay atomic.Bool
}

var (
	_ Conn           = (*usbConn)(nil)
	_ OneWayer       = (*usbConn)(nil)
	_ LPStatusReader = (*usbConn)(nil)
	_ DeviceIDReader = (*usbConn)(nil)
)

func openUSB(ctx context.Context, t Target, opts Options) (Conn, error) {
	path := t.Path
	if t.ByID() {
		p, err := resolveUSBLP(opts.sysfsRoot(), t.VendorID, t.ProductID, t.SerialNumber)
		if err != nil {
			return nil, &Error{Op: "open", Target: t.label(), Err: err,
				Hint: err.Error() + "; is the printer plugged in and switched on?", retry: errors.Is(err, syscall.ENODEV)}
		}
		path = p
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, usbOpenError(t.label(), path, err)
	}
	// With LPABORT set, a write to a printer stalled at paper end fails
	// with ENOSPC instead of retrying forever inside the driver. Stand-in
	// devices answer ENOTTY, which is fine.
	_ = unix.IoctlSetInt(fd, ioctlLPABORT, 1)
	return &usbConn{f: os.NewFile(uintptr(fd), path), target: t.label(), path: path}, nil
}

func usbOpenError(target, path string, err error) error {
	pe := &os.PathError{Op: "open", Path: path, Err: err}
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return &Error{Op: "open", Target: target, Err: pe,
			Hint: fmt.Sprintf("permission denied opening %s: add the service user to the lp group: usermod -aG lp printgate (then restart the service)", path)}
	case errors.Is(err, unix.EBUSY):
		return &Error{Op: "open", Target: target, Err: pe, retry: true,
			Hint: fmt.Sprintf("%s is busy: another program has the printer open (CUPS or another print agent?)", path)}
	}
	return wrapErr("open", target, path, pe)
}

func (c *usbConn) Read(p []byte) (int, error) {
	if c.oneWay.Load() {
		return 0, c.wrap("read", ErrOneWay)
	}
	n, err := c.f.Read(p)
	if errors.Is(err, unix.EINVAL) {
		// usblp answers EINVAL when the interface is unidirectional.
		c.oneWay.Store(true)
		return 0, c.wrap("read", ErrOneWay)
	}
	return n, c.wrap("read", err)
}

func (c *usbConn) Write(p []byte) (int, error) {
	n, err := c.f.Write(p)
	return n, c.wrap("write", err)
}

func (c *usbConn) SetReadDeadline(t time.Time) error {
	return c.wrap("set deadline", c.f.SetReadDeadline(t))
}

func (c *usbConn) SetWriteDeadline(t time.Time) error {
	return c.wrap("set deadline", c.f.SetWriteDeadline(t))
}

func (c *usbConn) Close() error { return c.wrap("close", c.f.Close()) }

// OneWay reports whether a read has shown the interface to be one-way.
func (c *usbConn) OneWay() bool { return c.oneWay.Load() }

// LPStatus asks the driver for the printer's port status byte.
func (c *usbConn) LPStatus() (LPStatus, error) {
	var v uint32
	err := c.control(func(fd int) error {
		var err error
		v, err = unix.IoctlGetUint32(fd, ioctlLPGETSTATUS)
		return err
	})
	if err != nil {
		return 0, c.ioctlErr(err)
	}
	return LPStatus(v), nil
}

// DeviceID asks the printer for its IEEE 1284 device id.
func (c *usbConn) DeviceID() (DeviceID, error) {
	buf := make([]byte, deviceIDBufLen)
	err := c.control(func(fd int) error {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), ioctlGetDeviceID, uintptr(unsafe.Pointer(&buf[0])))
		if e != 0 {
			return e
		}
		return nil
	})
	if err != nil {
		return DeviceID{}, c.ioctlErr(err)
	}
	id, err := parseDeviceIDReply(buf)
	return id, c.wrap("status", err)
}

func (c *usbConn) control(fn func(fd int) error) error {
	rc, err := c.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// ioctlErr maps "this device has no such ioctl" to ErrNoStatus, so a
// stand-in device or an odd driver reads as "no status", not as a fault.
func (c *usbConn) ioctlErr(err error) error {
	if errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EINVAL) {
		return &Error{Op: "status", Target: c.target, Err: fmt.Errorf("%w: %w", ErrNoStatus, err), Hint: ErrNoStatus.Error()}
	}
	return c.wrap("status", err)
}

func (c *usbConn) wrap(op string, err error) error {
	return wrapErr(op, c.target, c.path, err)
}

// sysfsRoot is where sysfs is mounted: Options.SysfsRoot, or /sys.
func (o Options) sysfsRoot() string {
	if o.SysfsRoot != "" {
		return o.SysfsRoot
	}
	return "/sys"
}
