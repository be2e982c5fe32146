package drivers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// serialConn is a serial printer on Linux. It opens the tty itself instead of
// through go.bug.st/serial because that library hides the file descriptor
// (so flow control cannot be set) and has no write deadline; a non-blocking
// *os.File gets real read and write deadlines from the runtime poller.
type serialConn struct {
	f      *os.File
	target string
	path   string
	flow   Flow
	// gate holds writes while the printer drops DSR (flow=dsrdtr), which
	// termios cannot do; nil when the device has no modem lines.
	gate *dsrGate
}

var _ Conn = (*serialConn)(nil)

var bauds = map[int]uint32{
	1200: unix.B1200, 2400: unix.B2400, 4800: unix.B4800, 9600: unix.B9600,
	19200: unix.B19200, 38400: unix.B38400, 57600: unix.B57600, 115200: unix.B115200,
	230400: unix.B230400, 460800: unix.B460800, 921600: unix.B921600,
}

// makeRaw sets tios to a raw 8-bit line with the given settings, the
// equivalent of cfmakeraw plus speed, framing and flow control.
func makeRaw(tios *unix.Termios, l LineSettings) error {
	speed, ok := bauds[l.Baud]
	if !ok {
		return fmt.Errorf("unsupported baud %d", l.Baud)
	}
	tios.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON | unix.IXOFF | unix.IXANY | unix.INPCK
	tios.Oflag &^= unix.OPOST
	tios.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	tios.Cflag &^= unix.CSIZE | unix.PARENB | unix.PARODD | unix.CSTOPB | unix.CRTSCTS | unix.CBAUD | unix.CBAUDEX
	tios.Cflag |= unix.CREAD | unix.CLOCAL | speed
	tios.Ispeed, tios.Ospeed = speed, speed
	switch l.DataBits {
	case 5:
		tios.Cflag |= unix.CS5
	case 6:
		tios.Cflag |= unix.CS6
	case 7:
		tios.Cflag |= unix.CS7
	default:
		tios.Cflag |= unix.CS8
	}
	switch l.Parity {
	case ParityEven:
		tios.Cflag |= unix.PARENB
		tios.Iflag |= unix.INPCK
	case ParityOdd:
		tios.Cflag |= unix.PARENB | unix.PARODD
		tios.Iflag |= unix.INPCK
	}
	if l.StopBits == 2 {
		tios.Cflag |= unix.CSTOPB
	}
	switch l.Flow {
	case FlowRTSCTS:
		tios.Cflag |= unix.CRTSCTS
	case FlowXONXOFF:
		tios.Iflag |= unix.IXON | unix.IXOFF
		tios.Cc[unix.VSTART] = xon
		tios.Cc[unix.VSTOP] = xoff
	}
	// Block in read until one byte is there; the poller and deadlines do the
	// waiting because the fd is non-blocking.
	tios.Cc[unix.VMIN] = 1
	tios.Cc[unix.VTIME] = 0
	return nil
}

func openSerial(ctx context.Context, t Target, opts Options) (Conn, error) {
	if comPort.MatchString(t.Path) {
		return nil, wrapErr("open", t.label(), t.Path, fmt.Errorf("%s is a Windows port name; on Linux use serial:///dev/ttyUSB0 or /dev/ttyS0: %w", t.Path, ErrUnsupported))
	}
	fd, err := unix.Open(t.Path, unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, wrapErr("open", t.label(), t.Path, &os.PathError{Op: "open", Path: t.Path, Err: err})
	}
	fail := func(what string, err error) (Conn, error) {
		unix.Close(fd)
		return nil, wrapErr("open", t.label(), t.Path, fmt.Errorf("%s %s: %w", what, t.Path, err))
	}
	tios, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.ENOTTY) {
			// Retrying cannot turn a file into a serial port.
			return nil, &Error{Op: "open", Target: t.label(), Err: err,
				Hint: fmt.Sprintf("%s is not a serial port: check the device path (ls /dev/ttyUSB* /dev/ttyACM* /dev/ttyS*)", t.Path)}
		}
		return nil, wrapErr("open", t.label(), t.Path, fmt.Errorf("read line settings of %s: %w", t.Path, err))
	}
	if err := makeRaw(tios, t.Line); err != nil {
		return fail("configure", err)
	}
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, tios); err != nil {
		return fail("set line settings of", err)
	}
	// A second program writing to the same printer interleaves jobs; take
	// the port exclusively so it gets EBUSY instead.
	_ = unix.IoctlSetInt(fd, unix.TIOCEXCL, 0)
	// Bytes received before we opened answer nobody's question.
	_ = unix.IoctlSetInt(fd, unix.TCFLSH, unix.TCIFLUSH)
	c := &serialConn{target: t.label(), path: t.Path, flow: t.Line.Flow}
	if t.Line.Flow == FlowDSRDTR {
		dsr := func() (bool, error) {
			bits, err := unix.IoctlGetInt(fd, unix.TIOCMGET)
			return bits&unix.TIOCM_DSR != 0, err
		}
		// Devices without modem lines (USB CDC printers, ptys) answer
		// ENOTTY or EINVAL: there is nothing to wait for.
		if _, err := dsr(); err == nil {
			c.gate = newDSRGate(dsr)
		}
	}
	c.f = os.NewFile(uintptr(fd), t.Path)
	return c, nil
}

func (c *serialConn) Read(p []byte) (int, error) {
	for {
		n, err := c.f.Read(p)
		if c.flow == FlowXONXOFF {
			n = stripXonXoff(p[:n])
			if n == 0 && err == nil {
				continue
			}
		}
		return n, c.wrap("read", err)
	}
}

func (c *serialConn) Write(p []byte) (int, error) {
	if c.gate == nil {
		n, err := c.f.Write(p)
		return n, c.wrap("write", err)
	}
	written := 0
	for written < len(p) {
		if err := c.gate.wait(); err != nil {
			return written, c.wrap("write", err)
		}
		end := min(written+dsrChunk, len(p))
		n, err := c.f.Write(p[written:end])
		written += n
		if err != nil {
			return written, c.wrap("write", err)
		}
	}
	return written, nil
}

func (c *serialConn) SetReadDeadline(t time.Time) error {
	return c.wrap("set deadline", c.f.SetReadDeadline(t))
}

func (c *serialConn) SetWriteDeadline(t time.Time) error {
	if c.gate != nil {
		c.gate.setDeadline(t)
	}
	return c.wrap("set deadline", c.f.SetWriteDeadline(t))
}

func (c *serialConn) Close() error {
	if c.gate != nil {
		c.gate.close()
	}
	return c.wrap("close", c.f.Close())
}

func (c *serialConn) wrap(op string, err error) error {
	return wrapErr(op, c.target, c.path, err)
}

// dsrChunk is how many bytes go out between DSR checks. The kernel buffers
// what we write, so gating in user space is approximate: small chunks keep
// the overrun after the printer drops DSR to one chunk plus the UART FIFO.
const dsrChunk = 64

// dsrPoll is how often a held write looks at DSR again. Linux offers no
// deadline-aware wait for modem line changes (TIOCMIWAIT blocks without one).
const dsrPoll = 10 * time.Millisecond

// dsrGate holds writes while the printer signals "buffer full" by dropping
// DSR, honouring the write deadline and Close.
type dsrGate struct {
	dsr      func() (bool, error)
	mu       sync.Mutex
	deadline time.Time
	closed   chan struct{}
	once     sync.Once
}

func newDSRGate(dsr func() (bool, error)) *dsrGate {
	return &dsrGate{dsr: dsr, closed: make(chan struct{})}
}

func (g *dsrGate) setDeadline(t time.Time) {
	g.mu.Lock()
	g.deadline = t
	g.mu.Unlock()
}

func (g *dsrGate) close() { g.once.Do(func() { close(g.closed) }) }

// wait returns nil once DSR is up, os.ErrDeadlineExceeded when the write
// deadline passes first, os.ErrClosed after close.
func (g *dsrGate) wait() error {
	for {
		ok, err := g.dsr()
		if err != nil {
			return fmt.Errorf("read modem lines: %w", err)
		}
		if ok {
			return nil
		}
		g.mu.Lock()
		dl := g.deadline
		g.mu.Unlock()
		wait := dsrPoll
		if !dl.IsZero() {
			left := time.Until(dl)
			if left <= 0 {
				return fmt.Errorf("printer holds DSR low (buffer full or offline): %w", os.ErrDeadlineExceeded)
			}
			wait = min(wait, left)
		}
		t := time.NewTimer(wait)
		select {
		case <-g.closed:
			t.Stop()
			return os.ErrClosed
		case <-t.C:
		}
	}
}
