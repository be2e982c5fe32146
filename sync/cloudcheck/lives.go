package cloudcheck

import (
	"context"
	"fmt"
	"time"

	"printgate/spool"
)

// lives plays a task_no accepted again after its dedupe window (PROTOCOL.md
// §5 "A task_no's lives"): once the first life's events are acknowledged,
// the second life is a new task with a new seq whose n counts from 1
// again. A cloud that dedupes by (task_no, n) drops the second life's
// events as duplicates of the first's; it must dedupe by (task_no, seq, n).
func (ch *checker) lives(ctx context.Context) Result {
	c := ch.begin("events.lives")
	if why := ch.needAPI("read the events the cloud recorded"); why != "" {
		return c.skip("%s", why)
	}
	p, tok, err := ch.agent(ctx, "lives")
	if err != nil {
		return c.skip("%s", err)
	}
	defer p.close()
	taskNo := p.id + "_life_v1"
	life := func() (*spool.Task, error) {
		t, err := p.accept(taskNo)
		if err != nil {
			return nil, err
		}
		return t, p.advance(taskNo, spool.StateQueued, spool.StateSending, spool.StatePrinted)
	}
	drained := func() bool {
		d, err := p.sp.OutboxDepth()
		return err == nil && d == 0
	}
	first, err := life()
	if err != nil {
		return c.skip("%s", err)
	}
	p.start(tok)
	if !ch.until(ctx, ch.opts.Step, p.rec, drained) {
		return c.skip("the cloud did not acknowledge the first life's events within %s (see events.ack)", ch.opts.Step)
	}
	// The dedupe window passes on the played agent: its tombstone goes,
	// and the same task_no is a new task.
	p.skip.Add(int64(8 * 24 * time.Hour))
	if _, err := p.sp.Prune(ch.clock.Now()); err != nil {
		return c.skip("ending the first life: %v", err)
	}
	second, err := life()
	if err != nil {
		return c.skip("the second life: %v", err)
	}
	if !ch.until(ctx, ch.opts.Step, p.rec, drained) {
		return c.skip("the cloud did not acknowledge the second life's events within %s (see events.ack)", ch.opts.Step)
	}
	rec, err := ch.api.events(ctx, p.id)
	if err != nil {
		return c.fail("", "reading the cloud's events: %v", err)
	}
	count := map[uint64][]int{}
	for _, ev := range rec.Events {
		if ev.TaskNo == taskNo {
			count[ev.Seq] = append(count[ev.Seq], ev.N)
		}
	}
	if len(count[first.Seq]) != 4 || len(count[second.Seq]) != 4 {
		return c.fail("tell a task_no's lives apart by seq: dedupe events by (task_no, seq, n), §5, so a new life's n=1.. are new events",
			"the agent sent %s twice, seq %d then seq %d, n=1-4 each, every batch acknowledged; the cloud recorded seq %d n=%v and seq %d n=%v",
			taskNo, first.Seq, second.Seq, first.Seq, count[first.Seq], second.Seq, count[second.Seq])
	}
	return c.pass("%s", fmt.Sprintf("the cloud recorded both lives of %s (seq %d and %d, n=1-4 each)", taskNo, first.Seq, second.Seq))
}
