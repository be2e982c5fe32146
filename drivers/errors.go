package drivers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// ErrOneWay is returned by Read on a printer interface that cannot send
// anything back (a one-way usblp interface, a Windows spooler queue). It is
// not a fault: the lane falls back to confirmation "delivered".
var ErrOneWay = errors.New("the printer interface is one-way: it cannot send status back")

// ErrUnsupported is returned by Open for a transport this operating system
// does not have (usb device paths on Windows, winspool on Linux).
var ErrUnsupported = errors.New("transport not supported on this operating system")

// Error is every error a transport returns except io.EOF. It names the
// printer and the operation, carries a Hint written for the person at the
// store, and tells the caller through Retryable whether opening or writing
// again can help. errors.Is and errors.As see through it to the underlying
// errno or net error.
type Error struct {
	Op     string // "open", "dial", "read", "write", "status", "flush", "close"
	Target string // the printer URL as configured
	Err    error
	// Hint is a plain sentence naming the cause and what to check; empty when
	// the cause is not recognised, in which case Err speaks for itself.
	Hint  string
	retry bool
}

// Error reads "OP URL: HINT", or the underlying error when there is no hint.
func (e *Error) Error() string {
	msg := e.Hint
	if msg == "" {
		msg = e.Err.Error()
	}
	return e.Op + " " + e.Target + ": " + msg
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether trying again later, on this connection or a new
// one, can succeed without a person changing something: true for a printer
// that is off, busy, unplugged or slow; false for a bad URL, missing
// permissions or a one-way interface.
func (e *Error) Retryable() bool { return e.retry }

// Timeout reports whether the error is a deadline or connect timeout, like
// net.Error.
func (e *Error) Timeout() bool { return isTimeout(e.Err) }

// errKind is what an errno means for a printer.
type errKind int

const (
	kindUnknown errKind = iota
	kindRefused
	kindUnreachable
	kindReset
	kindTimeout
	kindPermission
	kindBusy
	kindNoDevice
	kindPaperOut
	kindIO
	kindNoQueue
)

func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// wrapErr turns err from op on the printer at target into an *Error with a
// hint and a retry verdict. addr is the host:port or device path for the
// hint. nil and io.EOF pass through unchanged; an *Error is returned as is.
func wrapErr(op, target, addr string, err error) error {
	if err == nil {
		return nil
	}
	var pe *Error
	if errors.As(err, &pe) {
		return err
	}
	e := &Error{Op: op, Target: target, Err: err, retry: true}
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, ErrOneWay):
		e.Hint, e.retry = ErrOneWay.Error(), false
	case errors.Is(err, ErrUnsupported):
		e.retry = false
	case errors.Is(err, context.Canceled):
		e.Hint, e.retry = "canceled", false
	case errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed):
		e.Hint, e.retry = "the connection is already closed", false
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			e.Hint, e.retry = fmt.Sprintf("no such host %q: check the spelling or use the printer's IP address", dnsErr.Name), false
		} else {
			e.Hint = fmt.Sprintf("cannot resolve %q: %v; is the network up?", dnsErr.Name, dnsErr.Err)
		}
	case isTimeout(err):
		switch op {
		case "dial", "open":
			e.Hint = fmt.Sprintf("no answer from %s in time: is the printer on and on this network?", addr)
		case "write":
			e.Hint = fmt.Sprintf("%s did not take the data before the deadline: is it offline, out of paper or holding flow control?", addr)
		default:
			e.Hint = fmt.Sprintf("no answer from %s before the deadline", addr)
		}
	default:
		var errno syscall.Errno
		if errors.As(err, &errno) {
			e.Hint, e.retry = hintFor(errnoKind(errno), op, addr, errno)
		}
	}
	return e
}

func hintFor(k errKind, op, addr string, errno syscall.Errno) (string, bool) {
	switch k {
	case kindRefused:
		return fmt.Sprintf("connection refused by %s: is the printer on and the address right?", addr), true
	case kindUnreachable:
		return fmt.Sprintf("no route to host %s: is the printer on, and on the same network as this PC?", addr), true
	case kindReset:
		return fmt.Sprintf("%s closed the connection (%v): it may have restarted or another program took it over", addr, errno), true
	case kindTimeout:
		return fmt.Sprintf("no answer from %s in time: is the printer on and on this network?", addr), true
	case kindPermission:
		return fmt.Sprintf("permission denied opening %s: %s", addr, permissionAdvice), false
	case kindBusy:
		return fmt.Sprintf("%s is busy: another program has the printer open (close it, or stop the other print service)", addr), true
	case kindNoDevice:
		return fmt.Sprintf("no such device %s: is the printer plugged in and switched on?", addr), true
	case kindPaperOut:
		return fmt.Sprintf("%s stopped taking data: out of paper?", addr), true
	case kindIO:
		return fmt.Sprintf("i/o error on %s (%v): check the cable and the printer's error light", addr, errno), true
	case kindNoQueue:
		return fmt.Sprintf("no printer queue named %q: check the name in Printers & scanners (a service running as LocalSystem sees only printers installed for all users)", addr), false
	}
	return "", true
}

// errClosedConn is the error for use after Close on transports that are not
// built on net.Conn or *os.File.
var errClosedConn = fmt.Errorf("use of closed printer connection: %w", net.ErrClosed)
