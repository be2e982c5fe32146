package agent

// Failover and every move of a task to another printer. A lane moves a
// task it holds through sendTo (to its backup on failover, a retry while
// failed over, a manager's retry elsewhere); a removed printer's tasks move
// through handOn. Both end in handTo, which gives the task to its new lane.

import (
	"context"
	"fmt"
	"time"

	"printgate/drivers/escpos"
	"printgate/spool"
)

// forwardable reports whether a task in state s may move to a backup.
func forwardable(s spool.State) bool {
	switch s {
	case spool.StateAccepted, spool.StateQueued, spool.StateParked, spool.StateRetryWait:
		return true
	}
	return false
}

// maybeFailover moves this printer's work to its backup once it has been not
// ready for failover_after with work waiting (docs/DESIGN.md, "Dispatch": failover).
func (l *lane) maybeFailover() {
	if l.pc.Backup == "" || l.failedOver != "" || l.state == escpos.StateReady || l.state == "" {
		return
	}
	if l.queue.len()+l.parked.Len() == 0 {
		return
	}
	down := l.now().Sub(l.stateSince)
	if down < l.pc.FailoverAfter {
		return
	}
	l.failover(fmt.Sprintf("not ready (%s) for %s with work waiting", l.state, down.Round(1e9)))
}

// failover routes this printer's work to its backup: queued, parked and
// retry-waiting tasks move there in order, marked with the FAILOVER banner,
// and so does every task that arrives until failback.
func (l *lane) failover(why string) {
	if l.pc.Backup == "" || l.failedOver != "" {
		return
	}
	l.failedOver = l.pc.Backup
	l.m.IncFailover(l.name, l.failedOver)
	l.log.Warn("failover", "to", l.failedOver, "why", why)
	l.observe(Event{Printer: l.name, Switch: true, FailoverTo: l.failedOver})
	l.forwardAll()
	l.host.cancelTimer(failoverKey(l.name))
	if l.state == escpos.StateReady {
		l.host.after(failbackKey(l.name), l.pc.FailbackAfter, l.name, msgFailback{})
	}
}

// forwardAll moves every forwardable task of this lane to the backup, in
// seq order. Tasks the spool could not move stay here, and are tried again
// on the lane's next wake while it is failed over.
func (l *lane) forwardAll() {
	moving := append(l.parked.drain(), l.queue.drain()...)
	// Tasks backing off after this printer's failures go too: the backup
	// can print them now. HELD tasks wait for a manager wherever they are.
	for no, e := range l.waiting {
		if e.task.State == spool.StateRetryWait {
			delete(l.waiting, no)
			l.host.cancelTimer(redoKey(no))
			moving = append(moving, e)
		}
	}
	moving = append(moving, l.toQueue...)
	moving = append(moving, l.toPark...)
	l.toQueue, l.toPark = nil, nil
	sortBySeq(moving)
	for _, e := range moving {
		if !l.forward(e) {
			l.place(e)
		}
	}
}

// forward moves a task to the backup this printer failed over to. It
// returns false when the spool could not record the move: the caller keeps
// the task and the lane tries again on its next wake.
func (l *lane) forward(e *entry) bool {
	to := l.failedOver
	if _, ok := l.sendTo(e, to, spool.Change{Reason: "failover " + l.name + " → " + to}); ok {
		return true
	}
	if spoolTrouble(l.moveErr) {
		l.wakeLater()
		l.trouble(e)
		return false
	}
	return true // refused: resync took care of it
}

// sendTo is every move of a task this lane holds to another printer: the
// backup on failover (forward), a retry or reprint while failed over
// (requeue), a manager's retry elsewhere (retry). It records e QUEUED on
// printer to, compare-and-set, and hands it to that printer's lane. When
// the spool did not record it, it returns false and l.moveErr says why;
// each caller keeps the task its own way.
func (l *lane) sendTo(e *entry, to string, c spool.Change) (*spool.Task, bool) {
	c.Target = &to
	t, ok := l.movePath(e, []spool.State{spool.StateQueued}, c)
	if ok {
		l.handOver(e, t)
	}
	return t, ok
}

// handOver gives a task this lane moved to another lane.
func (l *lane) handOver(e *entry, t *spool.Task) {
	delete(l.held, t.TaskNo)
	if l.host.handTo(t) {
		return
	}
	// The lane it moved to was removed by a reload meanwhile: the task is
	// on record there, and the reload's sweep or its deadline reaches it.
	l.log.Warn("task moved to a printer that is no longer configured", "task_no", t.TaskNo, "to", t.Lane())
}

// handTo makes t's lane the owner of t and posts t to it; it reports false
// when no such lane runs (a reload removed it meanwhile): the task is on
// record there, and the reload's sweep or its deadline reaches it. Every
// task recorded on another printer reaches that printer's lane through
// here: from a lane (handOver, resync), a removed printer's sweep (handOn)
// and a manager's retry of a removed printer's task (retryLaneless).
func (a *Agent) handTo(t *spool.Task) bool {
	a.setOwner(t.TaskNo, t.Lane())
	if l := a.lane(t.Lane()); l != nil {
		l.post(msgTask{task: t})
		return true
	}
	return false
}

// maybeFailback routes work back to this printer once it has been ready for
// failback_after. Tasks already moved stay with the backup, which prints
// them; only new work comes back.
func (l *lane) maybeFailback() {
	if l.failedOver == "" || l.state != escpos.StateReady {
		return
	}
	if up := l.now().Sub(l.stateSince); up < l.pc.FailbackAfter {
		l.host.after(failbackKey(l.name), l.pc.FailbackAfter-up, l.name, msgFailback{})
		return
	}
	l.log.Warn("failback", "from", l.failedOver)
	l.m.IncFailover(l.failedOver, l.name)
	l.failedOver = ""
	l.failures = 0
	l.observe(Event{Printer: l.name, Switch: true})
}

type handOnResult int

const (
	handedOn handOnResult = iota
	waits
	notMoved
)

// handOn moves one task of removed printer name (see sweep), compare-and-
// set on its stored state; a spool that cannot write is tried again a few
// times before the task is left to its deadline.
func (a *Agent) handOn(ctx context.Context, t *spool.Task, name, backup string) handOnResult {
	dest := ""
	why := ""
	switch {
	case t.Printer != name && a.lane(t.Printer) != nil:
		dest, why = t.Printer, fmt.Sprintf("back to %s: %s was removed from the config", t.Printer, name)
	case backup != "" && a.lane(backup) != nil:
		dest, why = backup, fmt.Sprintf("failover %s → %s: %s was removed from the config", name, backup, name)
	}
	msg := fmt.Sprintf("printer %s was removed from the config and no other printer takes its tasks; retry it on another printer, or add %s back", name, name)
	var path []spool.State
	c := spool.Change{Reason: ReasonPrinterRemoved, Message: msg}
	switch {
	case t.State == spool.StateHeld:
		return waits // it waits for a manager already
	case t.State == spool.StateSending:
		// Left SENDING by a job that outlived the stop: nobody knows
		// whether it printed, so a manager decides.
		path = []spool.State{spool.StateUnknown, spool.StateHeld}
	case t.State == spool.StateUnknown:
		path = []spool.State{spool.StateHeld}
	case dest != "" && forwardable(t.State):
		path = []spool.State{spool.StateQueued}
		c = spool.Change{Target: &dest, Reason: why}
	case spool.CanTransition(t.State, spool.StateHeld):
		path = []spool.State{spool.StateHeld}
	default:
		// HELD cannot be reached from this state in the spool's state
		// table: parked, it waits the same way (a manager cancels or
		// reprints it, or the printer comes back).
		path = []spool.State{spool.StateParked}
	}
	for try := 0; ; try++ {
		nt, err := a.spool.TransitionPath(t.TaskNo, t.State, path, c)
		if err == nil {
			a.log.Warn("task of a removed printer "+string(nt.State), "task_no", nt.TaskNo, "printer", name, "target", nt.Target, "reason", c.Reason)
			a.observe(Event{Printer: name, Task: nt})
			if dest != "" && nt.State == spool.StateQueued {
				a.handTo(nt)
				return handedOn
			}
			a.setOwner(nt.TaskNo, name)
			return waits
		}
		if !spoolTrouble(err) || try >= 3 {
			a.log.Error("reload: a removed printer's task could not be moved; it times out at its deadline", "task_no", t.TaskNo, "printer", name, "err", err)
			return notMoved
		}
		// On the agent's clock, as every other retry: a test's fake clock
		// decides when it is due.
		wait := a.opts.Clock.NewTimer(time.Second)
		select {
		case <-wait.C():
		case <-ctx.Done():
			wait.Stop()
			return notMoved
		case <-a.quit:
			wait.Stop()
			return notMoved
		}
	}
}
