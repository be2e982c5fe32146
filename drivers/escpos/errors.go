package escpos

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors the agent branches on. A Session or Device returns them
// wrapped in a *PrintError, so errors.Is works and errors.As gives the
// printer status and whether any job byte left.
var (
	// ErrOffline means the printer could not be reached (connect failed) or
	// says it is offline for no reason it names. Nothing was sent.
	ErrOffline = errors.New("printer offline")
	// ErrPaperOut means the printer reports paper end.
	ErrPaperOut = errors.New("printer out of paper")
	// ErrCoverOpen means the printer reports its cover open.
	ErrCoverOpen = errors.New("printer cover open")
	// ErrPrinterFault means the printer reports an error (autocutter, head
	// temperature, an unrecoverable fault); Status says which.
	ErrPrinterFault = errors.New("printer reports an error")
	// ErrBusy means the printer is offline only while paper is fed by the
	// button: not a failure, just not now.
	ErrBusy = errors.New("printer busy")
	// ErrNoAnswer means a printer that answers status queries did not answer
	// one in time (stalled, switched off mid-connection, or a slow link).
	ErrNoAnswer = errors.New("printer did not answer")
	// ErrLink means the connection failed (reset, closed, write error) before
	// any byte of the job left, so sending again cannot print twice.
	ErrLink = errors.New("printer link failed")
	// ErrOutcomeUnknown means job bytes left and then the link failed or the
	// printer went silent before the completion barrier answered: the paper
	// may or may not have come out. Never replay such a job silently.
	ErrOutcomeUnknown = errors.New("print outcome unknown")
	// ErrClosed means the Session or Device was closed.
	ErrClosed = errors.New("printer session closed")
	// ErrNotStatus means a byte is not a DLE EOT answer (its fixed bits
	// 0xx1xx10 do not match).
	ErrNotStatus = errors.New("not a real-time status answer")
)

// PrintError is the error type of every Session and Device operation. Err is
// one of the sentinels above; Cause, when set, is the lower-level reason (a
// dial error, ErrNoAnswer behind ErrOutcomeUnknown, ErrPaperOut found when
// asking why a barrier went unanswered).
type PrintError struct {
	Op     string // "probe", "status" or "print"
	Err    error  // the sentinel the caller branches on
	Cause  error  // what lay behind it, or nil
	Status Status // the last status the printer gave, if any (Status.Answered)
	// Sent reports whether any byte of the job left this process. When true
	// and Err is ErrOutcomeUnknown, the job may have printed.
	Sent bool
}

// Error describes the failure in one lower-case line.
func (e *PrintError) Error() string {
	var b strings.Builder
	b.WriteString("escpos ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if e.Cause != nil {
		fmt.Fprintf(&b, ": %v", e.Cause)
	}
	if e.Status.Answered != 0 {
		fmt.Fprintf(&b, " (status %s)", e.Status)
	}
	if e.Sent {
		b.WriteString(" [job bytes sent]")
	}
	return b.String()
}

// Unwrap exposes both the sentinel and the cause to errors.Is and errors.As.
func (e *PrintError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// Retryable reports whether sending the same job again is safe: true for
// every failure where no job byte can have printed, false when the outcome
// is unknown (a replay could print a duplicate) or the device was closed.
func (e *PrintError) Retryable() bool {
	return !errors.Is(e.Err, ErrOutcomeUnknown) && !errors.Is(e.Err, ErrClosed)
}
