package agent

import (
	"context"
	"time"

	"printgate/agent/config"
	"printgate/drivers"
	"printgate/drivers/escpos"
)

// OpenDevice is an escpos.Device that dials the printer's URL on demand and
// keeps one connection while work flows. The agent's default
// Options.OpenPrinter is this device with the agent's downgrade reporting.
func OpenDevice(pc *config.Printer) Printer {
	return openDevice(pc, escpos.SessionOptions{}, nil, nil)
}

// openDevice builds the device with the given session timeouts. A printer
// whose profile promises status answers is expected to give them, so that a
// silent one counts as not answering rather than as one-way; a completion
// proof weaker than the profile promises is reported to onDowngrade (nil:
// not reported) and the printer re-probed. now is the clock that times
// re-probing (nil: the real one).
func openDevice(pc *config.Printer, so escpos.SessionOptions, onDowngrade func(from, to escpos.Confirmation, why string), now func() time.Time) *escpos.Device {
	target := pc.Target
	dial := func(ctx context.Context) (escpos.Conn, error) {
		return drivers.OpenTarget(ctx, target, drivers.Options{})
	}
	expected := pc.Profile.Ack.Confirmation()
	if target.Scheme == drivers.SchemeWinspool {
		// The spooler carries no answer back: "delivered" is all any
		// printer behind it can give, so a profile that promises more
		// (epson-80, the default) is no downgrade to warn about.
		expected = min(expected, escpos.ConfirmDelivered)
	}
	return escpos.NewDevice(dial, escpos.DeviceOptions{
		Session:     DeviceSession(target, pc.Profile.Ack != escpos.AckNone, so),
		Expected:    expected,
		OnDowngrade: onDowngrade,
		Now:         now,
	})
}

// DeviceSession completes so with what the printer at target needs, for
// the agent's device and for every probe that should talk to the printer
// as the agent will (printgate printers, doctor): expectAnswers (its
// profile promises status answers, so a silent printer counts as not
// answering rather than as one-way), XON/XOFF when its line has it, and
// on a serial line a write timeout the transport's writes must fit.
func DeviceSession(target drivers.Target, expectAnswers bool, so escpos.SessionOptions) escpos.SessionOptions {
	so.ExpectAnswers = expectAnswers
	so.XonXoff = target.Line.Flow == drivers.FlowXONXOFF
	if target.Scheme == drivers.SchemeSerial && so.WriteTimeout == 0 {
		// Each write chunk (4 KiB) must fit its wire time at this baud
		// rate: over 10 s below about 4800 baud.
		so.WriteTimeout = max(10*time.Second, escpos.JobTimeout(0, 4096, target.Line.Baud))
	}
	return so
}

// reportDowngrade is the OnDowngrade of printer's device: a WARN line and a
// metric, since a weaker proof of paper is the promise weakening silently.
func (a *Agent) reportDowngrade(printer string) func(from, to escpos.Confirmation, why string) {
	return func(from, to escpos.Confirmation, why string) {
		a.log.Warn("completion proof weakened: this printer's jobs are confirmed less strongly until it is re-probed",
			"printer", printer, "from", from.String(), "to", to.String(), "why", why)
		a.m.IncConfirmationDowngrade(printer, from.String(), to.String())
	}
}
