package agent

import (
	"context"
	"fmt"

	"printgate/agent/api"
	"printgate/spool"
)

// TestPrint stays in the core: it needs the running lane's profile (a
// reload may have changed it) and the agent's clock. Its ticket, TestTicket,
// is built in page.go.

// TestPrint queues a short test ticket on printer: its name, the time, its
// profile, a QR code, and a line of Chinese when the profile can print it.
func (a *Agent) TestPrint(ctx context.Context, printer string) (*spool.Task, error) {
	l := a.lane(printer)
	if l == nil {
		return nil, fmt.Errorf("test print: %w: %q (configured: %v)", api.ErrUnknownPrinter, printer, a.laneNames())
	}
	now := a.opts.Clock.Now()
	doc, err := TestTicket{Printer: printer, Profile: l.pc.Profile, At: now}.Document()
	if err != nil {
		return nil, fmt.Errorf("test print on %s: %w", printer, err)
	}
	t, _, err := a.Submit(ctx, spool.NewTask{
		TaskNo: fmt.Sprintf("TEST_%s_%d", printer, now.UnixNano()), Printer: printer,
		Priority: spool.PriorityUrgent, Origin: spool.OriginManager, Document: doc,
	})
	if err != nil {
		return nil, fmt.Errorf("test print on %s: %w", printer, err)
	}
	return t, nil
}
