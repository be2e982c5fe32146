package link

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"printgate/spool"
	"printgate/sync/wire"
)

// memOutbox is an Outbox in memory, for events the spool would never
// write.
type memOutbox struct {
	mu  sync.Mutex
	evs []spool.OutboxEvent
}

func (o *memOutbox) ReadOutbox(n int) ([]spool.OutboxEvent, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]spool.OutboxEvent(nil), o.evs[:min(n, len(o.evs))]...), nil
}

func (o *memOutbox) AckOutbox(keys [][]byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, k := range keys {
		for i, ev := range o.evs {
			if string(ev.Key) == string(k) {
				o.evs = append(o.evs[:i], o.evs[i+1:]...)
				break
			}
		}
	}
	return nil
}

func (o *memOutbox) OutboxDepth() (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.evs), nil
}

func outboxEvent(taskNo string, n int, state spool.State) spool.OutboxEvent {
	return spool.OutboxEvent{
		Event: spool.Event{TaskNo: taskNo, N: n, State: state, Printer: "kitchen", Origin: spool.OriginCloud,
			At: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)},
		Key: fmt.Appendf(nil, "%s\x00%d", taskNo, n),
	}
}

// TestUnsendableEventDropped ensures an event the encoder refuses (here a
// state no version knows) leaves the outbox instead of holding back every
// batch behind it, and that the events around it are still sent.
func TestUnsendableEventDropped(t *testing.T) {
	h := newHarness(t)
	ob := &memOutbox{evs: []spool.OutboxEvent{
		outboxEvent("A", 1, spool.StateAccepted),
		outboxEvent("B", 1, "EXPLODED"),
		outboxEvent("C", 1, spool.StateAccepted),
	}}
	o := h.options()
	o.Outbox = ob
	h.start(t, o)
	p, _ := h.cloud.welcome(t)
	b := expect[*wire.Events](t, p)
	if got := fmt.Sprint(keysOf(b.Events)); got != "[A/1 C/1]" {
		t.Fatalf("batch %v, want [A/1 C/1]", got)
	}
	p.send(t, &wire.EventsAck{Batch: b.Batch})
	p.barrier(t)
	if d, _ := ob.OutboxDepth(); d != 0 {
		t.Errorf("outbox depth %d, want 0", d)
	}
}

// TestOrderedSortsABadBatch ensures a batch read out of order is sent in
// task_no then n order, with a repeated (task_no, n) left for later.
func TestOrderedSortsABadBatch(t *testing.T) {
	h := newHarness(t)
	l, err := New(h.options())
	if err != nil {
		t.Fatal(err)
	}
	evs := []spool.OutboxEvent{
		outboxEvent("B", 1, spool.StateAccepted),
		outboxEvent("A", 2, spool.StateQueued),
		outboxEvent("A", 1, spool.StateAccepted),
		outboxEvent("A", 2, spool.StateQueued),
	}
	got := ordered(evs, l)
	var es []wire.Event
	for _, e := range got {
		es = append(es, wireEvent(e.Event))
	}
	if s := fmt.Sprint(keysOf(es)); s != "[A/1 A/2 B/1]" {
		t.Fatalf("ordered %v", s)
	}
	if err := (wire.Events{Batch: "x", Events: es}).Ordered(); err != nil {
		t.Error(err)
	}
}

// TestBackoffResetsAfterStableConnection ensures failed connections back
// off further each time, and that a connection that lasted StableAfter
// starts the backoff from the base again.
func TestBackoffResetsAfterStableConnection(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.StableAfter = DefaultStableAfter
	h.start(t, o)
	want := o
	want.Seed = testSeed
	ref, _ := New(want) // same seed: the same draws
	for i, attempt := range []int{0, 1, 2} {
		p, _ := h.cloud.welcome(t)
		p.barrier(t)
		p.ws.Close()
		if d, w := h.reconnect(t), ref.backoff.Delay(attempt); d != w {
			t.Fatalf("drop %d: waited %v, want attempt %d's %v", i+1, d, attempt, w)
		}
	}
	p, _ := h.cloud.welcome(t)
	p.barrier(t)
	h.clock.Advance(DefaultStableAfter)
	p.barrier(t)
	p.ws.Close()
	if d, w := h.reconnect(t), ref.backoff.Delay(0); d != w {
		t.Fatalf("after a stable connection: waited %v, want attempt 0's %v", d, w)
	}
	h.cloud.welcome(t)
}
