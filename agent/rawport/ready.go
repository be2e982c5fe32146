package rawport

import (
	"context"
	"time"
)

// A job the spool cannot take is never read and then refused: its POS may
// have finished writing, and a reset it never waits for would lose the
// ticket without a word (docs/DESIGN.md, invariant 8). While Sink.Ready fails the
// port stops accepting, so new connections wait in the listen backlog with
// what their POS sent, and a job already read waits on its connection
// before it is handed over; both go on once the spool can take them.
// Options.NotReady hears when that starts and ends.

// readyPoll is how often a port that stopped accepting asks the Sink again.
const readyPoll = 500 * time.Millisecond

// awaitReady waits until the Sink is ready for a job, or the port closes
// (stop closed, or ctx ended), and reports whether it is ready.
func (p *Port) awaitReady(ctx context.Context, stop <-chan struct{}) bool {
	for {
		err := p.sink.Ready(p.printer)
		p.setNotReady(err)
		if err == nil {
			return true
		}
		t := time.NewTimer(readyPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		case <-stop:
			t.Stop()
			return false
		}
	}
}

// setNotReady records whether the Sink refused (err) or took (nil) its
// last check, and tells Options.NotReady when that changes.
func (p *Port) setNotReady(err error) {
	p.mu.Lock()
	changed := (err == nil) != (p.notReady == nil)
	p.notReady = err
	p.mu.Unlock()
	if changed && p.o.NotReady != nil {
		p.o.NotReady(err)
	}
}

// NotAccepting returns why the port has stopped accepting (the Sink's
// last Ready error), or nil while it accepts.
func (p *Port) NotAccepting() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notReady
}
