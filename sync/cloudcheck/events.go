package cloudcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"printgate/spool"
	"printgate/sync/wire"
)

var eventsNames = []string{"events.order", "events.ack", "events.dedupe", "events.gap", "events.lives"}

// eventKey names one event as the cloud dedupes it.
type eventKey struct {
	taskNo string
	seq    uint64
	n      int
}

func (k eventKey) String() string { return fmt.Sprintf("%s seq=%d n=%d", k.taskNo, k.seq, k.n) }

// events fills a played agent's outbox before it connects (four tasks
// stored out of task_no order, one with a gap in n as the outbox cap
// leaves), cuts the connection on the first events_ack so the agent
// resends, and reads back what the cloud recorded.
func (ch *checker) events(ctx context.Context) []Result {
	p, tok, err := ch.agent(ctx, "events")
	if err != nil {
		return ch.skipAll(eventsNames, err.Error())
	}
	defer p.close()
	gapTask := p.id + "_ev_G_v1"
	for _, letter := range []string{"C", "A", "B", "G"} {
		taskNo := p.id + "_ev_" + letter + "_v1"
		if _, err := p.accept(taskNo); err != nil {
			return ch.skipAll(eventsNames, err.Error())
		}
		if err := p.advance(taskNo, spool.StateQueued, spool.StateSending, spool.StatePrinted); err != nil {
			return ch.skipAll(eventsNames, err.Error())
		}
	}
	// The gap: n 2 and 3 of the last task leave the outbox unsent.
	depth, err := p.sp.OutboxDepth()
	if err == nil {
		var evs []spool.OutboxEvent
		evs, err = p.sp.ReadOutbox(depth)
		var drop [][]byte
		for _, ev := range evs {
			if ev.TaskNo == gapTask && (ev.N == 2 || ev.N == 3) {
				drop = append(drop, ev.Key)
			}
		}
		if err == nil {
			err = p.sp.AckOutbox(drop)
		}
	}
	if err != nil {
		return ch.skipAll(eventsNames, "preparing the agent's outbox: "+err.Error())
	}
	var cut atomic.Bool
	p.rec.setCut(func(s seen) bool {
		_, ok := s.msg.(*wire.EventsAck)
		return ok && s.dir == fromCloud && cut.CompareAndSwap(false, true)
	})
	p.start(tok)
	drained := ch.until(ctx, ch.opts.Step, p.rec, func() bool {
		d, err := p.sp.OutboxDepth()
		return err == nil && d == 0 && cut.Load()
	})
	p.rec.setCut(nil)
	list := p.rec.snapshot()

	// What the agent sent, in order, and how often each event.
	var sent []eventKey
	sends := map[eventKey]int{}
	batches := map[string]bool{}
	var unknown []string
	conns := map[int]bool{}
	for _, s := range list {
		if s.msg == nil {
			continue
		}
		switch m := s.msg.(type) {
		case *wire.Events:
			if s.dir != toCloud {
				continue
			}
			batches[m.Batch] = true
			conns[s.conn] = true
			for _, ev := range m.Events {
				k := eventKey{ev.TaskNo, ev.Seq, ev.N}
				if sends[k] == 0 {
					sent = append(sent, k)
				}
				sends[k]++
			}
		case *wire.EventsAck:
			if s.dir == fromCloud && !batches[m.Batch] {
				unknown = append(unknown, m.Batch)
			}
		}
	}
	var rec apiEvents
	var recErr error
	if ch.api != nil {
		rec, recErr = ch.api.events(ctx, p.id)
	}
	var out []Result
	if ch.wanted("events.order") {
		out = append(out, ch.checkOrder(rec, recErr, sent))
	}
	if ch.wanted("events.ack") {
		out = append(out, ch.checkEventsAck(p, list, drained, unknown, batches, conns, rec, recErr, sent))
	}
	if ch.wanted("events.dedupe") {
		out = append(out, ch.checkDedupe(rec, recErr, sends))
	}
	if ch.wanted("events.gap") {
		out = append(out, ch.checkGap(rec, recErr, gapTask, sends))
	}
	if ch.wanted("events.lives") {
		out = append(out, ch.lives(ctx))
	}
	return out
}

// recorded returns the keys of the cloud's record in its order.
func recorded(rec apiEvents) []eventKey {
	out := make([]eventKey, len(rec.Events))
	for i, ev := range rec.Events {
		out[i] = eventKey{ev.TaskNo, ev.Seq, ev.N}
	}
	return out
}

func (ch *checker) checkOrder(rec apiEvents, recErr error, sent []eventKey) Result {
	c := ch.begin("events.order")
	if why := ch.needAPI("read the events the cloud recorded"); why != "" {
		return c.skip("%s", why)
	}
	if recErr != nil {
		return c.fail("", "reading the cloud's events: %v", recErr)
	}
	if len(sent) == 0 {
		return c.skip("the agent sent no events")
	}
	if err := (&wire.Events{Batch: "sent", Events: toEvents(sent)}).Ordered(); err != nil {
		return c.skip("the agent itself sent its events out of order: %v", err)
	}
	var first []eventKey
	seenKey := map[eventKey]bool{}
	for _, k := range recorded(rec) {
		if !seenKey[k] {
			seenKey[k] = true
			first = append(first, k)
		}
	}
	for i, k := range sent {
		if i >= len(first) {
			return c.fail("record every event of a batch you acknowledge", "the cloud recorded %d of the %d events sent; %s is missing", len(first), len(sent), k)
		}
		if first[i] != k {
			return c.fail("apply a batch's events in the order of the frame (task_no, then n): a task's later state must not be overwritten by an earlier one",
				"event %d of the agent's batch was %s but the cloud recorded %s in its place: the batch was stored out of the order sent", i+1, k, first[i])
		}
	}
	return c.pass("the cloud recorded the %d events in the order sent (task_no, then n), across %s",
		len(sent), plural(countTasks(sent), "task", "tasks"))
}

func toEvents(keys []eventKey) []wire.Event {
	out := make([]wire.Event, len(keys))
	for i, k := range keys {
		out[i] = wire.Event{TaskNo: k.taskNo, Seq: k.seq, N: k.n, State: spool.StateAccepted}
	}
	return out
}

func countTasks(keys []eventKey) int {
	m := map[string]bool{}
	for _, k := range keys {
		m[k.taskNo] = true
	}
	return len(m)
}

func (ch *checker) checkEventsAck(p *player, list []seen, drained bool, unknown []string, batches map[string]bool, conns map[int]bool,
	rec apiEvents, recErr error, sent []eventKey) Result {
	c := ch.begin("events.ack")
	if len(batches) == 0 {
		return c.fail("", "the agent sent no events batch (it never got online? see handshake.welcome)")
	}
	if len(unknown) > 0 {
		return c.fail("answer an events frame with events_ack carrying that frame's batch id, once its events are stored; never an id you did not receive",
			"the cloud sent events_ack for %s, which the agent never sent (it sent %s)", quoteList(unknown), plural(len(batches), "batch", "batches"))
	}
	if errs := cloudErrors(list); errs != "" {
		return c.fail("take every events frame §5 allows (an event's optional fields may be empty)", "the cloud refused the agent's frames: %s", errs)
	}
	if !drained {
		d, _ := p.sp.OutboxDepth()
		return c.fail("answer every events frame with events_ack {batch} once its events are stored",
			"%s still wait for an events_ack after %v", plural(d, "event", "events"), ch.opts.Step)
	}
	seen := fmt.Sprintf("%s sent over %s, each acknowledged by its own id; the agent's outbox emptied",
		plural(len(batches), "batch", "batches"), plural(len(conns), "connection", "connections"))
	if ch.api == nil {
		return c.pass("%s (the cloud's record was not read: %s)", seen, ch.noAPI)
	}
	if recErr != nil {
		return c.fail("", "%s; reading the cloud's events: %v", seen, recErr)
	}
	have := map[eventKey]bool{}
	for _, k := range recorded(rec) {
		have[k] = true
	}
	var missing []string
	for _, k := range sent {
		if !have[k] {
			missing = append(missing, k.String())
		}
	}
	if len(missing) > 0 {
		return c.fail("send events_ack only once the batch's events are stored: the agent deletes them at the ack",
			"%s; but the cloud's record lacks %s", seen, strings.Join(missing, ", "))
	}
	return c.pass("%s; every acknowledged event is in the cloud's record", seen)
}

func quoteList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}

func (ch *checker) checkDedupe(rec apiEvents, recErr error, sends map[eventKey]int) Result {
	c := ch.begin("events.dedupe")
	if why := ch.needAPI("read the events the cloud recorded"); why != "" {
		return c.skip("%s", why)
	}
	if recErr != nil {
		return c.fail("", "reading the cloud's events: %v", recErr)
	}
	resent := 0
	for _, n := range sends {
		if n > 1 {
			resent++
		}
	}
	if resent == 0 {
		return c.skip("the agent resent no event (its first events_ack was not lost), so there was nothing to dedupe")
	}
	count := map[eventKey]int{}
	var twice []eventKey
	for _, k := range recorded(rec) {
		count[k]++
		if count[k] == 2 {
			twice = append(twice, k)
		}
	}
	if len(twice) > 0 {
		names := make([]string, 0, 3)
		for _, k := range twice[:min(3, len(twice))] {
			names = append(names, k.String())
		}
		return c.fail("deduplicate events on (task_no, n): the agent resends every batch whose ack it did not get, under a new batch id",
			"after the lost events_ack the agent resent %s; the cloud recorded %s twice (%s…)",
			plural(resent, "event", "events"), plural(len(twice), "event", "events"), strings.Join(names, ", "))
	}
	return c.pass("the agent resent %s after its events_ack was lost with the connection; the cloud recorded each (task_no, seq, n) once", plural(resent, "event", "events"))
}

func (ch *checker) checkGap(rec apiEvents, recErr error, gapTask string, sends map[eventKey]int) Result {
	c := ch.begin("events.gap")
	if why := ch.needAPI("read the events the cloud recorded"); why != "" {
		return c.skip("%s", why)
	}
	if recErr != nil {
		return c.fail("", "reading the cloud's events: %v", recErr)
	}
	var seq uint64 // the gap task's, as its events carry it
	for k := range sends {
		if k.taskNo == gapTask {
			seq = k.seq
		}
	}
	if sends[eventKey{gapTask, seq, 1}] == 0 || sends[eventKey{gapTask, seq, 4}] == 0 {
		return c.skip("the agent did not send %s n=1 and n=4", gapTask)
	}
	var ns []int
	for _, ev := range rec.Events {
		if ev.TaskNo == gapTask {
			ns = append(ns, ev.N)
		}
	}
	if !slices.Contains(ns, 1) || !slices.Contains(ns, 4) {
		return c.fail("record events as they come, gaps in n included: the outbox cap removes superseded events (§5), and n=2 never arrives",
			"the agent sent %s n=1 and n=4 (2 and 3 were dropped from its outbox); the cloud recorded n=%v", gapTask, ns)
	}
	if rec.Gaps == nil {
		return c.fail("list each task's missing n in the test API's events answer, \"gaps\" (§7), so the gap is reported rather than hidden",
			"the cloud recorded n=1 and n=4 of %s, but its events answer has no gaps list", gapTask)
	}
	for _, g := range *rec.Gaps {
		if g.TaskNo == gapTask && g.From == 2 && g.To == 3 {
			return c.pass("the cloud took %s n=1 and n=4 and reports n=2–3 missing", gapTask)
		}
	}
	return c.fail("report a task's missing n in \"gaps\" (§7)", "the cloud recorded n=1 and n=4 of %s but reports gaps %+v, not 2–3", gapTask, *rec.Gaps)
}
