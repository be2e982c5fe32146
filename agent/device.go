package agent

import (
	"context"
	"printgate/agent/config"

	"printgate/drivers"
	"printgate/drivers/escpos"
)

// OpenDevice is the default Options.OpenPrinter: an escpos.Device that dials
// the printer's URL on demand and keeps one connection while work flows.
func OpenDevice(pc *config.Printer) Printer {
	return openDevice(pc, escpos.SessionOptions{})
}

// openDevice builds the device with the given session timeouts. A printer
// whose profile promises status answers is expected to give them, so that a
// silent one counts as not answering rather than as one-way.
func openDevice(pc *config.Printer, so escpos.SessionOptions) *escpos.Device {
	target := pc.Target
	dial := func(ctx context.Context) (escpos.Conn, error) {
		return drivers.OpenTarget(ctx, target, drivers.Options{})
	}
	so.ExpectAnswers = pc.Profile.Ack != escpos.AckNone
	so.XonXoff = target.Line.Flow == drivers.FlowXONXOFF
	return escpos.NewDevice(dial, escpos.DeviceOptions{Session: so})
}
