package agent

// Where the lane starts the next job: which task, its SENDING commit, and
// the Print call.

import (
	"context"
	"time"

	"printgate/drivers"
	"printgate/drivers/escpos"
	"printgate/spool"
)

// dispatch starts the next job when the printer may take one.
func (l *lane) dispatch() {
	l.maybeFailover()
	if l.failedOver != "" && l.retryFwd {
		l.retryFwd = false
		l.forwardAll()
	}
	if l.inflight != nil || l.stopping {
		return
	}
	if l.state == escpos.StateReady && l.parked.Len() > 0 {
		// The printer is back: parked tasks rejoin the queue in memory and
		// each goes PARKED → QUEUED → SENDING in the one commit that starts
		// it, instead of a rewrite of the whole backlog first.
		for _, e := range l.parked.drain() {
			l.queue.push(e)
		}
	}
	// An unknown state (no reading yet) is worth a try: Print checks the
	// printer's health before sending anything.
	if l.queue.len() == 0 || (l.state != "" && l.state != escpos.StateReady) {
		return
	}
	l.start(l.queue.pop(l.now(), l.ageAfter))
}

// start records e as SENDING and sends it; the outcome arrives as
// msgJobDone. The job is rendered from the task as stored by the SENDING
// transaction, so its banners (POSSIBLE DUPLICATE, FAILOVER, REPRINT) are
// the ones on record, never those of a stale copy.
func (l *lane) start(e *entry) {
	attempts := e.task.Attempts + 1
	path := []spool.State{spool.StateSending}
	if e.task.State == spool.StateAccepted || e.task.State == spool.StateParked {
		path = []spool.State{spool.StateQueued, spool.StateSending}
	}
	t, ok := l.startCommit(e, path, spool.Change{Attempts: &attempts})
	if !ok {
		if spoolTrouble(l.moveErr) {
			l.queue.push(e)
			if l.inflight == nil {
				l.wakeLater()
			}
			l.trouble(e)
		}
		return
	}
	l.inflight = e
	l.printing.Store(true)
	job, err := render(t, l)
	if err != nil {
		l.post(msgJobDone{e: e, err: &renderError{err}})
		return
	}
	ctx, cancel := context.WithTimeout(l.host.jobContext(), l.jobTimeout(len(job)))
	seq := t.Seq
	go func() {
		defer cancel()
		defer l.host.recoverCore("print job on " + l.name)
		conf, err := l.dev.Print(ctx, job, seq)
		l.post(msgJobDone{e: e, conf: conf, err: err})
	}()
}

// startCommit records e entering SENDING, together with the PRINTED of the
// job that just finished when there is one, in one transaction. If that
// commit fails, neither happens: the finished job is held in flight again
// (nothing else prints while its outcome is unrecorded) and e stays queued.
func (l *lane) startCommit(e *entry, path []spool.State, c spool.Change) (*spool.Task, bool) {
	d := l.printedDue
	if d == nil {
		return l.movePath(e, path, c)
	}
	l.printedDue = nil
	conf := spool.Confirmation(d.conf.String())
	done := d.e
	results, err := l.sp.TransitionBatch([]spool.Move{
		{TaskNo: done.task.TaskNo, From: done.task.State, Path: []spool.State{spool.StatePrinted}, Change: spool.Change{Confirmation: conf}},
		{TaskNo: e.task.TaskNo, From: e.task.State, Path: path, Change: c},
	})
	l.moveErr = err
	if err != nil {
		l.log.Error("spool could not record a job's outcome and the next job's start; both are kept and retried", "task_no", done.task.TaskNo, "next", e.task.TaskNo, "err", err)
		l.holdPrinted(d)
		return nil, false
	}
	l.recordPrinted(done, conf, results[0])
	r := results[1]
	if r.Err != nil {
		l.moveErr = r.Err
		l.log.Error("transition refused", "task_no", e.task.TaskNo, "from", e.task.State, "to", spool.StateSending, "err", r.Err)
		l.resync(e)
		return nil, false
	}
	from := e.task.State
	e.writeFails = 0
	e.task = lite(r.Task)
	l.logMove(r.Task, from, spool.StateSending, c)
	return r.Task, true
}

// jobTimeout bounds one Print call of n job bytes: the printer's
// job_timeout, stretched on a serial line by the time the job and any
// resync preamble owed to the printer take at its baud rate, so a large
// logo at 9600 baud is not cut off and reprinted in a loop.
func (l *lane) jobTimeout(n int) time.Duration {
	base := l.pc.JobTimeout
	if l.jobTimeoutAll > 0 {
		base = l.jobTimeoutAll
	}
	if base <= 0 {
		base = 30 * time.Second
	}
	if l.pc.Target.Scheme != drivers.SchemeSerial {
		return base
	}
	if r, ok := l.dev.(interface{ ResyncPending() int }); ok {
		n += r.ResyncPending()
	}
	return escpos.JobTimeout(base, n, l.pc.Target.Line.Baud)
}
