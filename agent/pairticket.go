package agent

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"

	"printgate/agent/config"
	"printgate/drivers/escpos"
	"printgate/sync/pair"
)

// PairingTicket is the ticket printgate pair --print-qr prints: the QR of
// p's address and the code, for a manager to scan at the counter.
func PairingTicket(p *pair.Pending) *escpos.Document {
	return &escpos.Document{Lines: []escpos.Line{
		escpos.TextLine{Text: "Pair printgate", Align: escpos.AlignCenter, Bold: true, Size: escpos.TextSize{W: 2, H: 2}},
		escpos.TextLine{Text: "Scan with a phone signed in to the cloud", Align: escpos.AlignCenter},
		escpos.QRLine{Data: p.URL()},
		escpos.TextLine{Text: "or open " + p.VerificationURI, Align: escpos.AlignCenter},
		escpos.TextLine{Text: "and enter the code", Align: escpos.AlignCenter},
		escpos.TextLine{Text: p.UserCode, Align: escpos.AlignCenter, Bold: true, Size: escpos.TextSize{W: 2, H: 2}},
	}}
}

// PrintPairing prints the pairing ticket on pc the way the agent prints,
// with no running agent needed: through the printer's URL with its profile
// (OpenDevice), waiting for the proof of paper the printer gives, within
// its job timeout.
func PrintPairing(ctx context.Context, pc *config.Printer, p *pair.Pending) error {
	job, err := escpos.Render(PairingTicket(p), pc.Profile, escpos.RenderOptions{})
	if err != nil {
		return fmt.Errorf("render the pairing ticket: %w", err)
	}
	dev := OpenDevice(pc)
	if c, ok := dev.(io.Closer); ok {
		defer c.Close()
	}
	ctx, cancel := context.WithTimeout(ctx, escpos.JobTimeout(pc.JobTimeout, len(job), pc.Target.Line.Baud))
	defer cancel()
	if _, err := dev.Print(ctx, job, rand.Uint64()); err != nil {
		return err
	}
	return nil
}
