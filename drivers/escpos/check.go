package escpos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Health is the one word CheckPrinter says about a printer, as a store
// technician needs it. The words that come from the printer's own status
// match the printer states of PROTOCOL.md §3 (in lower case); the others
// say how far the check got.
type Health string

// The outcomes of CheckPrinter.
const (
	HealthReady     Health = "ready"      // answered and can print, or one-way and reachable
	HealthBusy      Health = "busy"       // feeding paper by the button
	HealthPaperOut  Health = "paper_out"  // reports paper end
	HealthCoverOpen Health = "cover_open" // reports its cover open
	HealthError     Health = "error"      // reports an error (cutter, head, unrecoverable)
	// HealthOffline: the connection could not be opened (Err is the dial
	// error), or the printer says it is offline without naming a cause.
	HealthOffline Health = "offline"
	// HealthNotAnswering: connected, but no status answer came (stalled,
	// jammed, the wrong port, or a one-way printer whose profile promises
	// answers). The agent shows such a printer as ERROR.
	HealthNotAnswering Health = "not_answering"
	// HealthNotProbed: the check did not run, or was cut off by its
	// caller's context before it could tell.
	HealthNotProbed Health = "not_probed"
)

// healthOf maps the states of a printer that answered.
var healthOf = map[PrinterState]Health{
	StateReady: HealthReady, StateBusy: HealthBusy, StatePaperOut: HealthPaperOut,
	StateCoverOpen: HealthCoverOpen, StateError: HealthError, StateOffline: HealthOffline,
}

// CheckResult is what CheckPrinter found out about one printer.
type CheckResult struct {
	Health Health
	// Err says why the printer is HealthOffline because it could not be
	// reached (the dial error), HealthNotAnswering or HealthNotProbed; nil
	// otherwise.
	Err error
	// Status is the printer's real-time status; Status.Answered is zero
	// when it gave none.
	Status Status
	// Caps is what Device.Probe found, valid when Probed. A printer that
	// was not ready during the probe has Caps.InOrderProbed false: its
	// in-order answers (GS r, GS ( H) are still unknown.
	Caps   Capabilities
	Probed bool
}

// OneWay reports whether the probe found a printer that answers nothing:
// jobs to it can only be "delivered".
func (r CheckResult) OneWay() bool {
	return r.Probed && !r.Caps.RealTime && !r.Caps.TransmitStatus && !r.Caps.ProcessID
}

// CheckOptions tune CheckPrinter. The zero value is ready to use.
type CheckOptions struct {
	// Session is what the agent would use for this printer: ExpectAnswers
	// from its profile, so a silent printer that should answer is reported
	// as not answering instead of one-way, and XonXoff for serial lines.
	Session SessionOptions
	// Timeout bounds the whole check (connect, probe, status); default 3 s.
	Timeout time.Duration
}

// DefaultCheckTimeout is CheckOptions.Timeout when zero: enough for a
// one-way printer's probe (two silent ProbeTimeouts) and a slow connect.
const DefaultCheckTimeout = 3 * time.Second

// CheckPrinter connects to one printer through dial the way the agent
// does (a Device with the given session options), probes what it answers
// and asks its real-time status, then closes the connection. It never
// takes longer than opts.Timeout and never fails: every outcome is a
// CheckResult. Nothing is printed.
func CheckPrinter(ctx context.Context, dial DialFunc, opts CheckOptions) CheckResult {
	timeout := orDefault(opts.Timeout, DefaultCheckTimeout)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dev := NewDevice(dial, DeviceOptions{Session: opts.Session, IdleTimeout: -1, DialTimeout: timeout})
	defer dev.Close()

	var r CheckResult
	_, err := dev.Probe(cctx)
	if err == nil {
		// Status completes a probe that the printer's state cut short, so
		// read the capabilities after it.
		r.Status, err = dev.Status(cctx)
	}
	r.Caps, r.Probed = dev.Capabilities()
	if err != nil {
		r.Health, r.Err = classifyCheck(ctx, err, timeout)
		return r
	}
	r.Health = healthOf[r.Status.State()]
	return r
}

// classifyCheck turns a Device error into the outcome of a check; parent
// is the caller's context, whose end means the check did not finish.
func classifyCheck(parent context.Context, err error, timeout time.Duration) (Health, error) {
	var pe *PrintError
	errors.As(err, &pe)
	switch {
	case parent.Err() != nil:
		return HealthNotProbed, fmt.Errorf("check cut off: %w", parent.Err())
	case errors.Is(err, ErrOffline):
		// Device reports a failed connect as ErrOffline with the dial error.
		if pe != nil && pe.Cause != nil {
			return HealthOffline, pe.Cause
		}
		return HealthOffline, err
	case errors.Is(err, context.DeadlineExceeded):
		return HealthNotAnswering, &checkError{fmt.Sprintf("connected, but no answer within %v", timeout), err}
	case errors.Is(err, ErrNoAnswer):
		return HealthNotAnswering, &checkError{"connected, but no answer to a status query (DLE EOT)", err}
	}
	return HealthNotAnswering, fmt.Errorf("connected, but the link failed before a status answer: %w", err)
}

// checkError says in its own words what a Device error means for a check,
// without repeating the Device's message, and still unwraps to it.
type checkError struct {
	msg string
	err error
}

func (e *checkError) Error() string { return e.msg }
func (e *checkError) Unwrap() error { return e.err }

// PrinterCheck is one printer for CheckPrinters.
type PrinterCheck struct {
	Dial    DialFunc
	Options CheckOptions
}

// DefaultCheckConcurrency is how many printers CheckPrinters checks at
// once when not told: more than a store has.
const DefaultCheckConcurrency = 16

// CheckPrinters runs CheckPrinter on every printer in parallel, at most
// concurrency (default DefaultCheckConcurrency) at a time, and returns the
// results in the order of checks. Its running time is bounded by the
// checks' timeouts; a printer whose check had not started when ctx ended
// is HealthNotProbed.
func CheckPrinters(ctx context.Context, checks []PrinterCheck, concurrency int) []CheckResult {
	if concurrency <= 0 {
		concurrency = DefaultCheckConcurrency
	}
	out := make([]CheckResult, len(checks))
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i, c := range checks {
		if ctx.Err() != nil {
			out[i] = CheckResult{Health: HealthNotProbed, Err: fmt.Errorf("check not started: %w", ctx.Err())}
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			out[i] = CheckResult{Health: HealthNotProbed, Err: fmt.Errorf("check not started: %w", ctx.Err())}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = CheckPrinter(ctx, c.Dial, c.Options)
		}()
	}
	wg.Wait()
	return out
}
