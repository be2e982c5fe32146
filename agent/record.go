package agent

// How the lane records a task's transition in the spool, and what it does
// when the spool cannot write or refuses.

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"printgate/spool"
)

// move records a transition of e's task, compare-and-set on the state the
// lane last stored, and keeps the stored copy. It reports whether the task
// moved. When it did not, l.moveErr says why: spool trouble (disk full, I/O:
// see spoolTrouble) leaves the task as it was for the caller to keep and
// retry; a refusal means the lane's copy was stale, and the task has been
// handed back to the lane from its stored state (resync).
func (l *lane) move(e *entry, to spool.State, c spool.Change) bool {
	_, ok := l.movePath(e, []spool.State{to}, c)
	return ok
}

// movePath is move through several states in one transaction (one fsync);
// only the final state is logged and observed, the timeline has every step.
// It also returns the full task as stored, body included.
func (l *lane) movePath(e *entry, path []spool.State, c spool.Change) (*spool.Task, bool) {
	from := e.task.State
	to := path[len(path)-1]
	t, err := l.sp.TransitionPath(e.task.TaskNo, from, path, c)
	l.moveErr = err
	if err != nil {
		if spoolTrouble(err) {
			e.writeFails++
			l.log.Error("spool could not record a transition; the task is kept and the write retried", "task_no", e.task.TaskNo, "from", from, "to", to, "err", err)
			return nil, false
		}
		l.log.Error("transition refused", "task_no", e.task.TaskNo, "from", from, "to", to, "err", err)
		l.resync(e)
		return nil, false
	}
	e.writeFails = 0
	e.task = lite(t)
	l.logMove(t, from, to, c)
	if to.Terminal() {
		l.forget(e)
	}
	return t, true
}

// moveAll moves every entry to state to in one transaction and returns the
// entries that moved (with their stored copies updated) and those the spool
// could not write, each in order. The caller keeps the ones that did not
// move where they were, so a spool that cannot write (disk full) loses no
// task from the lane. Entries whose copy was stale are resynced and in
// neither list.
func (l *lane) moveAll(entries []*entry, to spool.State, c spool.Change) (moved, kept []*entry) {
	if len(entries) == 0 {
		return nil, nil
	}
	moves := make([]spool.Move, len(entries))
	for i, e := range entries {
		moves[i] = spool.Move{TaskNo: e.task.TaskNo, From: e.task.State, Path: []spool.State{to}, Change: c}
	}
	results, err := l.sp.TransitionBatch(moves)
	if err != nil {
		l.log.Error("batch transition failed; tasks keep their state", "to", to, "tasks", len(entries), "err", err)
		l.wakeLater()
		return nil, entries
	}
	for i, r := range results {
		e := entries[i]
		if r.Err != nil {
			l.moveErr = r.Err
			l.log.Error("transition refused", "task_no", e.task.TaskNo, "from", e.task.State, "to", to, "err", r.Err)
			l.resync(e)
			continue
		}
		from := e.task.State
		e.task = lite(r.Task)
		l.log.Info("task "+string(to), "task_no", e.task.TaskNo, "from", from, "state", to, "attempt", e.task.Attempts, "reason", c.Reason)
		l.observe(Event{Printer: l.name, Task: r.Task})
		if to.Terminal() {
			l.forget(e)
		}
		moved = append(moved, e)
	}
	return moved, kept
}

func (l *lane) logMove(t *spool.Task, from, to spool.State, c spool.Change) {
	attrs := []any{"task_no", t.TaskNo, "from", from, "state", to, "attempt", t.Attempts}
	if c.Reason != "" {
		attrs = append(attrs, "reason", c.Reason)
	}
	if c.Message != "" {
		attrs = append(attrs, "message", c.Message)
	}
	if t.Target != "" {
		attrs = append(attrs, "target", t.Target)
	}
	level := slog.LevelInfo
	switch to {
	case spool.StateTimedOut, spool.StateFailed, spool.StateUnknown, spool.StateHeld:
		level = slog.LevelWarn
	}
	l.log.Log(context.Background(), level, "task "+string(to), attrs...)
	l.observe(Event{Printer: l.name, Task: t})
}

// forget drops a task the lane no longer holds: finished, or handed on.
func (l *lane) forget(e *entry) {
	no := e.task.TaskNo
	delete(l.held, no)
	if e.task.State.Terminal() {
		l.host.taskEnded(no)
	}
}

// resync handles a move the spool refused: the lane's copy of the task was
// stale (compare-and-set failed) or its decision illegal. The stored task is
// the authority: the lane drops its copy and, if the task is still waiting
// to print here, takes it again from its stored state. A refusal is never
// applied silently and never loses the task.
func (l *lane) resync(e *entry) {
	no := e.task.TaskNo
	delete(l.held, no)
	t, err := l.sp.Get(no)
	switch {
	case err != nil:
		l.log.Error("task unreadable after a refused transition", "task_no", no, "err", err)
	case t.State.Terminal():
		l.host.taskEnded(no)
	case errors.Is(l.moveErr, spool.ErrIllegalTransition):
		// The lane asked for a move the state table forbids: a bug, not a
		// race. Leave the task to its deadline rather than loop; the
		// deadline reaches it even though no lane holds it (deadlineMissed).
		l.log.Error("lane asked for an illegal transition; the task waits for its deadline", "task_no", no, "state", t.State)
	case t.Lane() == l.name:
		l.receive(t)
	default:
		l.host.handTo(t)
	}
}

// spoolTrouble reports whether a failed move was the spool failing to write
// (disk full, I/O) rather than a refusal: the task is still the lane's and
// the move must be tried again.
func spoolTrouble(err error) bool {
	return err != nil && !errors.Is(err, spool.ErrIllegalTransition) && !errors.Is(err, spool.ErrStateChanged) && !errors.Is(err, spool.ErrNotFound)
}

// wakeLater makes the lane look at its work again in a second, after a
// spool write failed.
func (l *lane) wakeLater() {
	l.host.after(wakeKey(l.name), time.Second, l.name, msgWake{})
}

// retryLater holds e aside and acts on it again after a backoff that grows
// with its failed writes (1 s, 2 s, … 30 s): the write that failed is
// retried from the task's stored state by redo.
func (l *lane) retryLater(e *entry) {
	n := min(max(e.writeFails, 1), 6)
	delay := min(time.Second<<(n-1), 30*time.Second)
	l.waiting[e.task.TaskNo] = e
	l.host.after(redoKey(e.task.TaskNo), delay, l.name, msgRedo{taskNo: e.task.TaskNo})
	l.trouble(e)
}

// trouble tells observers that e's next state could not be recorded and
// will be tried again; called once the retry is scheduled, so a test that
// waits for it can move the clock past the retry.
func (l *lane) trouble(e *entry) {
	l.observe(Event{Printer: l.name, Task: e.task, Err: l.moveErr})
}

// redo acts on a task held aside, by its stored state: a retry that is due,
// an outcome-unknown policy or a restart re-arm whose write failed before.
func (l *lane) redo(e *entry) {
	no := e.task.TaskNo
	switch e.task.State {
	case spool.StateRetryWait:
		delete(l.waiting, no)
		l.requeue(e, spool.Change{Reason: "retry due"})
	case spool.StateUnknown:
		delete(l.waiting, no)
		l.unknown(e)
	case spool.StateSending:
		delete(l.waiting, no)
		l.restartedSending(e)
	}
}
