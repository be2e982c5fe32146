package escpos

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// Conn is a Port the Device can close: what a transport's dial returns
// (drivers.Conn, net.Conn and *os.File satisfy it).
type Conn interface {
	Port
	io.Closer
}

// DialFunc opens a new connection to one printer.
type DialFunc func(ctx context.Context) (Conn, error)

// DeviceOptions tune a Device. Zero values take the defaults named.
type DeviceOptions struct {
	// Session tunes the sessions the device opens.
	Session SessionOptions
	// IdleTimeout is how long the connection stays open with no work, so
	// other software can print between bursts (ESCPOS.md §4). Default 30 s;
	// negative keeps it open until Close.
	IdleTimeout time.Duration
	// DialTimeout bounds each connect. Default 5 s.
	DialTimeout time.Duration
	// Now and AfterFunc replace the clock in tests. AfterFunc schedules the
	// idle check and returns a function that cancels it; nil means
	// time.AfterFunc. Callers that drive idling themselves through
	// CloseIfIdle can pass a no-op.
	Now       func() time.Time
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
}

func (o DeviceOptions) idleTimeout() time.Duration { return orDefault(o.IdleTimeout, 30*time.Second) }

// Device is one printer as the agent uses it: it keeps one connection while
// work flows, closes it after IdleTimeout without work, dials again on
// demand, remembers the probed capabilities across reconnects, and runs
// Status and Print one at a time so a status poll never lands inside a job.
//
// It also remembers when a connection died with bytes written that the
// printer may not all have received: a command cut off there (raster data,
// a QR code, a barcode, the GS ( H barrier) would take its missing
// arguments from the start of the next connection's job. The next
// connection therefore sends DanglingBound NULs and ESC @ before anything
// else, even the DLE EOT health check, whose bytes the printer also parses
// in order (see ResyncPending).
type Device struct {
	dial DialFunc
	opts DeviceOptions
	sem  chan struct{} // held by the running operation

	mu      sync.Mutex
	conn    Conn
	sess    *Session
	caps    Capabilities
	known   bool
	lastUse time.Time
	// lastPrint is when the last job printed: only printing counts as work
	// flowing, so status polls of an idle (or failing) printer do not hold
	// its connection.
	lastPrint time.Time
	stopIdle  func() bool
	closed    bool
	// resync is the preamble bound the next new session owes the printer
	// (0: its parser is known to be at a command boundary). While a session
	// is open, the session keeps the current value.
	resync resyncDebt
	// noResync turns the preamble off, for the test that shows what it
	// prevents.
	noResync bool
}

// NewDevice returns a Device that connects through dial when first used.
func NewDevice(dial DialFunc, opts DeviceOptions) *Device {
	return &Device{dial: dial, opts: opts, sem: make(chan struct{}, 1)}
}

func (d *Device) now() time.Time {
	if d.opts.Now != nil {
		return d.opts.Now()
	}
	return time.Now()
}

// Status asks the printer for its real-time status, connecting first if
// needed. A failed connect is ErrOffline with the dial error as Cause.
func (d *Device) Status(ctx context.Context) (Status, error) {
	var st Status
	err := d.do(ctx, "status", func(s *Session) error {
		var err error
		st, err = s.Status(ctx)
		return err
	})
	return st, err
}

// Print sends job and waits for the strongest completion proof the printer
// gives; see Session.Print. id names the job in the GS ( H barrier (the
// task's seq), so an answer that arrives late is never taken for another
// job's.
func (d *Device) Print(ctx context.Context, job []byte, id uint64) (Confirmation, error) {
	var c Confirmation
	err := d.do(ctx, "print", func(s *Session) error {
		var err error
		c, err = s.Print(ctx, job, id)
		return err
	})
	return c, err
}

// Probe connects if needed and probes the printer again, replacing what was
// remembered (after a printer was swapped, say).
func (d *Device) Probe(ctx context.Context) (Capabilities, error) {
	d.mu.Lock()
	d.known = false
	d.mu.Unlock()
	var c Capabilities
	err := d.do(ctx, "probe", func(s *Session) error {
		var err error
		c, err = s.Probe(ctx)
		return err
	})
	return c, err
}

// Capabilities returns what was probed, and whether a probe has completed.
func (d *Device) Capabilities() (Capabilities, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.caps, d.known
}

// Connected reports whether a connection is open.
func (d *Device) Connected() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sess != nil
}

// ResyncPending returns how many NULs the device will send, followed by
// ESC @, before the next byte to the printer, because a connection
// died with a command possibly cut off in the printer's parser; 0 when none
// is owed.
func (d *Device) ResyncPending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sess != nil {
		return d.sess.owedResync(d.sess.Broken()).bound
	}
	return d.resync.bound
}

// Busy reports whether an operation (a job or a status poll) is running, so
// a status monitor can skip a poll instead of queueing behind a job.
func (d *Device) Busy() bool { return len(d.sem) > 0 }

// do runs op on a connected session, holding the device. A connection that
// was reused and turns out dead before any job byte left (the printer
// dropped it while idle) is replaced once, transparently.
func (d *Device) do(ctx context.Context, op string, fn func(*Session) error) error {
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return &PrintError{Op: op, Err: ctx.Err()}
	}
	defer func() { <-d.sem }()
	for attempt := 0; ; attempt++ {
		s, reused, err := d.session(ctx, op)
		if err != nil {
			return err
		}
		err = fn(s)
		d.finish(s, op == "print" && err == nil)
		var pe *PrintError
		if err != nil && reused && attempt == 0 && errors.As(err, &pe) && errors.Is(pe.Err, ErrLink) && !pe.Sent {
			continue
		}
		return err
	}
}

// session returns the open session or dials a new one.
func (d *Device) session(ctx context.Context, op string) (*Session, bool, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, false, &PrintError{Op: op, Err: ErrClosed}
	}
	if d.sess != nil && !d.sess.Broken() {
		s := d.sess
		d.mu.Unlock()
		return s, true, nil
	}
	d.dropLocked()
	d.mu.Unlock()

	dctx, cancel := context.WithTimeout(ctx, orDefault(d.opts.DialTimeout, 5*time.Second))
	conn, err := d.dial(dctx)
	cancel()
	if err != nil {
		return nil, false, &PrintError{Op: op, Err: ErrOffline, Cause: err}
	}
	s := NewSession(conn, d.opts.Session)

	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		_ = s.Close()
		_ = conn.Close()
		return nil, false, &PrintError{Op: op, Err: ErrClosed}
	}
	if d.known {
		s.SetCapabilities(d.caps)
	}
	if !d.noResync {
		s.setResync(d.resync)
	}
	d.conn, d.sess = conn, s
	return s, false, nil
}

// finish records what the operation learned and arms the idle close. Any
// operation but a job that printed, on a printer that has not printed within
// the idle timeout, closes its connection at once: a monitored but idle printer must
// not be held open, or other software (a second agent, the vendor's tool)
// could never print on a network interface that prints from one connection.
func (d *Device) finish(s *Session, printed bool) {
	caps, probed := s.Capabilities()
	d.mu.Lock()
	defer d.mu.Unlock()
	if probed {
		d.caps, d.known = caps, true
	}
	now := d.now()
	d.lastUse = now
	if printed {
		d.lastPrint = now
	}
	if d.sess != s {
		return
	}
	if s.Broken() {
		d.dropLocked()
		return
	}
	if idle := d.opts.idleTimeout(); !printed && idle >= 0 && (d.lastPrint.IsZero() || now.Sub(d.lastPrint) >= idle) {
		d.dropLocked()
		return
	}
	idle := d.opts.idleTimeout()
	if idle < 0 {
		return
	}
	if d.stopIdle != nil {
		d.stopIdle()
	}
	after := d.opts.AfterFunc
	if after == nil {
		after = func(t time.Duration, f func()) func() bool { return time.AfterFunc(t, f).Stop }
	}
	d.stopIdle = after(idle, func() { d.CloseIfIdle(d.now()) })
}

// CloseIfIdle closes the connection when no operation is running and the
// last one ended IdleTimeout or more before now. It reports whether it
// closed one. The agent's status monitor may call it on its own tick; the
// device also schedules it after every operation.
func (d *Device) CloseIfIdle(now time.Time) bool {
	select {
	case d.sem <- struct{}{}:
	default:
		return false
	}
	defer func() { <-d.sem }()
	d.mu.Lock()
	defer d.mu.Unlock()
	idle := d.opts.idleTimeout()
	if d.sess == nil || idle < 0 || now.Sub(d.lastPrint) < idle {
		return false
	}
	d.dropLocked()
	return true
}

// Close closes the connection and makes every later operation fail with
// ErrClosed. A running operation is cut off: if its job bytes had left, it
// reports ErrOutcomeUnknown.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return d.dropLocked()
}

// dropLocked closes the session and its connection and waits (briefly) for
// the session's reader to stop, so no goroutine outlives the connection.
func (d *Device) dropLocked() error {
	if d.stopIdle != nil {
		d.stopIdle()
		d.stopIdle = nil
	}
	if d.sess == nil {
		return nil
	}
	s, c := d.sess, d.conn
	d.sess, d.conn = nil, nil
	// Read before Close, which marks the session broken: a session closed
	// while healthy delivered what it wrote, and owes only an unsent
	// preamble.
	d.resync = s.owedResync(s.Broken())
	_ = s.Close()
	err := c.Close()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-s.Done():
	case <-t.C:
	}
	return err
}
