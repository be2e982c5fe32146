package escpos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
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
	// other software can print between bursts (docs/ESCPOS.md §4). Default 30 s;
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
	// ReprobeAfter is how long the device may go without printing a job
	// before the next operation (a status poll too) probes the printer's
	// capabilities again, so a printer swapped, reconfigured or power-cycled
	// while quiet is seen as it is now. Default 10 minutes; negative never.
	// The device also probes again on the operation after a downgrade, and
	// on reconnects (see ReprobeOnReconnect).
	ReprobeAfter time.Duration
	// ReprobeOnReconnect is how old the last probe must be for the first
	// connection after one was lost (link error, no answer, closed by the
	// printer) to probe again, because the printer may have been swapped or
	// reset. The bound keeps a link that keeps dropping from paying a probe
	// per reconnect: up to a second of silent waits on a printer that lacks
	// GS ( H. Default 1 minute; negative never. The device's own idle close
	// does not count as lost, so a quiet printer is not probed before every
	// job.
	ReprobeOnReconnect time.Duration
	// Expected is the confirmation the printer's profile promises
	// (Profile.Ack.Confirmation()). A probe that finds less is a downgrade,
	// even the first one. ConfirmNone expects nothing: probes are then only
	// compared with earlier probes.
	Expected Confirmation
	// OnDowngrade, if set, is told when the completion gate weakens: a
	// probe finds the printer gives a weaker confirmation than its best
	// earlier probe (or Expected), or a job is confirmed weaker than that.
	// from is the level lost, to the level now obtained, why a sentence
	// saying what went unanswered and what made the device probe. It is
	// called once per downgrade, before the operation that found it
	// returns, after the device is released (it may call Status or
	// Capabilities). The agent logs it at WARN and counts it in
	// metrics.IncConfirmationDowngrade.
	OnDowngrade func(from, to Confirmation, why string)
}

func (o DeviceOptions) idleTimeout() time.Duration {
	if o.IdleTimeout < 0 {
		return o.IdleTimeout // keep the connection until Close
	}
	return orDefault(o.IdleTimeout, 30*time.Second)
}

// DefaultReprobeAfter is the ReprobeAfter used when none is set.
const DefaultReprobeAfter = 10 * time.Minute

func (o DeviceOptions) reprobeAfter() time.Duration {
	return orDefault(o.ReprobeAfter, DefaultReprobeAfter)
}

// DefaultReprobeOnReconnect is the ReprobeOnReconnect used when none is
// set.
const DefaultReprobeOnReconnect = time.Minute

func (o DeviceOptions) reprobeOnReconnect() time.Duration {
	if o.ReprobeOnReconnect < 0 {
		return o.ReprobeOnReconnect
	}
	return orDefault(o.ReprobeOnReconnect, DefaultReprobeOnReconnect)
}

// Device is one printer as the agent uses it: it keeps one connection while
// work flows, closes it after IdleTimeout without work, dials again on
// demand, remembers the probed capabilities across idle reconnects (and
// probes again when they may have changed: see ReprobeAfter), reports a
// weakened completion gate through OnDowngrade, and runs Status and Print
// one at a time so a status poll never lands inside a job.
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
	// best is the strongest confirmation the printer is believed to give:
	// Expected, raised by every complete probe that finds more, lowered only
	// when two probes in a row find less. bestCaps is the probe that found
	// it (zero when it is Expected).
	best     Confirmation
	bestCaps Capabilities
	// weak is the level of a reported downgrade whose re-probe is still
	// to come (ConfirmNone: none).
	weak Confirmation
	// probedAt is when the last complete probe finished.
	probedAt time.Time
	// reprobe says why the next operation must probe again ("" if it need
	// not); trigger says why the probe in progress was made, for the
	// downgrade report.
	reprobe, trigger string
	// lost is set when a connection was lost, until the next one is made.
	lost bool
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
	return &Device{dial: dial, opts: opts, sem: make(chan struct{}, 1), best: opts.Expected}
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
	_, err := d.do(ctx, "status", func(s *Session) (Confirmation, error) {
		var err error
		st, err = s.Status(ctx)
		return ConfirmNone, err
	})
	return st, err
}

// Print sends job and waits for the strongest completion proof the printer
// gives; see Session.Print. id names the job in the GS ( H barrier (the
// task's seq), so an answer that arrives late is never taken for another
// job's. The confirmation returned is the one this job obtained; when it is
// weaker than the printer gave before, OnDowngrade is told first.
func (d *Device) Print(ctx context.Context, job []byte, id uint64) (Confirmation, error) {
	return d.do(ctx, "print", func(s *Session) (Confirmation, error) {
		return s.Print(ctx, job, id)
	})
}

// Probe connects if needed and probes the printer again, replacing what was
// remembered (after a printer was swapped, say).
func (d *Device) Probe(ctx context.Context) (Capabilities, error) {
	d.mu.Lock()
	d.known = false
	d.trigger = "probe requested"
	d.mu.Unlock()
	var c Capabilities
	_, err := d.do(ctx, "probe", func(s *Session) (Confirmation, error) {
		var err error
		c, err = s.Probe(ctx)
		return ConfirmNone, err
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

// do runs op on a connected session, holding the device, then reports a
// downgrade it found. A connection that was reused and turns out dead
// before any job byte left (the printer dropped it while idle) is replaced
// once, transparently.
func (d *Device) do(ctx context.Context, op string, fn func(*Session) (Confirmation, error)) (Confirmation, error) {
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return ConfirmNone, &PrintError{Op: op, Err: ctx.Err()}
	}
	c, down, err := d.run(ctx, op, fn)
	<-d.sem
	if down != nil && d.opts.OnDowngrade != nil {
		d.opts.OnDowngrade(down.from, down.to, down.why)
	}
	return c, err
}

// run is do's work, while holding the device.
func (d *Device) run(ctx context.Context, op string, fn func(*Session) (Confirmation, error)) (Confirmation, *downgrade, error) {
	var down *downgrade
	for attempt := 0; ; attempt++ {
		s, reused, err := d.session(ctx, op)
		if err != nil {
			return ConfirmNone, down, err
		}
		_, _, probes := s.probeState()
		c, err := fn(s)
		if dg := d.finish(s, op, c, err, probes); dg != nil {
			down = dg
		}
		var pe *PrintError
		if err != nil && reused && attempt == 0 && errors.As(err, &pe) && errors.Is(pe.Err, ErrLink) && !pe.Sent {
			continue
		}
		return c, down, err
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
		if why := d.reprobeLocked(d.now(), false); why != "" {
			d.trigger = why
			s.forgetCapabilities()
		}
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
	why := d.reprobeLocked(d.now(), d.lost)
	d.lost = false
	switch {
	case d.known && why == "":
		s.SetCapabilities(d.caps)
	case why != "":
		d.trigger = why
	case d.trigger == "":
		d.trigger = "first probe"
	}
	if !d.noResync {
		s.setResync(d.resync)
	}
	d.conn, d.sess = conn, s
	return s, false, nil
}

// reprobeLocked says why the next operation must probe the printer again,
// or "" when what is known still stands. reconnect says the operation runs
// on the first connection after one was lost.
func (d *Device) reprobeLocked(now time.Time, reconnect bool) string {
	if d.reprobe != "" {
		return d.reprobe
	}
	if !d.known {
		return ""
	}
	if age := d.opts.reprobeOnReconnect(); reconnect && age >= 0 && now.Sub(d.probedAt) >= age {
		return "re-probe after the connection was lost"
	}
	after := d.opts.reprobeAfter()
	if after < 0 {
		return ""
	}
	last := d.lastPrint
	if d.probedAt.After(last) {
		last = d.probedAt
	}
	if now.Sub(last) >= after {
		return fmt.Sprintf("re-probe after %v without a print", after)
	}
	return ""
}

// downgrade is a weakening of the completion gate, for OnDowngrade.
type downgrade struct {
	from, to Confirmation
	why      string
}

// reprobeDowngrade is why the operation after a downgrade probes again.
const reprobeDowngrade = "re-probe after a downgrade"

// probedLocked records a complete probe that found caps, and returns the
// downgrade it shows, if any. A probe weaker than the best known level is
// reported and makes the next operation probe again (one slow answer must
// not weaken every later job); if that probe finds the same, it is the
// printer's level now (another model, a setting changed) and is accepted
// without a second report, so a weaker printer is not probed and reported
// on every job. A later probe that finds more raises the level again.
func (d *Device) probedLocked(caps Capabilities, now time.Time) *downgrade {
	trigger := d.trigger
	d.trigger, d.reprobe, d.probedAt = "", "", now
	lvl := caps.Confirmation()
	if lvl >= d.best {
		d.best, d.bestCaps, d.weak = lvl, caps, ConfirmNone
		return nil
	}
	if d.weak != ConfirmNone {
		// The re-probe after a downgrade: accept its level.
		var dg *downgrade
		if lvl < d.weak {
			dg = &downgrade{from: d.weak, to: lvl, why: downgradeWhy(trigger, d.weak, d.bestCaps, caps)}
		}
		d.best, d.bestCaps, d.weak = lvl, caps, ConfirmNone
		return dg
	}
	dg := &downgrade{from: d.best, to: lvl, why: downgradeWhy(trigger, d.best, d.bestCaps, caps)}
	d.weak, d.reprobe = lvl, reprobeDowngrade
	return dg
}

// downgradeWhy says what a probe made for trigger did not get that level
// from needs, e.g. "re-probe after the connection was lost: no answer to
// GS ( H (process id) within the probe timeout".
func downgradeWhy(trigger string, from Confirmation, had, got Capabilities) string {
	var missing []string
	if from >= ConfirmPrinted && !got.ProcessID {
		missing = append(missing, "GS ( H (process id)")
	}
	if from >= ConfirmConsumed && !got.TransmitStatus {
		missing = append(missing, "GS r (transmit status)")
	}
	if from >= ConfirmConsumed && !got.RealTime {
		missing = append(missing, "DLE EOT (real-time status)")
	}
	why := "no answer to " + strings.Join(missing, " or ") + " within the probe timeout"
	if had == (Capabilities{}) {
		why += fmt.Sprintf(" (the printer's profile promises %v)", from)
	}
	if trigger == "" {
		trigger = "probe"
	}
	return trigger + ": " + why
}

// finish records what the operation learned, returns the downgrade it
// found, if any, and arms the idle close. Any operation but a job that
// printed, on a printer that has not printed within the idle timeout,
// closes its connection at once: a monitored but idle printer must not be
// held open, or other software (a second agent, the vendor's tool) could
// never print on a network interface that prints from one connection.
// probesBefore is the session's probe count before the operation, to tell
// a probe made by it.
func (d *Device) finish(s *Session, op string, conf Confirmation, opErr error, probesBefore int) *downgrade {
	caps, probed, probes := s.probeState()
	printed := op == "print" && opErr == nil
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if probed {
		d.caps, d.known = caps, true
	}
	var dg *downgrade
	if probes != probesBefore && caps.InOrderProbed {
		dg = d.probedLocked(caps, now)
	}
	if printed && conf < d.best && d.weak == ConfirmNone {
		// A job weaker than the printer gave before, with no probe to
		// blame (none should reach here, but the gate must never weaken
		// silently).
		dg = &downgrade{from: d.best, to: conf, why: fmt.Sprintf("job confirmed %v, weaker than the %v this printer gave before", conf, d.best)}
		d.weak, d.reprobe = conf, reprobeDowngrade
	}
	d.finishLocked(s, printed, now)
	return dg
}

// finishLocked arms or applies the idle close after an operation.
func (d *Device) finishLocked(s *Session, printed bool, now time.Time) {
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
	if s.Broken() || s.linkLost() {
		// The printer may have been power-cycled or swapped.
		d.lost = true
	}
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
