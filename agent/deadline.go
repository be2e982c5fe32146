package agent

// Where a task's timeout is decided: its one deadline is armed, reaches the
// lane holding it (or the agent, when none does), and ends the task
// TIMED_OUT with the reason the printer's state gives.

import (
	"errors"
	"fmt"
	"time"

	"printgate/drivers/escpos"
	"printgate/spool"
)

// scheduleDeadline arms the task's one absolute deadline. Deadlines are
// stored as wall times so they survive a restart; the remaining time is
// measured against the agent's clock, and then on the wheel's monotonic
// one. It is never more than the task's whole timeout (deadline less
// accept): a wall clock set back, at a restart, would otherwise add the
// size of its step to every deadline restored.
func (a *Agent) scheduleDeadline(t *spool.Task) {
	a.deadlines.After(t.TaskNo, remaining(t, a.opts.Clock.Now()), struct{}{})
}

// remaining is how long t has until its deadline as of now, at most its
// whole timeout.
func remaining(t *spool.Task, now time.Time) time.Duration {
	left := t.Deadline.Sub(now)
	if timeout := t.Deadline.Sub(t.AcceptedAt); timeout > 0 && left > timeout {
		return timeout
	}
	return left
}

// onDeadline delivers a deadline that passed to the lane that owns the
// task.
func (a *Agent) onDeadline(taskNo string, _ struct{}) {
	if !a.toOwner(taskNo, msgDeadline{taskNo: taskNo}) {
		// No lane holds it (its printer was removed): the deadline
		// is still owed, from the stored state.
		a.deadlineMissed(taskNo, "")
	}
}

// deadlineAgain delivers taskNo's deadline again after d, for a timeout
// that could not be recorded yet.
func (a *Agent) deadlineAgain(taskNo string, d time.Duration) {
	a.deadlines.After(taskNo, d, struct{}{})
}

// deadlineMissed handles a deadline that reached a lane not holding the
// task (from is that lane). The deadline is never dropped: it goes on to
// the lane that owns the task now, or, if no lane holds it (a bug), the
// task times out from its stored state.
func (a *Agent) deadlineMissed(taskNo, from string) {
	owner, ok := a.ownerOf(taskNo)
	var ol *lane
	if ok {
		ol = a.lane(owner)
	}
	if ok && owner != from && ol != nil {
		ol.post(msgDeadline{taskNo: taskNo})
		return
	}
	t, err := a.spool.Get(taskNo)
	if err != nil || t.State.Terminal() {
		a.dropOwner(taskNo)
		return
	}
	msg := "no lane held the task when its deadline passed"
	if ok && ol == nil {
		if t.State == spool.StateSending {
			// Its printer was just removed and is finishing this very job:
			// the job's outcome decides; look again in a second.
			a.deadlineAgain(taskNo, time.Second)
			return
		}
		msg = fmt.Sprintf("printer %q was removed from the config before the task printed", owner)
		a.log.Warn("deadline of a task whose printer was removed: timing it out", "task_no", taskNo, "state", t.State, "printer", owner)
	} else {
		a.log.Error("deadline of a task no lane holds: timing it out from the spool", "task_no", taskNo, "state", t.State)
	}
	t, err = a.spool.Transition(taskNo, t.State, spool.StateTimedOut, spool.Change{Reason: spool.ReasonNoAck, Message: msg})
	if err != nil {
		// Try again shortly: the deadline is owed until it is recorded.
		a.deadlineAgain(taskNo, time.Second)
		return
	}
	a.dropOwner(taskNo)
	a.m.IncTimeout(from, spool.ReasonNoAck)
	if obs := a.opts.Observe; obs != nil {
		obs(Event{Printer: from, Task: t})
	}
}

// deadline handles a task's deadline passing. The task times out at the end
// of the inbox round together with every other deadline of that round, in
// one transaction.
func (l *lane) deadline(taskNo string) {
	if l.inflight != nil && l.inflight.task.TaskNo == taskNo {
		l.inflight.timedOut = true
		return
	}
	if l.printedDue != nil && l.printedDue.e.task.TaskNo == taskNo {
		return // it printed; PRINTED is being recorded
	}
	e := l.held[taskNo]
	if e == nil {
		for _, x := range l.toQueue {
			if x.task.TaskNo == taskNo {
				e = x
			}
		}
	}
	if e == nil {
		l.host.deadlineMissed(taskNo, l.name)
		return
	}
	l.expiring = append(l.expiring, e)
}

// firstReadingWait bounds how long deadlines wait for a lane's first
// reading of its printer, so their reason is the printer's actual state: a
// status poll's own timeout and a little more.
const firstReadingWait = 10 * time.Second

// flushExpiring times out the deadlines collected in this inbox round, in
// one transaction (see flush).
func (l *lane) flushExpiring() {
	x := l.expiring
	if len(x) == 0 {
		return
	}
	if wait := l.started.Add(firstReadingWait).Sub(l.now()); l.state == "" && wait > 0 {
		// No reading of the printer yet (just started, deadlines that
		// passed while the agent was down): the reason must be the
		// state the printer is in, so wait for the first reading.
		if !l.expiryWake {
			l.expiryWake = true
			l.host.after(expireKey(l.name), wait, l.name, msgWake{})
		}
		return
	}
	l.expiring = nil
	l.expire(x)
}

// expire times out the entries whose deadline passed, grouped by reason.
// An entry whose write failed goes back where it was and its deadline is
// delivered again in a second.
func (l *lane) expire(list []*entry) {
	type why struct{ reason, msg string }
	groups := map[why][]*entry{}
	var order []why
	for _, e := range list {
		if l.held[e.task.TaskNo] != e {
			continue // gone meanwhile (printed, canceled)
		}
		if l.inflight == e {
			e.timedOut = true // started meanwhile: its outcome decides
			continue
		}
		l.detach(e)
		r, m := l.timeoutReason(e)
		k := why{r, m}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e)
	}
	for _, k := range order {
		moved, kept := l.moveAll(groups[k], spool.StateTimedOut, spool.Change{Reason: k.reason, Message: k.msg})
		for range moved {
			l.m.IncTimeout(l.name, k.reason)
		}
		for _, e := range kept {
			l.place(e)
			l.host.deadlineAgain(e.task.TaskNo, time.Second)
		}
	}
}

// timeoutReason says why e did not print in time: first from the state its
// printer is actually in, then from the task's own history.
func (l *lane) timeoutReason(e *entry) (string, string) {
	since := ""
	if !l.stateSince.IsZero() {
		since = fmt.Sprintf(" since %s", l.stateSince.Format(time.TimeOnly))
	}
	switch {
	case l.state == escpos.StateOffline:
		return spool.ReasonDeviceOffline, fmt.Sprintf("printer %s offline%s", l.name, since)
	case l.state == escpos.StatePaperOut:
		return spool.ReasonPaperOut, fmt.Sprintf("printer %s out of paper%s", l.name, since)
	case errors.Is(l.stateErr, escpos.ErrNoAnswer) && l.state != escpos.StateReady:
		return spool.ReasonNoAck, fmt.Sprintf("printer %s is connected but does not answer%s", l.name, since)
	case e.task.State == spool.StateRetryWait || e.task.State == spool.StateHeld || e.task.State == spool.StateUnknown || e.task.Attempts > 0:
		return spool.ReasonNoAck, fmt.Sprintf("printer %s did not confirm the job after %d attempts", l.name, e.task.Attempts)
	case l.state == "" && e.task.State == spool.StateParked:
		// No reading since start: the last thing seen was the printer offline.
		return spool.ReasonDeviceOffline, fmt.Sprintf("printer %s was offline and has not answered since", l.name)
	case l.state != escpos.StateReady && l.state != "":
		return spool.ReasonBusy, fmt.Sprintf("printer %s %s%s", l.name, l.state, since)
	}
	return spool.ReasonBusy, fmt.Sprintf("printer %s had %d tasks ahead of this one", l.name, l.queue.len()+l.parked.Len())
}

// reasonFor is the TIMED_OUT reason for a printer seen in state st.
func reasonFor(st escpos.PrinterState) string {
	switch st {
	case escpos.StateOffline:
		return spool.ReasonDeviceOffline
	case escpos.StatePaperOut:
		return spool.ReasonPaperOut
	}
	return spool.ReasonBusy
}

// timeout ends e TIMED_OUT and reports whether it moved.
func (l *lane) timeout(e *entry, reason, msg string) bool {
	if l.move(e, spool.StateTimedOut, spool.Change{Reason: reason, Message: msg}) {
		l.m.IncTimeout(l.name, reason)
		return true
	}
	return false
}

// timeoutOrKeep ends e TIMED_OUT, or keeps it aside to try again when the
// spool cannot write.
func (l *lane) timeoutOrKeep(e *entry, reason, msg string) {
	if !l.timeout(e, reason, msg) && spoolTrouble(l.moveErr) {
		l.retryLater(e)
	}
}
