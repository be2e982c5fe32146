package drivers

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Conn is an open connection to one printer: job bytes go in through Write,
// status answers come out of Read, and deadlines bound both so a dead printer
// can never hang a lane. net.Conn and a pollable *os.File satisfy it. Read
// returns an error wrapping ErrOneWay on interfaces that cannot answer.
type Conn interface {
	io.ReadWriteCloser
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// Flusher is implemented by transports that collect writes into spooler jobs
// (winspool). Flush hands the bytes written so far to the spooler as one
// document; Close flushes too. Lanes call it after each ticket so one ticket
// is one job in the Windows queue.
type Flusher interface {
	Flush() error
}

// OneWayer is implemented by transports that learn only by trying whether
// the printer can answer (usblp). OneWay reports true once a read showed the
// interface to be one-way; until then it reports false.
type OneWayer interface {
	OneWay() bool
}

// Options tune Open. The zero value is ready to use.
type Options struct {
	// ConnectTimeout bounds dialing a network printer or opening a device;
	// zero means 3 s. The context passed to Open can cut it shorter.
	ConnectTimeout time.Duration
	// KeepAlive is the TCP keep-alive period, so a printer switched off
	// mid-connection is noticed even when no job is flowing; zero means 15 s,
	// negative disables.
	KeepAlive time.Duration
	// DrainTimeout is how long Close on a TCP connection reads answers nobody
	// asked for before closing; zero means 100 ms. See tcpConn.Close.
	DrainTimeout time.Duration
	// SysfsRoot is where Linux sysfs is mounted, for resolving usb://VID:PID;
	// empty means /sys. Tests point it at a fake tree.
	SysfsRoot string
	// DocName is the document name of Windows spooler jobs; empty means
	// "printgate".
	DocName string
}

func (o Options) connectTimeout() time.Duration {
	if o.ConnectTimeout > 0 {
		return o.ConnectTimeout
	}
	return 3 * time.Second
}

func (o Options) keepAlive() time.Duration {
	if o.KeepAlive == 0 {
		return 15 * time.Second
	}
	return o.KeepAlive
}

func (o Options) drainTimeout() time.Duration {
	if o.DrainTimeout > 0 {
		return o.DrainTimeout
	}
	return 100 * time.Millisecond
}

func (o Options) docName() string {
	if o.DocName != "" {
		return o.DocName
	}
	return "printgate"
}

// Open connects to the printer named by rawURL (see ParseURL), choosing the
// transport by scheme. Errors are *Error, except for a bad URL, which is the
// ParseURL error wrapped in a non-retryable *Error.
func Open(ctx context.Context, rawURL string, opts Options) (Conn, error) {
	t, err := ParseURL(rawURL)
	if err != nil {
		return nil, &Error{Op: "open", Target: rawURL, Err: err}
	}
	return OpenTarget(ctx, t, opts)
}

// OpenTarget is Open for an already parsed URL, so the agent parses once at
// start and reconnects many times.
func OpenTarget(ctx context.Context, t Target, opts Options) (Conn, error) {
	switch t.Scheme {
	case SchemeTCP:
		return openTCP(ctx, t, opts)
	case SchemeSerial:
		return openSerial(ctx, t, opts)
	case SchemeUSB:
		return openUSB(ctx, t, opts)
	case SchemeWinspool:
		return openWinspool(ctx, t, opts)
	}
	return nil, &Error{Op: "open", Target: t.label(), Err: fmt.Errorf("unknown scheme %q", t.Scheme)}
}
