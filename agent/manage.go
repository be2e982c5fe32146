package agent

// A manager's actions on a task a lane holds: cancel, and retry of a HELD
// task.

import (
	"fmt"

	"printgate/agent/api"
	"printgate/spool"
)

func (l *lane) cancel(m msgCancel) {
	if l.inflight != nil && l.inflight.task.TaskNo == m.taskNo {
		m.reply <- cancelResult{err: fmt.Errorf("%w: task %s is being printed", api.ErrConflict, m.taskNo)}
		return
	}
	e := l.held[m.taskNo]
	if e == nil {
		m.reply <- cancelResult{err: fmt.Errorf("%w: task %s is not waiting in lane %s", api.ErrConflict, m.taskNo, l.name)}
		return
	}
	if !spool.CanTransition(e.task.State, spool.StateCanceled) {
		m.reply <- cancelResult{err: fmt.Errorf("%w: task %s is %s", api.ErrConflict, m.taskNo, e.task.State)}
		return
	}
	l.detach(e)
	t, err := l.sp.Transition(m.taskNo, e.task.State, spool.StateCanceled, spool.Change{Reason: "canceled"})
	if err != nil {
		// Put it back: the task is still ours and still waiting.
		l.place(e)
		m.reply <- cancelResult{err: fmt.Errorf("%w: %v", api.ErrConflict, err)}
		return
	}
	l.log.Info("task CANCELED", "task_no", m.taskNo)
	delete(l.held, m.taskNo)
	l.host.taskEnded(m.taskNo)
	l.observe(Event{Printer: l.name, Task: t})
	m.reply <- cancelResult{task: t}
}

// retry queues a HELD task again for a manager (Agent.Retry): HELD →
// QUEUED in one compare-and-set transition, marked POSSIBLE DUPLICATE since
// its first copy may be on paper, on printer when one is named. The lane is
// the only writer of its tasks, so of two retries racing for the same task
// the first moves it and the second finds it no longer HELD: it prints once.
func (l *lane) retry(m msgRetry) {
	e := l.held[m.taskNo]
	if e == nil || e.task.State != spool.StateHeld || (l.inflight == e) {
		state := "not waiting in lane " + l.name
		if e != nil {
			state = string(e.task.State)
		}
		m.reply <- retryResult{err: fmt.Errorf("%w: task %s is %s, no longer HELD: it was retried or ended meanwhile", api.ErrConflict, m.taskNo, state)}
		return
	}
	to := m.printer
	if to == "" {
		// Where it is, or this printer's backup while failed over.
		to = l.name
		if l.failedOver != "" {
			to = l.failedOver
		}
	}
	l.detach(e)
	dup := true
	reason := "retried by a manager"
	if to != l.name {
		reason = "retried by a manager on " + to
	}
	c := spool.Change{PossibleDuplicate: &dup, Reason: reason}
	var t *spool.Task
	var ok bool
	if to == l.name {
		c.Target = &to
		if t, ok = l.movePath(e, []spool.State{spool.StateQueued}, c); ok {
			l.queue.push(e)
		}
	} else {
		t, ok = l.sendTo(e, to, c)
	}
	if !ok {
		err := l.moveErr
		if spoolTrouble(err) {
			// Still HELD on record: it stays held here, for another try.
			l.waiting[m.taskNo] = e
			m.reply <- retryResult{err: fmt.Errorf("retry %s: the spool could not record it: %w", m.taskNo, err)}
			return
		}
		// Refused: the stored task moved on; resync has taken it.
		m.reply <- retryResult{err: fmt.Errorf("%w: task %s changed meanwhile: %v", api.ErrConflict, m.taskNo, err)}
		return
	}
	m.reply <- retryResult{task: t}
}
