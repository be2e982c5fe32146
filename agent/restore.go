package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"printgate/spool"
)

// restorePage is how many tasks restore reads and hands a lane at a time:
// large enough that a page costs one read transaction and one inbox round,
// small enough that the first ticket prints within milliseconds and memory
// stays bounded whatever the backlog.
const restorePage = 512

// testHookRestoredPage, when set by a test, runs in restore each time a
// lane has taken a page, with the tasks restored so far: it lets a test
// hold the restore between pages.
var testHookRestoredPage func(lane string, restored int)

// restore rebuilds lanes and timers from the spool (DESIGN.md "Restart").
// Each lane's backlog streams to it in queue order, one page at a time, from
// one goroutine per lane; a lane takes a page before the next is read, so
// the running lanes print while later pages load and at most two pages of
// full task records per lane are in memory. A record that cannot be decoded
// fails that one task (CORRUPT_RECORD) and the rest carry on; only a spool
// that cannot be read at all fails the restore.
func (a *Agent) restore(ctx context.Context) error {
	lanes, err := a.spool.Lanes()
	if err != nil {
		return fmt.Errorf("restore lanes: %w", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(lanes))
	for i, name := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer a.recoverCore("restore of lane " + name)
			errs[i] = a.restoreLane(ctx, name, a.lane(name))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// restoreLane streams one lane's backlog to l, or, when l is nil, ends the
// tasks of a printer no longer configured.
func (a *Agent) restoreLane(ctx context.Context, name string, l *lane) error {
	var after []byte
	total := 0
	for {
		items, next, err := a.spool.QueuePage(name, after, restorePage)
		if err != nil {
			return fmt.Errorf("restore lane %s: %w", name, err)
		}
		tasks := make([]*spool.Task, 0, len(items))
		for _, it := range items {
			if it.Err != nil {
				a.quarantine(name, it)
				continue
			}
			t := it.Task
			if l == nil {
				a.orphan(t)
				continue
			}
			a.setOwner(t.TaskNo, name)
			tasks = append(tasks, t)
		}
		if l != nil && len(tasks) > 0 {
			ack := make(chan struct{})
			l.post(msgRestore{tasks: tasks, ack: ack})
			select {
			case <-ack:
			case <-ctx.Done():
				return nil
			}
			// Deadlines only once the lane holds the tasks: one already
			// past fires at once and must find its task there.
			for _, t := range tasks {
				a.scheduleDeadline(t)
			}
			total += len(tasks)
			if testHookRestoredPage != nil {
				testHookRestoredPage(name, total)
			}
		}
		if next == nil {
			break
		}
		after = next
	}
	if l != nil && total > 0 {
		a.log.Info("lane restored from spool", "printer", name, "tasks", total)
	}
	return nil
}

// quarantine ends a task whose record cannot be decoded: FAILED with reason
// CORRUPT_RECORD, with an event, instead of taking the whole agent down.
func (a *Agent) quarantine(lane string, it spool.QueueItem) {
	a.log.Error("task record is corrupt: the task fails and everything else goes on", "task_no", it.TaskNo, "printer", lane, "err", it.Err)
	t, err := a.spool.Quarantine(lane, it, it.Err)
	if err != nil {
		a.log.Error("could not record the corrupt task as FAILED", "task_no", it.TaskNo, "err", err)
		return
	}
	a.m.IncCorruptRecord()
	if obs := a.opts.Observe; obs != nil {
		obs(Event{Printer: lane, Task: t})
	}
}

// orphan fails a task whose printer is no longer configured: nobody would
// ever print it, so the store is told at once instead of at its deadline.
func (a *Agent) orphan(t *spool.Task) {
	msg := fmt.Sprintf("printer %q is no longer in the config", t.Lane())
	if _, err := a.spool.Transition(t.TaskNo, t.State, spool.StateFailed, spool.Change{Reason: spool.ReasonInvalid, Message: msg}); err != nil {
		a.log.Error("could not fail orphaned task", "task_no", t.TaskNo, "err", err)
		return
	}
	a.log.Error("task failed: its printer is no longer configured", "task_no", t.TaskNo, "printer", t.Lane())
}
