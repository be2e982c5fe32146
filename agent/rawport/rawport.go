// Package rawport is printgate's "virtual printer": a raw TCP listener that
// behaves like a port-9100 network printer, so an unmodified POS (CUPS's
// socket backend, the Windows Standard TCP/IP port in RAW mode, nc, or
// software that keeps one connection open) prints through printgate's spool.
//
// A Port reads the stream, cuts it into jobs (one connection, an idle gap, or
// a cut followed by a shorter idle), answers the status queries a POS asks
// like a healthy printer with paper, and hands each job to a Sink, which
// stores it durably before the connection is released. It never prints:
// the agent's lanes do.
package rawport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"printgate/drivers/escpos/decode"
)

// Job is one print job read from a raw connection.
type Job struct {
	// Printer is the printer (lane) whose port received the job.
	Printer string
	// Data is the bytes to print: the stream minus the commands the port
	// answered or that would make the real printer talk into printgate's own
	// session (DLE EOT n, DLE ENQ n, GS r n, GS I n, GS ( H fn48, GS a n).
	// It ends on a command boundary: bytes of a command the stream ended in
	// are not kept (they would swallow the next job's bytes at the printer).
	Data []byte
	// Truncated says the job did not end cleanly: the client reset the
	// connection mid-job, the stream ended inside a command, or the job hit
	// Options.MaxJobDuration. The agent prints it marked.
	Truncated bool
	// Duplicate says Data is byte-identical to a job this port accepted
	// within Options.DupWindow: a likely POS retry. It is still a job.
	Duplicate bool
	// Remote is the client's address.
	Remote string
	// Started is when the job's first content arrived, Ended when the job
	// was cut off from the stream (Options.Now).
	Started, Ended time.Time
	// InOrder, when the Sink calls it, says the job has its place in the
	// store's order (queued for the spool's next commit, not yet fsync'd):
	// the port's next job may be handed over from then on, so a burst of
	// jobs on one port shares the spool's commits instead of taking one
	// commit each (a lunch rush of 60 tickets waited seconds that way).
	// A Sink that never calls it gets the jobs one at a time.
	InOrder func()
}

// Sink is what a Port hands jobs to; the agent implements it.
type Sink interface {
	// Accept stores j durably (fsync'd) and returns its task_no. The port
	// releases the connection (closes it, or reads the next job) only after
	// Accept returns, so a client that sees its connection complete knows
	// the job is on disk. An error makes the port call Refused and reset
	// the connection.
	Accept(ctx context.Context, j Job) (taskNo string, err error)
	// Ready reports whether the printer's spool can take a job now. While
	// it returns an error the port accepts no connection (they wait in
	// the listen backlog) and hands over no job (it waits on its
	// connection), asking again every half second, so no job is read
	// and then refused (Options.NotReady). It is asked once per
	// connection and before each job, so it must be quick.
	Ready(printer string) error
	// Refused reports a job the port read but could not hand over (too
	// large, Accept failed). A client that goes away before sending any
	// content is not a refusal.
	Refused(printer, remote string, size int, err error)
}

// Recent is a job taken before a port opened, for its duplicate window.
type Recent struct {
	// SHA256 is the hash of the job's Data, as the spool stores it.
	SHA256 [32]byte
	// At is when it was taken.
	At time.Time
}

// PrinterStatus is what the port tells a POS of the printer behind it, in
// its DLE EOT and GS r answers, when Options.Status is set. The zero value
// is a ready printer.
type PrinterStatus struct {
	Offline, PaperOut, PaperNearEnd, CoverOpen, Error bool
}

// ErrClosing is wrapped by the error Refused gets for a job dropped because
// the port closed (agent stop, a reload that closed or reopened the port)
// before the job could be taken: it ended inside a command, or the close
// gave up waiting for it.
var ErrClosing = errors.New("rawport: port closing")

// ErrTooLarge is wrapped by the error Refused gets for a job over
// Options.MaxJobBytes.
var ErrTooLarge = errors.New("rawport: job too large")

// Options tune a Port. Zero durations take the documented defaults;
// MaxJobBytes is required.
type Options struct {
	// IdleGap is the quiet time that ends a job inside an open connection;
	// default 2s.
	IdleGap time.Duration
	// CutIdle is the quiet time after a cut command (GS V, ESC i, ESC m)
	// that ends a job; default 300ms.
	CutIdle time.Duration
	// DupWindow is how long an accepted job's bytes are remembered to flag
	// a retry as Duplicate; default 10s, negative off (no job is flagged).
	DupWindow time.Duration
	// MaxJobBytes bounds a job, and so the memory of a connection. A longer
	// stream is cut off and refused (Sink.Refused, reset). Required (> 0):
	// the agent passes its intake body limit.
	MaxJobBytes int
	// MaxConns bounds simultaneous connections on this port; default 64.
	// Over it the port stops accepting: further connections wait in the
	// kernel's listen backlog, with the bytes their clients sent, until
	// one ends. None is reset for a limit.
	MaxConns int
	// FirstByteTimeout closes a connection that has not sent a job's first
	// printable byte (content) this long after it was served: a POS sends
	// its job at once, and a client that only connects, pads (NUL, ESC @)
	// or asks the status must not hold a connection (Options.MaxConns,
	// MaxPerAddress) for minutes. Those bytes are answered meanwhile but
	// do not count as activity. A command still arriving at the limit (a
	// slow logo) may finish; see conn.noJobDeadline. Default 10s.
	FirstByteTimeout time.Duration
	// ConnIdle closes a connection kept open after a job once this long has
	// passed since its last job ended with no new one; status queries and
	// padding do not count as activity. Default 5m.
	ConnIdle time.Duration
	// MaxPerAddress bounds the connections from one client address that
	// are read at once while they carry no job (see FirstByteTimeout);
	// default 2 (a POS opens one at a time). A connection with content
	// does not count. Further ones from the address wait, unread and
	// without a slot, in the order they came, until one of those sends
	// content or ends (so a POS's burst of write-and-close jobs loses
	// none); past MaxConns waiting from the address, or 4×MaxConns on the
	// port, a new one is reset on arrival, before any byte is read, with a
	// rate-limited WARN naming the address and the config key
	// raw_max_per_address.
	MaxPerAddress int
	// MaxReadPerAddress bounds the connections from one client address
	// that are read at once, with a job or without; default 8. Further
	// ones from the address wait, unread and without a slot, as over
	// MaxPerAddress, until one of them ends: one address cannot take the
	// port's slots, nor its memory, with jobs it sends slowly.
	MaxReadPerAddress int
	// Allow, when not empty, lists the client addresses the port serves
	// (config raw_allow); a connection from any other address is reset on
	// arrival, before any byte is read, with a rate-limited WARN. Allowed
	// connections do not wait for the agent-wide Limit: the ports without
	// an allow-list cannot starve them.
	Allow []netip.Prefix
	// MaxJobDuration ends a job still streaming after this long as
	// truncated and resets the connection (slow-loris guard); default 5m.
	MaxJobDuration time.Duration
	// Recent are jobs of this port taken before it opened (an earlier run
	// of the agent, killed after storing a job and before closing its
	// connection): a POS resending one within DupWindow is still a
	// Duplicate.
	Recent []Recent
	// Decode describes the printer behind the port (Profile.DecodeOptions):
	// a Chinese printer starts in double-byte mode, where a text byte pair
	// may look like a command to a decoder that does not know it.
	Decode decode.Options
	// DrainTime is how long Close lets open connections finish the jobs
	// their clients have sent; default 500ms (see Port.Close).
	DrainTime time.Duration
	// Limit, if set, bounds connections across all ports sharing it, as
	// MaxConns does for one port.
	Limit *Limiter
	// Status, if set, is the state of the printer behind the port, asked
	// at each DLE EOT and GS r: the answers then say offline, paper out and
	// so on. Unset, the port answers as a ready printer, since it spools
	// whatever the printer does. It must be quick.
	Status func() PrinterStatus
	// Now is the clock of Job.Started/Ended and the duplicate window;
	// default time.Now. Read deadlines use the real clock (the kernel's).
	Now func() time.Time
	// NotReady, if set, hears when the port stops accepting because
	// Sink.Ready failed (with its error) and when it accepts again (nil),
	// so the agent can warn the manager: POS connections wait meanwhile.
	NotReady func(err error)
	// Logger receives one INFO line per accepted job and WARN/ERROR lines
	// for refusals; default slog.Default().
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultIdleGap           = 2 * time.Second
	DefaultCutIdle           = 300 * time.Millisecond
	DefaultDupWindow         = 10 * time.Second
	DefaultMaxConns          = 64
	DefaultFirstByteTimeout  = 10 * time.Second
	DefaultConnIdle          = 5 * time.Minute
	DefaultMaxPerAddress     = 2
	DefaultMaxReadPerAddress = 8
	DefaultMaxJobDuration    = 5 * time.Minute
	DefaultDrainTime         = 500 * time.Millisecond
)

// withDefaults checks o and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	if o.MaxJobBytes <= 0 {
		return o, fmt.Errorf("rawport: MaxJobBytes must be > 0, have %d", o.MaxJobBytes)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.IdleGap, DefaultIdleGap)
	def(&o.CutIdle, DefaultCutIdle)
	if o.DupWindow == 0 {
		o.DupWindow = DefaultDupWindow
	}
	def(&o.FirstByteTimeout, DefaultFirstByteTimeout)
	def(&o.ConnIdle, DefaultConnIdle)
	def(&o.MaxJobDuration, DefaultMaxJobDuration)
	def(&o.DrainTime, DefaultDrainTime)
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxPerAddress <= 0 {
		o.MaxPerAddress = DefaultMaxPerAddress
	}
	if o.MaxReadPerAddress <= 0 {
		o.MaxReadPerAddress = DefaultMaxReadPerAddress
	}
	o.MaxReadPerAddress = max(o.MaxReadPerAddress, o.MaxPerAddress)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// The floor rate of a job: a job keeps its place in the port's line (the
// jobs that arrived after it wait for it to be stored) for TurnAllowance
// plus one second for every MinJobRate bytes it holds, counted from its
// first byte. A POS sends a ticket in milliseconds, a logo of 100 KiB in
// well under a second; a job slower than that is still read and stored
// whole, behind the jobs that passed it, so a client that trickles a byte
// a second holds no one's ticket.
const (
	TurnAllowance = 5 * time.Second
	MinJobRate    = 1024 // bytes a second
)

// Stats are a port's counters, for the manager page and metrics.
type Stats struct {
	Conns      int    // connections open now
	Jobs       uint64 // jobs accepted by the Sink
	Refused    uint64 // jobs read but not handed over (too large, Accept failed)
	Duplicates uint64 // accepted jobs flagged Duplicate
	Truncated  uint64 // accepted jobs flagged Truncated
	// Rejected counts connections that waited for the spool (Sink.Ready)
	// and were reset because the port closed meanwhile.
	Rejected uint64
	// TurnedAway counts connections reset on arrival, unread, by Allow or
	// MaxPerAddress.
	TurnedAway uint64
	// IdleClosed counts connections closed for sending nothing to print
	// (FirstByteTimeout, ConnIdle).
	IdleClosed uint64
}
