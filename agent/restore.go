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

// restore rebuilds lanes and timers from the spool (docs/DESIGN.md, "Dispatch": restart).
// Each lane's backlog streams to it in queue order, one page at a time, from
// one goroutine per lane; a lane takes a page before the next is read, so
// the running lanes print while later pages load and at most two pages of
// full task records per lane are in memory. A record that cannot be decoded
// fails that one task (CORRUPT_RECORD) and the rest carry on; only a spool
// that cannot be read at all fails the restore. The tasks of printers no
// longer configured are decided last, as a reload decides them (see
// restoreRemoved).
func (a *Agent) restore(ctx context.Context) error {
	lanes, err := a.spool.Lanes()
	if err != nil {
		return fmt.Errorf("restore lanes: %w", err)
	}
	var (
		wg      sync.WaitGroup
		removed []string
	)
	errs := make([]error, len(lanes))
	for i, name := range lanes {
		l := a.lane(name)
		if l == nil {
			removed = append(removed, name)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer a.recoverCore("restore of lane " + name)
			errs[i] = a.restoreLane(ctx, name, l)
		}()
	}
	wg.Wait()
	// Only once every configured lane holds its backlog: a task sent home
	// then reaches its lane once, as new work, and never also in a page
	// that lane's restore read after the move.
	for _, name := range removed {
		errs = append(errs, a.restoreRemoved(ctx, name))
	}
	return errors.Join(errs...)
}

// restoreLane streams one lane's backlog to l.
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
			a.setOwner(t.TaskNo, name)
			tasks = append(tasks, t)
		}
		if len(tasks) > 0 {
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
	if total > 0 {
		a.log.Info("lane restored from spool", "printer", name, "tasks", total)
	}
	return nil
}

// restoreRemoved decides the tasks found on printer name, which is no
// longer in the config, by the rules of a reload's sweep (handOn): a task
// failed over here from a printer still configured goes home (its target
// is its own printer again, so no FAILOVER banner); any other waits with
// reason PRINTER_REMOVED (PARKED, or HELD from outcome unknown) for a
// manager, its printer coming back, or its deadline. The removed printer's
// backup is not known any more, so nothing fails over from here.
func (a *Agent) restoreRemoved(ctx context.Context, name string) error {
	var after []byte
	moved, waiting := 0, 0
	for {
		items, next, err := a.spool.QueuePage(name, after, restorePage)
		if err != nil {
			return fmt.Errorf("restore tasks of removed printer %s: %w", name, err)
		}
		for _, it := range items {
			if it.Err != nil {
				a.quarantine(name, it)
				continue
			}
			t := it.Task
			switch a.handOn(ctx, t, name, "") {
			case handedOn:
				moved++
			default:
				// Waiting here, or not moved for spool trouble: the
				// agent answers for it (laneless) until its deadline.
				a.setOwner(t.TaskNo, name)
				waiting++
			}
			// After the hand over: a deadline already due must reach the
			// lane after the task does.
			a.scheduleDeadline(t)
		}
		if next == nil {
			break
		}
		after = next
	}
	if moved+waiting > 0 {
		a.log.Warn("tasks of a printer no longer in the config restored", "printer", name, "sent_home", moved, "waiting", waiting, "reason", ReasonPrinterRemoved)
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
