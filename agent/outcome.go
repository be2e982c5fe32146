package agent

// Where a job's outcome is decided: PRINTED, UNKNOWN (and the on_unknown
// policy), FAILED, or back to the queue to retry.

import (
	"errors"
	"fmt"
	"time"

	"printgate/drivers/escpos"
	"printgate/spool"
)

// renderError is a job that could not be built from its stored task; it
// ends the task FAILED with reason RENDER through the job-outcome path, so
// a spool that cannot record that is retried like any other outcome.
type renderError struct{ err error }

func (e *renderError) Error() string { return "render: " + e.err.Error() }

func (e *renderError) Unwrap() error { return e.err }

// jobDone records a job's outcome (docs/DESIGN.md, "Dispatch":
// completion gate).
func (l *lane) jobDone(m msgJobDone) {
	e := m.e
	l.inflight = nil
	l.printing.Store(false)
	select {
	case l.jobEnded <- struct{}{}:
	default:
	}
	l.moveErr = nil
	defer func() {
		if e.task.State == spool.StateSending && spoolTrouble(l.moveErr) {
			// The outcome could not be written (disk full?). Keep the job
			// in flight, so nothing else prints while its fate is unrecorded,
			// and record it again shortly.
			l.inflight = e
			l.printing.Store(true)
			l.host.after(jobDoneKey(e.task.TaskNo), time.Second, l.name, m)
			l.trouble(e)
		}
	}()
	var re *renderError
	if errors.As(m.err, &re) {
		l.m.IncAttempt(l.name, "render_failed")
		l.move(e, spool.StateFailed, spool.Change{Reason: spool.ReasonRender, Message: re.err.Error()})
		return
	}
	if m.err == nil {
		// PRINTED is recorded in the same commit as the next job's SENDING
		// (start), or alone at the end of this inbox round (flushPrinted):
		// one fsync per ticket instead of two while a lane drains.
		l.printedDue = &m
		l.failures = 0
		l.confirms++
		if l.state != escpos.StateReady {
			l.setState(escpos.StateReady, nil)
		}
		return
	}
	var pe *escpos.PrintError
	errors.As(m.err, &pe)
	sent := pe != nil && pe.Sent
	refund := e.task.Attempts - 1
	switch {
	case errors.Is(m.err, escpos.ErrOutcomeUnknown) || sent:
		l.m.IncAttempt(l.name, "outcome_unknown")
		l.failures++
		if e.confirmsAt != l.confirms {
			e.unknowns, e.confirmsAt = 0, l.confirms
		}
		e.unknowns++
		e.reprintDue = false
		l.setState("", m.err)
		reason := "outcome unknown"
		if errors.Is(m.err, escpos.ErrNoAnswer) {
			reason = reasonUnconfirmed
		}
		if l.move(e, spool.StateUnknown, spool.Change{Reason: reason, Message: m.err.Error()}) {
			l.unknown(e)
		}
	case errors.Is(m.err, escpos.ErrOffline):
		l.m.IncAttempt(l.name, "offline")
		l.setState(escpos.StateOffline, m.err)
		if e.timedOut {
			l.timeout(e, spool.ReasonDeviceOffline, m.err.Error())
			return
		}
		if l.move(e, spool.StateParked, spool.Change{Reason: spool.ReasonDeviceOffline, Message: m.err.Error(), Attempts: &refund}) {
			l.parked.push(e)
		}
	case errors.Is(m.err, escpos.ErrPaperOut), errors.Is(m.err, escpos.ErrCoverOpen),
		errors.Is(m.err, escpos.ErrBusy), errors.Is(m.err, escpos.ErrPrinterFault):
		// Not ready is not a failure: wait for the printer, spend nothing.
		l.m.IncAttempt(l.name, "not_ready")
		st := stateOf(m.err)
		l.setState(st, m.err)
		if e.timedOut {
			l.timeout(e, reasonFor(st), m.err.Error())
			return
		}
		if l.move(e, spool.StateQueued, spool.Change{Reason: string(st), Message: m.err.Error(), Attempts: &refund}) {
			l.queue.push(e)
		}
	default:
		l.m.IncAttempt(l.name, "failed")
		l.failures++
		l.setState("", m.err)
		switch {
		case e.timedOut:
			l.timeout(e, spool.ReasonNoAck, m.err.Error())
		case l.maxAttempts > 0 && e.task.Attempts >= l.maxAttempts:
			l.move(e, spool.StateFailed, spool.Change{Reason: spool.ReasonMaxAttempts, Message: m.err.Error()})
		default:
			delay := l.host.jitter(l.backoff, e.task.Attempts-1)
			due := l.now().Add(delay)
			if l.move(e, spool.StateRetryWait, spool.Change{Reason: "send failed", Message: m.err.Error(), NextDue: &due}) {
				l.waiting[e.task.TaskNo] = e
				l.host.after(redoKey(e.task.TaskNo), delay, l.name, msgRedo{taskNo: e.task.TaskNo})
			}
		}
	}
	if l.failures >= l.pc.FailoverFailures && l.pc.FailoverFailures > 0 {
		l.failover(fmt.Sprintf("%d failed attempts in a row", l.failures))
	}
}

// flushPrinted records a finished job's PRINTED that no next job carried.
func (l *lane) flushPrinted() {
	d := l.printedDue
	if d == nil {
		return
	}
	l.printedDue = nil
	conf := spool.Confirmation(d.conf.String())
	res, err := l.sp.TransitionBatch([]spool.Move{{TaskNo: d.e.task.TaskNo, From: d.e.task.State, Path: []spool.State{spool.StatePrinted}, Change: spool.Change{Confirmation: conf}}})
	l.moveErr = err
	if err != nil {
		l.log.Error("spool could not record a job's outcome; the job is kept and the write retried", "task_no", d.e.task.TaskNo, "err", err)
		l.holdPrinted(d)
		return
	}
	l.recordPrinted(d.e, conf, res[0])
}

// recordPrinted takes the result of a PRINTED move of e.
func (l *lane) recordPrinted(e *entry, conf spool.Confirmation, r spool.MoveResult) {
	if r.Err != nil {
		l.moveErr = r.Err
		l.log.Error("transition refused", "task_no", e.task.TaskNo, "from", e.task.State, "to", spool.StatePrinted, "err", r.Err)
		l.resync(e)
		return
	}
	from := e.task.State
	e.task = lite(r.Task)
	// Before logMove tells the observers (the page re-reads the printer's
	// details on that notice): the last ticket must already be this one.
	l.infoMu.Lock()
	l.lastTask, l.lastAt = r.Task.TaskNo, r.Task.UpdatedAt
	l.infoMu.Unlock()
	l.logMove(r.Task, from, spool.StatePrinted, spool.Change{Confirmation: conf})
	l.forget(e)
	l.m.ObservePrinted(l.name, string(conf), e.task.UpdatedAt.Sub(e.task.AcceptedAt))
	l.m.IncAttempt(l.name, "printed")
}

// holdPrinted keeps a printed job whose outcome could not be written in
// flight, so nothing else prints, and offers its outcome again shortly.
func (l *lane) holdPrinted(d *msgJobDone) {
	l.inflight = d.e
	l.printing.Store(true)
	l.host.after(jobDoneKey(d.e.task.TaskNo), time.Second, l.name, *d)
	l.trouble(d.e)
}

// unknown applies the printer's on_unknown policy to a task in UNKNOWN.
func (l *lane) unknown(e *entry) {
	if e.timedOut || !e.task.Deadline.After(l.now()) {
		l.timeoutOrKeep(e, spool.ReasonNoAck, "the link failed after the job was sent; it may or may not have printed")
		return
	}
	if l.pc.OnUnknown == "hold" {
		if l.move(e, spool.StateHeld, spool.Change{Reason: "outcome unknown: held for a manager"}) {
			l.waiting[e.task.TaskNo] = e
		} else if spoolTrouble(l.moveErr) {
			l.retryLater(e)
		}
		return
	}
	n, held := l.repeatedUnknown(e)
	if held {
		// Reprinting what keeps ending unknown loops until the deadline (a
		// day with timeout = "24h"), every copy marked, while the printer
		// may be eating the tickets after it, or printing each copy and
		// losing the link before it can say so: a manager decides.
		msg := fmt.Sprintf("the printer took the job %d times without confirming a copy (the link failed or it did not answer; max_unknown = %d): held for a manager instead of printing again; check the printer's output and its link, then retry or cancel it", n, l.pc.MaxUnknown)
		if l.move(e, spool.StateHeld, spool.Change{Reason: ReasonRepeatedUnknown, Message: msg}) {
			l.waiting[e.task.TaskNo] = e
		} else if spoolTrouble(l.moveErr) {
			l.retryLater(e)
		}
		return
	}
	if !e.reprintDue {
		// The next copy waits a backoff, as a failed send does: a link
		// that fails after every job must not reprint as fast as it
		// reconnects. The task stays UNKNOWN meanwhile.
		e.reprintDue = true
		l.waiting[e.task.TaskNo] = e
		l.host.after(redoKey(e.task.TaskNo), l.host.jitter(l.backoff, max(n, 1)-1), l.name, msgRedo{taskNo: e.task.TaskNo})
		return
	}
	e.reprintDue = false
	dup := true
	l.requeue(e, spool.Change{Reason: "outcome unknown: reprinting marked POSSIBLE DUPLICATE", PossibleDuplicate: &dup})
}

// ReasonRepeatedUnknown is the reason of a task held because its outcome
// was unknown max_unknown times: printed again, it would likely end the
// same way.
const ReasonRepeatedUnknown = "REPEATED_UNKNOWN"

// reasonUnconfirmed is the reason of an UNKNOWN entered because the printer,
// which took the job, never confirmed it: no answer to the completion probe
// (a job ending inside a command swallows it), where a link that failed
// mid-job or a restart is "outcome unknown" or its own reason.
const reasonUnconfirmed = "outcome unknown: the printer took the job and did not confirm it"

// repeatedUnknown reports how many copies of e's task have ended with the
// outcome unknown since its lane last confirmed a copy (of any task), this
// one included, and whether that reaches the printer's max_unknown. Every
// outcome-unknown counts: a printer that never confirms, a link lost after
// the bytes left, a printer that prints and drops the link before it
// answers. A confirmed copy resets the count, so a link that drops now and
// then (its tickets in between confirmed) does not hold good tickets. Until
// the lane's first confirmed copy, the task's unconfirmed outcomes in its
// stored history count too (before a restart); a history that cannot be
// read counts what this run saw.
func (l *lane) repeatedUnknown(e *entry) (int, bool) {
	if l.pc.MaxUnknown <= 0 {
		return 0, false
	}
	n := e.unknowns
	if e.confirmsAt != l.confirms {
		n = 0
	}
	if l.confirms == 0 {
		// Before this run's first confirmed copy, a printer that took the
		// job and never confirmed it counts from the stored history too
		// (outcomes before a restart). Lost links do not: a restart in the
		// middle of sends (a SIGKILL) must not hold the tickets it cut off.
		if t, err := l.sp.Get(e.task.TaskNo); err == nil {
			h := 0
			for _, te := range t.Timeline {
				if te.State == spool.StateUnknown && te.Reason == reasonUnconfirmed {
					h++
				}
			}
			n = max(n, h)
		}
	}
	return n, n >= l.pc.MaxUnknown
}

// requeue puts e back in the queue (or forwards it when failed over). If
// the spool cannot write, e is kept aside in its current state and the same
// decision is taken again after a backoff.
func (l *lane) requeue(e *entry, c spool.Change) {
	if l.failedOver != "" {
		if _, ok := l.sendTo(e, l.failedOver, c); !ok && spoolTrouble(l.moveErr) {
			l.retryLater(e)
		}
		return
	}
	if l.move(e, spool.StateQueued, c) {
		l.queue.push(e)
	} else if spoolTrouble(l.moveErr) {
		l.retryLater(e)
	}
}
