package drivers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns the master side of a new pseudo-terminal as a
// non-blocking *os.File (so reads take deadlines) and the slave's path,
// which stands in for /dev/ttyUSB0.
func openPTY(t *testing.T) (*os.File, string) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(fd)
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		unix.Close(fd)
		t.Fatalf("ptsname: %v", err)
	}
	master := os.NewFile(uintptr(fd), "/dev/ptmx")
	t.Cleanup(func() { master.Close() })
	return master, fmt.Sprintf("/dev/pts/%d", n)
}

// slaveTermios reads the line settings back through the Conn's own fd.
func slaveTermios(t *testing.T, c Conn) *unix.Termios {
	t.Helper()
	rc, err := c.(*serialConn).f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var tios *unix.Termios
	var ierr error
	rc.Control(func(fd uintptr) { tios, ierr = unix.IoctlGetTermios(int(fd), unix.TCGETS) })
	if ierr != nil {
		t.Fatal(ierr)
	}
	return tios
}

func readN(t *testing.T, r interface {
	io.Reader
	SetReadDeadline(time.Time) error
}, n int) []byte {
	t.Helper()
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatalf("read %d bytes: %v (got %x)", n, err, b)
	}
	return b
}

// TestSerialTermios ensures each flow mode, baud and framing of the URL
// lands in the tty's termios, and the line is raw (no echo, no line
// editing, no CR/LF translation that would corrupt ESC/POS bytes).
func TestSerialTermios(t *testing.T) {
	tests := []struct {
		query    string
		speed    uint32
		crtscts  bool
		ixonoff  bool
		csize    uint32
		parenb   bool
		parodd   bool
		cstopb   bool
		wantGate bool
	}{
		{"", unix.B9600, false, false, unix.CS8, false, false, false, false},
		{"?baud=19200&flow=rtscts", unix.B19200, true, false, unix.CS8, false, false, false, false},
		{"?baud=38400&flow=dsrdtr", unix.B38400, false, false, unix.CS8, false, false, false, false},
		{"?baud=115200&flow=xonxoff", unix.B115200, false, true, unix.CS8, false, false, false, false},
		{"?baud=4800&flow=none&parity=even&data=7&stop=2", unix.B4800, false, false, unix.CS7, true, false, true, false},
		{"?baud=921600&parity=odd", unix.B921600, false, false, unix.CS8, true, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			_, slave := openPTY(t)
			c, err := Open(context.Background(), "serial://"+slave+tt.query, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			tios := slaveTermios(t, c)
			if got := tios.Cflag & (unix.CBAUD | unix.CBAUDEX); got != tt.speed {
				t.Errorf("speed bits %#o, want %#o", got, tt.speed)
			}
			if got := tios.Cflag&unix.CRTSCTS != 0; got != tt.crtscts {
				t.Errorf("CRTSCTS = %v, want %v", got, tt.crtscts)
			}
			if got := tios.Iflag&(unix.IXON|unix.IXOFF) == unix.IXON|unix.IXOFF; got != tt.ixonoff {
				t.Errorf("IXON|IXOFF = %v, want %v (iflag %#o)", got, tt.ixonoff, tios.Iflag)
			}
			if tt.ixonoff && (tios.Cc[unix.VSTART] != 0x11 || tios.Cc[unix.VSTOP] != 0x13) {
				t.Errorf("VSTART/VSTOP = %x/%x", tios.Cc[unix.VSTART], tios.Cc[unix.VSTOP])
			}
			if !tt.ixonoff && tios.Iflag&(unix.IXON|unix.IXOFF|unix.IXANY) != 0 {
				t.Errorf("software flow control left on: iflag %#o", tios.Iflag)
			}
			// The pty driver forces CS8 and no parity whatever we ask, so
			// data bits and parity are checked on makeRaw's output instead.
			var want unix.Termios
			if err := makeRaw(&want, mustLine(t, tt.query)); err != nil {
				t.Fatal(err)
			}
			if got := want.Cflag & unix.CSIZE; got != tt.csize {
				t.Errorf("CSIZE %#o, want %#o", got, tt.csize)
			}
			if got := want.Cflag&unix.PARENB != 0; got != tt.parenb {
				t.Errorf("PARENB = %v, want %v", got, tt.parenb)
			}
			if got := want.Cflag&unix.PARODD != 0; got != tt.parodd {
				t.Errorf("PARODD = %v, want %v", got, tt.parodd)
			}
			if got := want.Iflag&unix.INPCK != 0; got != tt.parenb {
				t.Errorf("INPCK = %v, want %v", got, tt.parenb)
			}
			if got := tios.Cflag&unix.CSTOPB != 0; got != tt.cstopb {
				t.Errorf("CSTOPB = %v, want %v", got, tt.cstopb)
			}
			if tios.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG|unix.IEXTEN) != 0 || tios.Oflag&unix.OPOST != 0 || tios.Iflag&(unix.ICRNL|unix.INLCR|unix.ISTRIP) != 0 {
				t.Errorf("line not raw: iflag %#o oflag %#o lflag %#o", tios.Iflag, tios.Oflag, tios.Lflag)
			}
			if tios.Cflag&(unix.CREAD|unix.CLOCAL) != unix.CREAD|unix.CLOCAL {
				t.Errorf("CREAD|CLOCAL not set: cflag %#o", tios.Cflag)
			}
			// A pty has no modem lines, so dsrdtr cannot gate there.
			if got := c.(*serialConn).gate != nil; got != tt.wantGate {
				t.Errorf("DSR gate = %v, want %v", got, tt.wantGate)
			}
		})
	}
}

func mustLine(t *testing.T, query string) LineSettings {
	t.Helper()
	tg, err := ParseURL("serial:///dev/ttyS0" + query)
	if err != nil {
		t.Fatal(err)
	}
	return tg.Line
}

// TestSerialRoundTrip ensures every byte value passes both ways unchanged
// when flow control is not xonxoff, including 0x11, 0x13, CR and LF.
func TestSerialRoundTrip(t *testing.T) {
	for _, flow := range []string{"none", "rtscts", "dsrdtr"} {
		t.Run(flow, func(t *testing.T) {
			master, slave := openPTY(t)
			c, err := Open(context.Background(), "serial://"+slave+"?baud=19200&flow="+flow, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			all := make([]byte, 256)
			for i := range all {
				all[i] = byte(i)
			}
			c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write(all); err != nil {
				t.Fatal(err)
			}
			if got := readN(t, master, len(all)); !bytes.Equal(got, all) {
				t.Fatalf("printer got %x", got)
			}
			if _, err := master.Write(all); err != nil {
				t.Fatal(err)
			}
			if got := readN(t, c, len(all)); !bytes.Equal(got, all) {
				t.Fatalf("agent got %x", got)
			}
		})
	}
}

// TestSerialReadDeadline ensures a silent printer cannot hold a reader past
// its deadline.
func TestSerialReadDeadline(t *testing.T) {
	_, slave := openPTY(t)
	c, err := Open(context.Background(), "serial://"+slave, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err = c.Read(make([]byte, 1))
	var pe *Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &pe) || !pe.Retryable() {
		t.Fatalf("err = %v, want retryable deadline error", err)
	}
}

// TestSerialXonXoff ensures that with flow=xonxoff an XOFF from the printer
// stops our writes (until the write deadline), an XON resumes them, and
// neither byte shows up among the status answers Read returns.
func TestSerialXonXoff(t *testing.T) {
	master, slave := openPTY(t)
	c, err := Open(context.Background(), "serial://"+slave+"?baud=115200&flow=xonxoff", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// XOFF then a status byte: once the status byte is readable, the XOFF
	// before it has been processed.
	master.Write([]byte{0x13, 0x12})
	if got := readN(t, c, 1); got[0] != 0x12 {
		t.Fatalf("read %x, want 12 (XOFF must be filtered)", got)
	}
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	n, err := c.Write([]byte("job"))
	if n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write while XOFF: n=%d err=%v, want 0 and deadline exceeded", n, err)
	}
	if !bytes.Contains([]byte(err.Error()), []byte("flow control")) {
		t.Errorf("write timeout hint should mention flow control: %v", err)
	}

	master.Write([]byte{0x11, 0x16})
	if got := readN(t, c, 1); got[0] != 0x16 {
		t.Fatalf("read %x, want 16 (XON must be filtered)", got)
	}
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("job")); err != nil {
		t.Fatalf("write after XON: %v", err)
	}
	if got := readN(t, master, 3); string(got) != "job" {
		t.Fatalf("printer got %q", got)
	}
}

// TestSerialNotATTY ensures a path that is not a serial port gives a
// non-retryable error saying so.
func TestSerialNotATTY(t *testing.T) {
	p := t.TempDir() + "/file"
	os.WriteFile(p, nil, 0o600)
	_, err := Open(context.Background(), "serial://"+p, Options{})
	var pe *Error
	if !errors.As(err, &pe) || pe.Retryable() || !bytes.Contains([]byte(err.Error()), []byte("is not a serial port")) {
		t.Fatalf("err = %v", err)
	}
}

// TestSerialMissingDevice ensures an unplugged adapter reads as retryable
// "no such device".
func TestSerialMissingDevice(t *testing.T) {
	_, err := Open(context.Background(), "serial:///dev/ttyUSB-printgate-none", Options{})
	var pe *Error
	if !errors.As(err, &pe) || !pe.Retryable() || !errors.Is(err, syscall.ENOENT) || !bytes.Contains([]byte(err.Error()), []byte("no such device")) {
		t.Fatalf("err = %v", err)
	}
}

// TestDSRGate ensures dsrdtr writes wait while DSR is low, give up at the
// write deadline, go on once DSR rises, and stop waiting on Close.
func TestDSRGate(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		g := newDSRGate(func() (bool, error) { return false, nil })
		g.setDeadline(time.Now().Add(30 * time.Millisecond))
		if err := g.wait(); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("wait = %v, want deadline exceeded", err)
		}
	})
	t.Run("rises", func(t *testing.T) {
		calls := 0
		g := newDSRGate(func() (bool, error) { calls++; return calls >= 3, nil })
		if err := g.wait(); err != nil || calls != 3 {
			t.Fatalf("wait = %v after %d checks, want nil after 3", err, calls)
		}
	})
	t.Run("close", func(t *testing.T) {
		checked := make(chan struct{}, 1)
		g := newDSRGate(func() (bool, error) {
			select {
			case checked <- struct{}{}:
			default:
			}
			return false, nil
		})
		done := make(chan error, 1)
		go func() { done <- g.wait() }()
		<-checked
		g.close()
		if err := <-done; !errors.Is(err, os.ErrClosed) {
			t.Fatalf("wait = %v, want os.ErrClosed", err)
		}
	})
	t.Run("error", func(t *testing.T) {
		g := newDSRGate(func() (bool, error) { return false, unix.EIO })
		if err := g.wait(); !errors.Is(err, unix.EIO) {
			t.Fatalf("wait = %v, want EIO", err)
		}
	})
}

// TestSerialExclusive ensures a second opener of the same port gets a
// retryable "busy" error instead of interleaving its bytes with ours.
func TestSerialExclusive(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root bypasses TIOCEXCL")
	}
	_, slave := openPTY(t)
	c, err := Open(context.Background(), "serial://"+slave, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = Open(context.Background(), "serial://"+slave, Options{})
	var pe *Error
	if !errors.As(err, &pe) || !pe.Retryable() || !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("second open: %v, want retryable EBUSY", err)
	}
}
