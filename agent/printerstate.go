package agent

// The printer's state as the lane knows it: the status monitor, readings,
// and what a change of state (ready, offline, paper out) sets off.

import (
	"context"
	"errors"
	"time"

	"printgate/drivers/escpos"
	"printgate/spool"
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
			state := readingOf(st, err)
			if err == nil && st.Err() != nil {
				// A reading that is not READY carries what the printer said
				// (its status bytes), as a job's own health check does, so a
				// task that waits on it says the same whichever came first.
				err = &escpos.PrintError{Op: "status", Err: st.Err(), Status: st}
			}
			l.post(msgStatus{state: state, err: err})
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

// stateOf maps a not-ready print error to the printer state it shows.
func stateOf(err error) escpos.PrinterState {
	switch {
	case errors.Is(err, escpos.ErrPaperOut):
		return escpos.StatePaperOut
	case errors.Is(err, escpos.ErrCoverOpen):
		return escpos.StateCoverOpen
	case errors.Is(err, escpos.ErrPrinterFault):
		return escpos.StateError
	case errors.Is(err, escpos.ErrOffline):
		return escpos.StateOffline
	}
	return escpos.StateBusy
}

// setState records the printer's state; err explains a reading that is not
// READY. An empty state means "not known": the monitor is asked to look now.
func (l *lane) setState(st escpos.PrinterState, err error) {
	if st != escpos.StateReady {
		l.stateErr = err
	}
	if st == "" {
		select {
		case l.pollNow <- struct{}{}:
		default:
		}
		if l.state == escpos.StateReady {
			// Stop pushing until the monitor has looked again.
			st = escpos.StateBusy
		} else {
			return
		}
	}
	if st == l.state {
		return
	}
	prev := l.state
	l.state = st
	l.stateSince = l.now()
	l.ready.Store(st == escpos.StateReady)
	// Observers hear of the change once its timers are set, so a test that
	// waits for it can move the clock past them, and once the lane's
	// published state says it too: what reads that state (the raw port's
	// status answers, the API's printer list) must not lag the event.
	defer func() {
		l.publish()
		l.observe(Event{Printer: l.name, State: string(st)})
	}()
	attrs := []any{"from", prev, "state", st}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	if st == escpos.StateReady {
		l.log.Info("printer state", attrs...)
		l.host.cancelTimer(failoverKey(l.name))
		if l.failedOver != "" {
			l.host.after(failbackKey(l.name), l.pc.FailbackAfter, l.name, msgFailback{})
		}
		return
	}
	l.log.Warn("printer state", attrs...)
	l.host.cancelTimer(failbackKey(l.name))
	if prev == escpos.StateReady || prev == "" {
		if l.pc.Backup != "" && l.failedOver == "" {
			l.host.after(failoverKey(l.name), l.pc.FailoverAfter, l.name, msgFailover{})
		}
	}
	if st == escpos.StateOffline {
		var toPark []*entry
		for _, e := range l.queue.drain() {
			if e.task.State == spool.StateParked {
				l.parked.push(e) // still parked on record: nothing to write
			} else {
				toPark = append(toPark, e)
			}
		}
		moved, kept := l.moveAll(toPark, spool.StateParked, spool.Change{Reason: spool.ReasonDeviceOffline})
		for _, e := range moved {
			l.parked.push(e)
		}
		for _, e := range kept {
			l.queue.push(e)
		}
	}
}
