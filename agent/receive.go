package agent

// Where a task is received by a lane (new, restored, or handed over) and
// placed by its stored state.

import (
	"time"

	"printgate/drivers/escpos"
	"printgate/spool"
)

// receive takes a task into the lane according to its stored state. A task
// the lane already holds (delivered twice: restored and submitted, or
// forwarded twice) is taken once.
func (l *lane) receive(t *spool.Task) {
	if _, dup := l.held[t.TaskNo]; dup {
		l.log.Debug("task already held by this lane", "task_no", t.TaskNo)
		return
	}
	e := &entry{task: lite(t)}
	l.held[t.TaskNo] = e
	if l.failedOver != "" && forwardable(t.State) {
		if !l.forward(e) {
			l.place(e)
		}
		return
	}
	switch t.State {
	case spool.StateAccepted:
		switch {
		case l.inflight == nil && !l.stopping && l.queue.len() == 0 && len(l.toQueue) == 0 && (l.state == escpos.StateReady || l.state == ""):
			// It can go out at once: start takes it through QUEUED to
			// SENDING in one transaction instead of two.
			l.queue.push(e)
		case l.state == escpos.StateOffline:
			l.toPark = append(l.toPark, e)
		default:
			l.toQueue = append(l.toQueue, e)
		}
	case spool.StateQueued:
		l.queue.push(e)
	case spool.StateParked:
		l.parked.push(e)
	case spool.StateRetryWait:
		l.waiting[t.TaskNo] = e
		l.host.after(redoKey(t.TaskNo), l.retryWait(t.NextDue), l.name, msgRedo{taskNo: t.TaskNo})
	case spool.StateSending:
		l.restartedSending(e)
	case spool.StateUnknown:
		l.unknown(e)
	case spool.StateHeld:
		l.waiting[t.TaskNo] = e
	default:
		delete(l.held, t.TaskNo)
		l.log.Error("lane received a task in an unexpected state", "task_no", t.TaskNo, "state", t.State)
	}
}

// restartedSending handles a task found SENDING at start: the agent died
// with job bytes possibly out. Nobody knows whether paper came out.
func (l *lane) restartedSending(e *entry) {
	if l.move(e, spool.StateUnknown, spool.Change{Reason: "agent restarted while sending"}) {
		l.unknown(e)
		return
	}
	if spoolTrouble(l.moveErr) {
		l.retryLater(e)
	}
}

// place puts an entry the lane keeps back where its stored state says.
func (l *lane) place(e *entry) {
	switch e.task.State {
	case spool.StateParked:
		l.parked.push(e)
	case spool.StateRetryWait, spool.StateHeld, spool.StateUnknown, spool.StateSending:
		l.retryLater(e)
	default:
		l.queue.push(e)
	}
}

// detach takes e out of whichever list holds it, keeping it in held.
func (l *lane) detach(e *entry) {
	no := e.task.TaskNo
	if _, ok := l.waiting[no]; ok {
		delete(l.waiting, no)
		l.host.cancelTimer(redoKey(no))
		return
	}
	if !l.queue.remove(e) {
		l.parked.remove(e)
	}
	for i, x := range l.toQueue {
		if x == e {
			l.toQueue = append(l.toQueue[:i], l.toQueue[i+1:]...)
			break
		}
	}
	for i, x := range l.toPark {
		if x == e {
			l.toPark = append(l.toPark[:i], l.toPark[i+1:]...)
			break
		}
	}
}

// waitReason is the reason a task queued now waits with: the printer's
// state when the lane already knows it cannot print (paper out, cover
// open, an error, busy), so the task says why it waits whether the idle
// poll or the health check before a job noticed first; none otherwise.
func (l *lane) waitReason() string {
	switch l.state {
	case escpos.StatePaperOut, escpos.StateCoverOpen, escpos.StateError, escpos.StateBusy:
		return string(l.state)
	}
	return ""
}

// waitChange is the change a task queued now records: waitReason, and
// with it what explained the printer's last not-ready reading (its status
// bytes), as a task whose own health check found the printer not ready
// records them, so the page's details say the same whichever noticed
// first.
func (l *lane) waitChange() spool.Change {
	c := spool.Change{Reason: l.waitReason()}
	if c.Reason != "" && l.stateErr != nil {
		c.Message = l.stateErr.Error()
	}
	return c
}

// flush records the tasks collected in this inbox round: accepted tasks to
// QUEUED or PARKED and expired deadlines to TIMED_OUT (flushExpiring), each
// group in one transaction. A lane receiving thousands of tasks while its printer is
// offline parks them in a few fsyncs, so no ACCEPTED backlog builds up.
// Tasks whose write failed stay where the lane can still print them: an
// ACCEPTED task is as printable as a QUEUED one.
func (l *lane) flush() {
	if q := l.toQueue; len(q) > 0 {
		l.toQueue = nil
		moved, kept := l.moveAll(q, spool.StateQueued, l.waitChange())
		for _, e := range append(moved, kept...) {
			l.queue.push(e)
		}
	}
	if p := l.toPark; len(p) > 0 {
		l.toPark = nil
		moved, kept := l.moveAll(p, spool.StateParked, spool.Change{Reason: spool.ReasonDeviceOffline})
		for _, e := range append(moved, kept...) {
			l.parked.push(e)
		}
	}
	l.flushExpiring()
	if l.toQueue != nil || l.toPark != nil {
		// A resync during the flush handed tasks back: take them next round.
		l.post(msgWake{})
	}
}

// retryWait is how long until a retry stored as due at the wall time due:
// never more than the longest backoff the lane draws, so a wall clock set
// back while the agent was down does not hold a restored retry back by the
// size of its step.
func (l *lane) retryWait(due time.Time) time.Duration {
	wait := due.Sub(l.now())
	if c := l.backoff.Cap; c > 0 {
		wait = min(wait, c+time.Duration(float64(c)*l.backoff.Jitter))
	}
	return wait
}
