package agent

import (
	"fmt"

	"printgate/drivers/escpos"
	"printgate/spool"
)

// maybeFailover moves this printer's work to its backup once it has been not
// ready for failover_after with work waiting (DESIGN.md "Failover").
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
