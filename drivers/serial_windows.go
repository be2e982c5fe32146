package drivers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// serialConn is a serial printer on Windows. The port is opened directly
// rather than through go.bug.st/serial because flow control lives in the
// DCB, which needs the handle the library keeps private. The handle is
// overlapped, so *os.File (Go 1.25 and later) gives real deadlines.
type serialConn struct {
	f      *os.File
	target string
	path   string
	flow   Flow
}

var _ Conn = (*serialConn)(nil)

func openSerial(ctx context.Context, t Target, opts Options) (Conn, error) {
	if !comPort.MatchString(t.Path) {
		return nil, &Error{Op: "open", Target: t.label(), Err: ErrUnsupported,
			Hint: fmt.Sprintf("%s is not a Windows port name: write serial://COM3 (see Device Manager, Ports)", t.Path)}
	}
	// \\.\ works for every port and is required from COM10 up.
	path := `\\.\` + t.Path
	name, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, wrapErr("open", t.label(), t.Path, err)
	}
	h, err := windows.CreateFile(name, windows.GENERIC_READ|windows.GENERIC_WRITE, 0, nil,
		windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OVERLAPPED, 0)
	if err != nil {
		if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
			// COM ports are exclusive: access denied almost always means
			// another program has the port open.
			return nil, &Error{Op: "open", Target: t.label(), Err: err, retry: true,
				Hint: fmt.Sprintf("%s is in use: another program has the printer open (close it, or stop the other print service)", t.Path)}
		}
		return nil, wrapErr("open", t.label(), t.Path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	if err := configureComm(h, t.Line); err != nil {
		windows.CloseHandle(h)
		return nil, wrapErr("open", t.label(), t.Path, fmt.Errorf("configure %s: %w", t.Path, err))
	}
	return &serialConn{f: os.NewFile(uintptr(h), path), target: t.label(), path: t.Path, flow: t.Line.Flow}, nil
}

func configureComm(h windows.Handle, l LineSettings) error {
	var dcb windows.DCB
	dcb.DCBlength = uint32(unsafe.Sizeof(dcb))
	if err := windows.GetCommState(h, &dcb); err != nil {
		return fmt.Errorf("get comm state: %w", err)
	}
	s := commStateFor(l)
	dcb.BaudRate = s.Baud
	dcb.Flags = s.Flags
	dcb.ByteSize = s.ByteSize
	dcb.Parity = s.Parity
	dcb.StopBits = s.StopBits
	dcb.XonLim = s.XonLim
	dcb.XoffLim = s.XoffLim
	dcb.XonChar = s.XonChar
	dcb.XoffChar = s.XoffChar
	if err := windows.SetCommState(h, &dcb); err != nil {
		return fmt.Errorf("set comm state (baud %d, flow %s): %w", l.Baud, l.Flow, err)
	}
	// Return from ReadFile as soon as one byte is there and otherwise wait
	// (almost) forever: deadlines are enforced by the runtime cancelling the
	// I/O, and a comm timeout would surface as a zero-byte read, i.e. EOF.
	const maxDword = 0xFFFFFFFF
	to := windows.CommTimeouts{
		ReadIntervalTimeout:        maxDword,
		ReadTotalTimeoutMultiplier: maxDword,
		ReadTotalTimeoutConstant:   maxDword - 1,
	}
	if err := windows.SetCommTimeouts(h, &to); err != nil {
		return fmt.Errorf("set comm timeouts: %w", err)
	}
	const purgeRxClear, purgeTxClear = 0x0008, 0x0004
	_ = windows.PurgeComm(h, purgeRxClear|purgeTxClear)
	return nil
}

func (c *serialConn) Read(p []byte) (int, error) {
	for {
		n, err := c.f.Read(p)
		if n == 0 && err == io.EOF {
			// The 49-day comm timeout expired: nothing arrived, read on.
			continue
		}
		if c.flow == FlowXONXOFF {
			n = stripXonXoff(p[:n])
			if n == 0 && err == nil {
				continue
			}
		}
		return n, wrapErr("read", c.target, c.path, err)
	}
}

func (c *serialConn) Write(p []byte) (int, error) {
	n, err := c.f.Write(p)
	return n, wrapErr("write", c.target, c.path, err)
}

func (c *serialConn) SetReadDeadline(t time.Time) error {
	return wrapErr("set deadline", c.target, c.path, c.f.SetReadDeadline(t))
}

func (c *serialConn) SetWriteDeadline(t time.Time) error {
	return wrapErr("set deadline", c.target, c.path, c.f.SetWriteDeadline(t))
}

func (c *serialConn) Close() error { return wrapErr("close", c.target, c.path, c.f.Close()) }
