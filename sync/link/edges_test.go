package link

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/sync/cloudtest"
	"printgate/sync/wire"
)

// refCloud is the reference cloud (sync/cloudtest) on loopback, with a
// device token issued for testAgent.
type refCloud struct {
	c     *cloudtest.Cloud
	srv   *httptest.Server
	token string
}

func newRefCloud(t *testing.T, opts cloudtest.Options) *refCloud {
	t.Helper()
	c := cloudtest.New(opts)
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(func() {
		c.Close()
		srv.Close()
	})
	return &refCloud{c: c, srv: srv, token: c.IssueToken(testAgent)}
}

// options points the harness's link at the reference cloud.
func (r *refCloud) options(h *harness) Options {
	o := h.options()
	o.URL = "ws" + strings.TrimPrefix(r.srv.URL, "http") + cloudtest.AgentPath
	o.Token = func() (string, error) { return r.token, nil }
	o.Dialer = &websocket.Dialer{HandshakeTimeout: wait}
	return o
}

// dropFirstAcks makes a cloud that loses the events_ack of the first n
// batches it stores (and only those), counting what it dropped.
func dropFirstAcks(n int32, dropped *atomic.Int32) cloudtest.Options {
	return cloudtest.Options{DropEventsAck: func(string, string) bool {
		return dropped.Add(1) <= n
	}}
}

// until polls cond on real time: the link works on its own goroutine and
// reports through Stats.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestLostAckResent ensures one lost events_ack does not stall the outbox
// (issue 22 §5): with one batch allowed in flight and its ack lost, the
// batch is sent again once AckTimeout passes on the link's clock, and
// delivery goes on to the last event.
func TestLostAckResent(t *testing.T) {
	var dropped atomic.Int32
	ref := newRefCloud(t, dropFirstAcks(1, &dropped))
	h := newHarness(t)
	for i := range 6 {
		h.accept(t, fmt.Sprintf("T%02d", i))
	}
	o := ref.options(h)
	o.MaxInFlight, o.BatchSize = 1, 2
	h.start(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := ref.c.WaitEvents(ctx, testAgent, 2); err != nil {
		t.Fatal(err)
	}
	until(t, "the cloud dropped the first ack", func() bool { return dropped.Load() >= 1 })
	if d, _ := h.sp.OutboxDepth(); d != 6 {
		t.Fatalf("outbox depth %d with the first ack lost, want 6", d)
	}

	h.clock.Advance(DefaultAckTimeout)
	if _, err := ref.c.WaitEvents(ctx, testAgent, 6); err != nil {
		t.Fatalf("after the ack timeout: %v (the lost ack stalled the outbox)", err)
	}
	until(t, "the outbox is empty", func() bool { d, _ := h.sp.OutboxDepth(); return d == 0 })
	if st := h.link.Stats(); st.Resent != 1 || st.State != StateOnline {
		t.Errorf("stats %+v, want 1 batch resent on a connection still online", st)
	}
	if n := ref.c.ConnectCount(testAgent); n != 1 {
		t.Errorf("%d connections, want 1: a resend needs no reconnect", n)
	}
}

// TestLastSyncWaitsForOldestBatch ensures LastSync means "nothing older is
// waiting" (issue 22 §5): the acks of later batches do not set it while the
// first batch's ack is lost; its resent ack does.
func TestLastSyncWaitsForOldestBatch(t *testing.T) {
	var dropped atomic.Int32
	ref := newRefCloud(t, dropFirstAcks(1, &dropped))
	h := newHarness(t)
	for i := range 3 {
		h.accept(t, fmt.Sprintf("T%02d", i))
	}
	o := ref.options(h)
	o.MaxInFlight, o.BatchSize = 4, 1
	h.start(t, o)
	until(t, "two of three batches are acknowledged", func() bool {
		st := h.link.Stats()
		return st.State == StateOnline && st.InFlight == 1
	})
	if st := h.link.Stats(); !st.LastSync.IsZero() {
		t.Fatalf("LastSync %v while the first batch still waits for its ack, want unset", st.LastSync)
	}

	h.clock.Advance(DefaultAckTimeout)
	until(t, "the resent batch is acknowledged", func() bool { return h.link.Stats().InFlight == 0 })
	if st := h.link.Stats(); !st.LastSync.Equal(h.clock.Now()) {
		t.Errorf("LastSync %v once every batch has its ack, want %v", st.LastSync, h.clock.Now())
	}
}

// TestStaleAckDeletesNothing ensures an events_ack naming a batch of an
// earlier process, or of an earlier connection, deletes nothing (issue 22
// §5): batch ids do not start again at the same value in a new process.
func TestStaleAckDeletesNothing(t *testing.T) {
	h := newHarness(t)
	for i := range 3 {
		h.accept(t, fmt.Sprintf("T%02d", i))
	}
	o := h.options()
	o.BatchSize = 10

	// The first process sends the batch and stops before its ack.
	first, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	p1, _ := h.cloud.welcome(t)
	old := expect[*wire.Events](t, p1)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// The next process sends the same events; the old id's ack arrives.
	h.start(t, o)
	p2, _ := h.cloud.welcome(t)
	cur := expect[*wire.Events](t, p2)
	if cur.Batch == old.Batch {
		t.Errorf("a new process reused batch id %q", cur.Batch)
	}
	p2.send(t, &wire.EventsAck{Batch: old.Batch})
	p2.barrier(t)
	if d, _ := h.sp.OutboxDepth(); d != 3 {
		t.Fatalf("outbox depth %d after an ack for the previous process's batch, want 3", d)
	}

	// The same across a reconnect of one process.
	p2.ws.Close()
	h.reconnect(t)
	p3, _ := h.cloud.welcome(t)
	again := expect[*wire.Events](t, p3)
	if again.Batch == cur.Batch {
		t.Errorf("a new connection reused batch id %q", again.Batch)
	}
	p3.send(t, &wire.EventsAck{Batch: cur.Batch})
	p3.barrier(t)
	if d, _ := h.sp.OutboxDepth(); d != 3 {
		t.Fatalf("outbox depth %d after an ack for the previous connection's batch, want 3", d)
	}
	p3.send(t, &wire.EventsAck{Batch: again.Batch})
	p3.barrier(t)
	if d, _ := h.sp.OutboxDepth(); d != 0 {
		t.Errorf("outbox depth %d after the current batch's ack, want 0", d)
	}
}
