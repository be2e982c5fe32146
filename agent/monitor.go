package agent

import (
	"context"
	"errors"
	"time"

	"printgate/drivers/escpos"
)

// monitor keeps the lane's idea of its printer current: it polls slowly
// while the printer is idle or ready, quickly while work waits for a printer
// that is not ready, and at once when the lane asks. It never polls while a
// job is in flight: the job's own health checks report then, and the device
// serialises access anyway.
func (l *lane) monitor(ctx context.Context) {
	clock := l.clock
	poll, missed := true, false
	for {
		if poll && l.printing.Load() {
			// A reading was due while a job is in flight: take it as soon
			// as the job ends, so a refresh (paper put back) is never lost.
			missed = true
		} else if poll {
			missed = false
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			st, err := l.dev.Status(sctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			l.post(msgStatus{state: readingOf(st, err), err: err})
			if ic, ok := l.dev.(idleCloser); ok && !l.hasWork.Load() {
				ic.CloseIfIdle(clock.Now())
			}
		}
		d := l.pollIdle
		if l.hasWork.Load() && !l.ready.Load() {
			d = l.pollBusy
		}
		t := clock.NewTimer(d)
		poll = true
		select {
		case <-t.C():
		case <-l.pollNow:
			t.Stop()
		case <-l.jobEnded:
			t.Stop()
			poll = missed
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// readingOf turns a status answer (or the failure to get one) into the
// printer state the lane acts on.
func readingOf(st escpos.Status, err error) escpos.PrinterState {
	if err == nil {
		return st.State()
	}
	if errors.Is(err, escpos.ErrOffline) {
		// The printer could not be reached at all.
		return escpos.StateOffline
	}
	if errors.Is(err, escpos.ErrLink) {
		// A connection that dropped after connecting (and after the
		// device's one redial) says little: look again at once rather than
		// park the whole lane on one flap.
		return ""
	}
	if errors.Is(err, escpos.ErrNoAnswer) {
		// Connected but silent (stalled, jammed firmware): not offline, and
		// a task that times out here was not acknowledged.
		return escpos.StateError
	}
	return stateOf(err)
}
