package escpos

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Port is the two-way byte stream a Session talks over: a TCP connection, a
// serial line, a USB device file. net.Conn and a pollable *os.File satisfy
// it. Read deadlines are used only to wake the reader when the session
// closes; every wait is bounded by the session's own timers.
type Port interface {
	io.ReadWriter
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// Confirmation says how strong the proof was that a job reached paper
// (docs/ESCPOS.md §2). The zero value means no confirmation. Higher is stronger.
type Confirmation int

// Confirmation levels, weakest first.
const (
	ConfirmNone Confirmation = iota
	// ConfirmDelivered: every byte was accepted by the transport and, where
	// the printer can tell, it looked healthy before and after.
	ConfirmDelivered
	// ConfirmConsumed: an in-order GS r answered after the job, so the
	// printer processed everything up to the end of the job while online.
	ConfirmConsumed
	// ConfirmPrinted: the Epson GS ( H process-id answer, sent only after
	// the paper came out.
	ConfirmPrinted
)

// String gives the word used in events and on the page: "printed",
// "consumed", "delivered", or "" for ConfirmNone.
func (c Confirmation) String() string {
	switch c {
	case ConfirmDelivered:
		return "delivered"
	case ConfirmConsumed:
		return "consumed"
	case ConfirmPrinted:
		return "printed"
	}
	return ""
}

// Capabilities is what a probe found a printer answers. Device remembers
// it per printer across idle reconnects, and probes again when it may have
// changed (see DeviceOptions.ReprobeAfter).
type Capabilities struct {
	RealTime       bool // answers DLE EOT n
	TransmitStatus bool // answers GS r 1
	ProcessID      bool // answers GS ( H fn48
	// InOrderProbed is false when the printer was not ready during the
	// probe: in-order commands are not answered while it is stopped, so
	// their support is still unknown and the next probe asks again.
	InOrderProbed bool
	// Printer identity from GS I 66/67/65; empty when not answered.
	Maker, Model, Firmware string
}

// Confirmation is the strongest proof a job on this printer can get.
func (c Capabilities) Confirmation() Confirmation {
	switch {
	case c.ProcessID:
		return ConfirmPrinted
	case c.TransmitStatus && c.RealTime:
		return ConfirmConsumed
	}
	return ConfirmDelivered
}

// SessionOptions tune a Session. Zero values take the defaults named.
type SessionOptions struct {
	// ProbeTimeout bounds each capability probe, where silence is a normal
	// answer (the printer lacks the command). Default 500 ms.
	ProbeTimeout time.Duration
	// AnswerTimeout bounds each status query of a printer known to answer.
	// Default 2 s.
	AnswerTimeout time.Duration
	// BarrierTimeout bounds the wait for the completion barrier after the
	// job, which includes the time to print it. Default 30 s.
	BarrierTimeout time.Duration
	// WriteTimeout is how long a write may make no progress before the
	// printer counts as stalled. Default 10 s.
	WriteTimeout time.Duration
	// XonXoff drops XON/XOFF bytes from what the printer sends, for serial
	// lines with software flow control.
	XonXoff bool
	// ExpectAnswers says the printer is known (from its profile) to answer
	// real-time status. Silence to the first DLE EOT is then a fault
	// (ErrNoAnswer: stalled, jammed, wrong port) instead of the mark of a
	// one-way printer; otherwise a stalled printer would be probed as
	// one-way and its jobs called "delivered" while nothing printed.
	ExpectAnswers bool
}

func (o SessionOptions) probeTimeout() time.Duration {
	return orDefault(o.ProbeTimeout, 500*time.Millisecond)
}
func (o SessionOptions) answerTimeout() time.Duration {
	return orDefault(o.AnswerTimeout, 2*time.Second)
}
func (o SessionOptions) barrierTimeout() time.Duration {
	return orDefault(o.BarrierTimeout, 30*time.Second)
}
func (o SessionOptions) writeTimeout() time.Duration {
	return orDefault(o.WriteTimeout, 10*time.Second)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Query bytes, kept local so this file does not depend on the encoder.
var (
	queryTransmitPaper = []byte{0x1D, 0x72, 0x01}
	// probeBarrierID is the GS ( H id used while probing; job ids are matched
	// exactly, so a late probe answer is ignored like any stale one.
	probeBarrierID = [4]byte{'~', '~', '~', '~'}
)

func queryStatus(n int) []byte     { return []byte{0x10, 0x04, byte(n)} }
func queryPrinterID(n byte) []byte { return []byte{0x1D, 0x49, n} }
func queryBarrier(id [4]byte) []byte {
	return []byte{0x1D, 0x28, 0x48, 0x06, 0x00, 0x30, 0x30, id[0], id[1], id[2], id[3]}
}

// Session drives one open connection to one printer: probing, status, and
// printing with the completion gate of docs/ESCPOS.md §2. Operations run one at a
// time (one query in flight); a failed session is Broken and should be
// replaced by a new connection, because a late answer on it could be taken
// for the answer to a later question. Device does that.
type Session struct {
	port Port
	opts SessionOptions

	op     sync.Mutex // held by every operation: one query in flight
	caps   Capabilities
	probed bool
	probes int // probes run on this session, so Device can tell a fresh one
	broken atomic.Bool

	mu      sync.Mutex
	resync  resyncDebt // preamble owed before the next byte written (see resync.go)
	settle  resyncDebt // what was written and not yet proven received would leave owed
	events  []event
	readErr error // set when the reader stopped
	oneWay  bool  // the reader stopped because the port cannot answer
	closed  bool
	notify  chan struct{} // signalled on new events
	dead    chan struct{} // closed when the reader stops
}

// NewSession starts reading answers from p in the background. The caller
// keeps ownership of p: Close stops the reader, closing p is the caller's.
func NewSession(p Port, opts SessionOptions) *Session {
	s := &Session{port: p, opts: opts, notify: make(chan struct{}, 1), dead: make(chan struct{})}
	go s.readLoop()
	return s
}

// oneWayer is implemented by transports that learn from a failed read that
// the interface cannot answer (drivers.OneWayer).
type oneWayer interface{ OneWay() bool }

// flusher is implemented by transports that batch writes (drivers.Flusher).
type flusher interface{ Flush() error }

func (s *Session) readLoop() {
	defer close(s.dead)
	c := classifier{xonxoff: s.opts.XonXoff}
	buf := make([]byte, 512)
	var evs []event
	for {
		n, err := s.port.Read(buf)
		if n > 0 {
			evs = c.feed(buf[:n], evs[:0])
			if len(evs) > 0 {
				s.mu.Lock()
				s.events = append(s.events, evs...)
				s.mu.Unlock()
				select {
				case s.notify <- struct{}{}:
				default:
				}
			}
		}
		if err == nil {
			continue
		}
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if errors.Is(err, os.ErrDeadlineExceeded) && !closed {
			// Someone else's deadline: keep listening.
			_ = s.port.SetReadDeadline(time.Time{})
			continue
		}
		s.mu.Lock()
		s.readErr = err
		if ow, ok := s.port.(oneWayer); ok && ow.OneWay() {
			s.oneWay = true
		}
		s.mu.Unlock()
		return
	}
}

// Close stops the background reader. It does not close the port; the reader
// ends once the port's read returns (the deadline set here, or the owner
// closing the port).
func (s *Session) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.broken.Store(true)
	_ = s.port.SetReadDeadline(time.Unix(1, 0))
	return nil
}

// Done is closed when the background reader has stopped.
func (s *Session) Done() <-chan struct{} { return s.dead }

// Broken reports whether the session failed in a way that makes its
// connection untrustworthy (no answer, link error, outcome unknown): a late
// answer could still arrive on it, so the owner should reconnect.
func (s *Session) Broken() bool { return s.broken.Load() }

// Capabilities returns what the session knows the printer supports and
// whether it was probed (or told, through SetCapabilities).
func (s *Session) Capabilities() (Capabilities, bool) {
	s.op.Lock()
	defer s.op.Unlock()
	return s.caps, s.probed
}

// SetCapabilities tells the session what an earlier probe of the same
// printer found, so a new connection need not probe again.
func (s *Session) SetCapabilities(c Capabilities) {
	s.op.Lock()
	defer s.op.Unlock()
	s.caps, s.probed = c, true
}

// probeState is Capabilities plus how many probes the session has run.
func (s *Session) probeState() (Capabilities, bool, int) {
	s.op.Lock()
	defer s.op.Unlock()
	return s.caps, s.probed, s.probes
}

// forgetCapabilities makes the next operation probe the printer again,
// keeping the connection.
func (s *Session) forgetCapabilities() {
	s.op.Lock()
	defer s.op.Unlock()
	s.probed = false
}

// linkLost reports whether the reader stopped on a link error (the printer
// closed or reset the connection), as opposed to a port that cannot answer.
func (s *Session) linkLost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readErr != nil && !s.oneWay && !s.closed
}

// errTimeout and errDead are the internal outcomes of a wait.
var errTimeout = errors.New("timed out waiting for an answer")

// linkError is the reader's error, or a write error.
type linkError struct{ err error }

func (e *linkError) Error() string { return "link: " + e.err.Error() }
func (e *linkError) Unwrap() error { return e.err }

// drain discards every answer received so far, so that the next wait sees
// only answers to the next question.
func (s *Session) drain() {
	s.mu.Lock()
	s.events = s.events[:0]
	s.mu.Unlock()
}

// wait consumes answers until match accepts one, discarding the others
// (stale answers, stray status bytes, ASB packets).
func (s *Session) wait(ctx context.Context, timeout time.Duration, match func(event) bool) (event, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		s.mu.Lock()
		for len(s.events) > 0 {
			ev := s.events[0]
			s.events = s.events[1:]
			if match(ev) {
				s.mu.Unlock()
				return ev, nil
			}
		}
		readErr, oneWay := s.readErr, s.oneWay
		s.mu.Unlock()
		if readErr != nil {
			if oneWay {
				return event{}, errTimeout
			}
			return event{}, &linkError{readErr}
		}
		select {
		case <-s.notify:
		case <-s.dead:
		case <-t.C:
			return event{}, errTimeout
		case <-ctx.Done():
			return event{}, ctx.Err()
		}
	}
}

// write sends p in chunks, each bounded by WriteTimeout so a printer that
// stops reading is noticed, and returns how many bytes the port took.
func (s *Session) write(ctx context.Context, p []byte) (int, error) {
	const chunk = 4096
	stop := context.AfterFunc(ctx, func() { _ = s.port.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	written := 0
	for written < len(p) {
		dl := time.Now().Add(s.opts.writeTimeout())
		if d, ok := ctx.Deadline(); ok && d.Before(dl) {
			dl = d
		}
		_ = s.port.SetWriteDeadline(dl)
		if err := ctx.Err(); err != nil {
			return written, err
		}
		end := min(written+chunk, len(p))
		n, err := s.port.Write(p[written:end])
		if n > 0 && written == 0 {
			s.noteWritten(p)
		}
		written += n
		if err != nil {
			if ctx.Err() != nil {
				return written, ctx.Err()
			}
			return written, &linkError{err}
		}
	}
	_ = s.port.SetWriteDeadline(time.Time{})
	return written, nil
}

// noteWritten records that bytes of p (a job or a query, starting at a
// command boundary) left: until an answer proves the printer received them
// all, a link failure may leave a command of p cut off in the printer's
// parser. The whole of p counts, because the port may take all of it and the
// link still lose the tail.
func (s *Session) noteWritten(p []byte) {
	d := resyncDebt{bound: DanglingBound(p), cut: printsSomething(p)}
	s.mu.Lock()
	s.settle = s.settle.merge(d)
	s.mu.Unlock()
}

// settled records that the printer answered a question written after
// everything else, so every byte written so far has reached it: no command
// can be left cut off by this connection any more.
func (s *Session) settled() {
	s.mu.Lock()
	s.settle = resyncDebt{}
	s.mu.Unlock()
}

// setResync makes the session send the resync preamble for r before
// anything else; a zero debt sends none. Device
// calls it on a new session when the printer's last connection died with a
// command possibly cut off in the printer's parser.
func (s *Session) setResync(r resyncDebt) {
	s.mu.Lock()
	s.resync = r
	s.mu.Unlock()
}

// owedResync is the resync the next connection to this printer must send if
// this session ends now: the preamble not sent yet, and, when the link
// cannot be trusted (broken), the bound of everything written and not proven
// received, which may have been cut off mid-command.
func (s *Session) owedResync(broken bool) resyncDebt {
	s.mu.Lock()
	defer s.mu.Unlock()
	if broken {
		return s.resync.merge(s.settle)
	}
	return s.resync
}

// ensureResync sends the owed resync preamble, if any. Every operation calls
// it before its first byte: even DLE EOT bytes, though answered at once,
// are parsed in order too and would be taken as a cut-off command's
// arguments (a raster height, a QR store length). Its failure leaves the
// preamble owed; its bytes are not job bytes.
func (s *Session) ensureResync(ctx context.Context) error {
	s.mu.Lock()
	debt := s.resync
	s.mu.Unlock()
	if !debt.owed() {
		return nil
	}
	if _, err := s.write(ctx, resyncPreamble(debt)); err != nil {
		return err
	}
	s.mu.Lock()
	// The preamble itself may still be lost in flight: until an answer
	// settles it, the old bound stays what a failure would leave behind.
	s.resync, s.settle = resyncDebt{}, s.settle.merge(debt)
	s.mu.Unlock()
	return nil
}

// query asks one question and waits for its answer.
func (s *Session) query(ctx context.Context, q []byte, timeout time.Duration, match func(event) bool) (event, error) {
	s.drain()
	if _, err := s.write(ctx, q); err != nil {
		return event{}, err
	}
	return s.wait(ctx, timeout, match)
}

func isStatusEvent(ev event) bool { return ev.kind == evStatus }

// readStatus asks DLE EOT 1, 2 and 4, and 3 when 2 reports an error.
func (s *Session) readStatus(ctx context.Context, first time.Duration) (Status, error) {
	var st Status
	for i, n := range []int{1, 2, 4, 3} {
		if n == 3 && !st.Error {
			break
		}
		timeout := s.opts.answerTimeout()
		if i == 0 && first > 0 {
			timeout = first
		}
		ev, err := s.query(ctx, queryStatus(n), timeout, isStatusEvent)
		if err != nil {
			return st, err
		}
		_ = st.Decode(n, ev.b) // the classifier let only status bytes through
	}
	return st, nil
}

// fail builds the *PrintError for err, an internal wait or write error, and
// marks the session broken when the connection can no longer be trusted.
func (s *Session) fail(op string, err error, st Status, sent bool) error {
	pe := &PrintError{Op: op, Status: st, Sent: sent}
	var le *linkError
	switch {
	case errors.Is(err, errTimeout):
		pe.Err = ErrNoAnswer
	case errors.As(err, &le):
		pe.Err, pe.Cause = ErrLink, le.err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		pe.Err = err
	default:
		pe.Err, pe.Cause = ErrLink, err
	}
	if sent {
		pe.Cause, pe.Err = pe.Err, ErrOutcomeUnknown
		if le != nil {
			pe.Cause = le.err
		}
	}
	s.broken.Store(true)
	return pe
}

func (s *Session) checkOpen(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &PrintError{Op: op, Err: ErrClosed}
	}
	return nil
}

// Probe finds out what the printer answers: DLE EOT (real-time status), GS
// r, GS ( H and GS I. Silence within ProbeTimeout means "not supported". The
// in-order probes are skipped while the printer reports it is not ready,
// because a stopped printer does not answer them (InOrderProbed stays
// false); a later Probe completes them. It fails only on a broken link.
func (s *Session) Probe(ctx context.Context) (Capabilities, error) {
	if err := s.checkOpen("probe"); err != nil {
		return Capabilities{}, err
	}
	s.op.Lock()
	defer s.op.Unlock()
	if err := s.ensureResync(ctx); err != nil {
		return Capabilities{}, s.fail("probe", err, Status{}, false)
	}
	return s.probe(ctx)
}

func (s *Session) probe(ctx context.Context) (Capabilities, error) {
	var c Capabilities
	if ow, ok := s.port.(oneWayer); ok && ow.OneWay() {
		// The transport itself cannot carry an answer (the Windows
		// spooler says so before any read): asking would only queue the
		// questions as a job of their own, and the silence is the
		// transport's, not a stalled printer's, whatever the profile
		// promises (ExpectAnswers).
		c.InOrderProbed = true
		s.caps, s.probed = c, true
		s.probes++
		return c, nil
	}
	st, err := s.readStatus(ctx, s.opts.probeTimeout())
	switch {
	case err == nil:
		c.RealTime = true
	case errors.Is(err, errTimeout) && st.Answered == 0 && !s.opts.ExpectAnswers:
		// Silent on DLE EOT: a one-way link or a printer without it.
	default:
		return c, s.fail("probe", err, st, false)
	}
	if c.RealTime && st.Err() != nil {
		s.caps, s.probed = c, true
		s.probes++
		return c, nil
	}
	c.InOrderProbed = true

	// GS r and GS ( H together: their answers cannot be confused, so one
	// timeout covers both and a one-way printer costs one ProbeTimeout.
	s.drain()
	q := append(append([]byte{}, queryTransmitPaper...), queryBarrier(probeBarrierID)...)
	if _, err := s.write(ctx, q); err != nil {
		return c, s.fail("probe", err, st, false)
	}
	deadline := time.Now().Add(s.opts.probeTimeout())
	for !(c.TransmitStatus && c.ProcessID) {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		ev, err := s.wait(ctx, left, func(ev event) bool {
			return ev.kind == evTransmit || (ev.kind == evBarrier && ev.id == probeBarrierID)
		})
		if errors.Is(err, errTimeout) {
			break
		}
		if err != nil {
			return c, s.fail("probe", err, st, false)
		}
		if ev.kind == evTransmit {
			c.TransmitStatus = true
		} else {
			c.ProcessID = true
		}
	}
	if c.RealTime || c.TransmitStatus || c.ProcessID {
		// Answers to GS I come back in order; after one silence a late answer
		// could be taken for the next, so stop at the first.
		for _, n := range []byte{67, 66, 65} {
			ev, err := s.query(ctx, queryPrinterID(n), s.opts.probeTimeout(), func(ev event) bool { return ev.kind == evID })
			if errors.Is(err, errTimeout) {
				break
			}
			if err != nil {
				return c, s.fail("probe", err, st, false)
			}
			switch n {
			case 67:
				c.Model = ev.text
			case 66:
				c.Maker = ev.text
			case 65:
				c.Firmware = ev.text
			}
		}
	}
	s.caps, s.probed = c, true
	s.probes++
	return c, nil
}

// ensureProbed probes when no capabilities are known yet.
func (s *Session) ensureProbed(ctx context.Context) error {
	if s.probed && s.caps.InOrderProbed {
		return nil
	}
	_, err := s.probe(ctx)
	return err
}

// Status asks the printer for its real-time status (DLE EOT 1, 2, 4, and 3
// on error). A printer that cannot answer gives an empty Status and no
// error: reachable is all that is known (Status.State says READY).
func (s *Session) Status(ctx context.Context) (Status, error) {
	if err := s.checkOpen("status"); err != nil {
		return Status{}, err
	}
	s.op.Lock()
	defer s.op.Unlock()
	if err := s.ensureResync(ctx); err != nil {
		return Status{}, s.fail("status", err, Status{}, false)
	}
	if err := s.ensureProbed(ctx); err != nil {
		return Status{}, err
	}
	if !s.caps.RealTime {
		return Status{}, nil
	}
	st, err := s.readStatus(ctx, 0)
	if err != nil {
		return st, s.fail("status", err, st, false)
	}
	s.settled()
	return st, nil
}

// countRealTimeQueries counts the DLE EOT n sequences inside job: a printer
// answers each of them the moment it receives it, even inside raster data.
func countRealTimeQueries(job []byte) int {
	n := 0
	for i := 0; i+2 < len(job); i++ {
		if job[i] == 0x10 && job[i+1] == 0x04 && job[i+2] >= 1 && job[i+2] <= 4 {
			n++
			i += 2
		}
	}
	return n
}

// Print sends job and proves its completion as strongly as the printer
// allows (docs/ESCPOS.md §2): a health check first (DLE EOT 1/2/4), then the job,
// then GS ( H with the id derived from id (ConfirmPrinted), or GS r 1 and
// DLE EOT 2/3 (ConfirmConsumed), or DLE EOT before and after
// (ConfirmDelivered), or only the transport's word (ConfirmDelivered).
//
// Errors are *PrintError. Before any job byte left they are retryable
// (ErrPaperOut, ErrCoverOpen, ErrNoAnswer, ErrLink, ...); after, any failure
// is ErrOutcomeUnknown with the reason as Cause and Sent set.
func (s *Session) Print(ctx context.Context, job []byte, id uint64) (Confirmation, error) {
	if err := s.checkOpen("print"); err != nil {
		return ConfirmNone, err
	}
	s.op.Lock()
	defer s.op.Unlock()
	// A command cut off by the printer's last connection would take the
	// first bytes sent here as its arguments, even the DLE EOT health check
	// (a real-time command is answered, but its bytes are still parsed in
	// order): complete it before anything else. Nothing of the job has left,
	// so a failure here is retryable.
	if err := s.ensureResync(ctx); err != nil {
		return ConfirmNone, s.fail("print", err, Status{}, false)
	}
	if err := s.ensureProbed(ctx); err != nil {
		return ConfirmNone, err
	}
	caps := s.caps
	var before Status
	if caps.RealTime {
		st, err := s.readStatus(ctx, 0)
		if err != nil {
			return ConfirmNone, s.fail("print", err, st, false)
		}
		if e := st.Err(); e != nil {
			return ConfirmNone, &PrintError{Op: "print", Err: e, Status: st}
		}
		before = st
		s.settled()
	}

	s.drain()
	n, err := s.write(ctx, job)
	if err == nil {
		if f, ok := s.port.(flusher); ok {
			if ferr := f.Flush(); ferr != nil {
				err = &linkError{ferr}
			}
		}
	}
	if err != nil {
		return ConfirmNone, s.fail("print", err, before, n > 0)
	}
	if tail := unfinishedArgs(job); tail > 0 {
		// The job ends inside a command (intake refuses such payloads, but
		// a task stored before it did, or a profile that frames differently,
		// may still carry one): the printer would take the probe below as
		// its missing bytes, never answer it, and call for a reprint that
		// ends the same way. Complete the command and reset, as after a
		// link that died mid-command, and cut what printed of the job off
		// the next ticket.
		if _, err := s.write(ctx, resyncPreamble(resyncDebt{bound: tail, cut: printsSomething(job)})); err != nil {
			return ConfirmNone, s.fail("print", err, before, true)
		}
	}

	switch {
	case caps.ProcessID:
		pid := BarrierID(id)
		if _, err := s.write(ctx, queryBarrier(pid)); err != nil {
			return ConfirmNone, s.fail("print", err, before, true)
		}
		_, err := s.wait(ctx, s.opts.barrierTimeout(), func(ev event) bool {
			return ev.kind == evBarrier && ev.id == pid
		})
		if err != nil {
			return ConfirmNone, s.whyUnconfirmed(ctx, err, before, job)
		}
		s.settled()
		return ConfirmPrinted, nil

	case caps.TransmitStatus && caps.RealTime:
		if _, err := s.write(ctx, queryTransmitPaper); err != nil {
			return ConfirmNone, s.fail("print", err, before, true)
		}
		_, err := s.wait(ctx, s.opts.barrierTimeout(), func(ev event) bool { return ev.kind == evTransmit })
		if err != nil {
			return ConfirmNone, s.whyUnconfirmed(ctx, err, before, job)
		}
		s.settled()
		// Everything before GS r was received, so every stray status answer
		// is already in; only answers to the next queries follow.
		var st Status
		for _, q := range []int{2, 3} {
			ev, err := s.query(ctx, queryStatus(q), s.opts.answerTimeout(), isStatusEvent)
			if err != nil {
				return ConfirmNone, s.fail("print", err, st, true)
			}
			_ = st.Decode(q, ev.b)
		}
		if e := st.Err(); e != nil {
			return ConfirmNone, &PrintError{Op: "print", Err: ErrOutcomeUnknown, Cause: e, Status: st, Sent: true}
		}
		return ConfirmConsumed, nil

	case caps.RealTime:
		// No in-order barrier: first take the answers the printer owes for
		// DLE EOT sequences inside the job, so none is read as ours.
		for range countRealTimeQueries(job) {
			if _, err := s.wait(ctx, s.opts.barrierTimeout(), isStatusEvent); err != nil {
				return ConfirmNone, s.fail("print", err, before, true)
			}
		}
		st, err := s.readStatus(ctx, 0)
		if err != nil {
			return ConfirmNone, s.fail("print", err, st, true)
		}
		s.settled()
		if e := st.Err(); e != nil {
			return ConfirmNone, &PrintError{Op: "print", Err: ErrOutcomeUnknown, Cause: e, Status: st, Sent: true}
		}
		return ConfirmDelivered, nil
	}
	// One-way: nothing proves the printer received the job, so what was
	// written stays unsettled; it matters only if the link then fails.
	return ConfirmDelivered, nil
}

// whyUnconfirmed turns a barrier that did not answer into ErrOutcomeUnknown,
// asking the printer for the reason when it can tell (docs/ESCPOS.md §2): paper
// out or cover open mean the job is still in the buffer and may print later.
// An answer also proves the printer received all of job and the barrier, so
// no command is left cut off (unless the answer could be one the job's own
// DLE EOT bytes provoked).
func (s *Session) whyUnconfirmed(ctx context.Context, waitErr error, before Status, job []byte) error {
	pe := s.fail("print", waitErr, before, true).(*PrintError)
	if !s.caps.RealTime || !errors.Is(waitErr, errTimeout) {
		return pe
	}
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*s.opts.answerTimeout())
	defer cancel()
	st, err := s.readStatus(qctx, 0)
	if err != nil {
		return pe
	}
	if countRealTimeQueries(job) == 0 {
		s.settled()
	}
	pe.Status = st
	if e := st.Err(); e != nil {
		pe.Cause = e
	}
	return pe
}
