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

// TestLostAckResent ensures one lost events_ack does not stall the outbox:
// with one batch allowed in flight and its ack lost, the
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
// waiting": the acks of later batches do not set it while the
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
// earlier process, or of an earlier connection, deletes nothing: batch ids do
// not start again at the same value in a new process.
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

// TestOversizedJobAnswered ensures a job frame just over MaxFrameBytes is
// answered job_ack rejected (payload_too_large, the §3 code) and the
// connection stays up, so the next job is accepted on it:
// before, the websocket read limit closed the connection (1009) first,
// and the cloud resent the job into the same close forever.
func TestOversizedJobAnswered(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.options())
	p, _ := h.cloud.welcome(t)
	head, tail := `{"type":"job","task_no":"BIG_v1","printer":"kitchen","payload":"`, `"}`
	p.sendRaw(t, head+strings.Repeat("G0dh", (wire.MaxFrameBytes+4-len(head)-len(tail))/4)+tail)
	ack := expect[*wire.JobAck](t, p)
	if ack.TaskNo != "BIG_v1" || ack.Result != wire.ResultRejected || ack.Error == nil || ack.Error.Code != "payload_too_large" {
		t.Fatalf("job_ack %+v (error %+v), want BIG_v1 rejected payload_too_large", ack, ack.Error)
	}
	p.send(t, &wire.Job{TaskNo: "NEXT_v1", Printer: "kitchen", Payload: []byte("\x1b@next")})
	if ack := expect[*wire.JobAck](t, p); ack.TaskNo != "NEXT_v1" || ack.Result != wire.ResultAccepted {
		t.Fatalf("job_ack %+v after the oversized job, want NEXT_v1 accepted on the same connection", ack)
	}
	if n := h.cloud.dials.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestNoPrintersConnects ensures an agent with no printer configured says
// hello and is welcomed by the reference cloud, and its printers pushes go
// through too.
func TestNoPrintersConnects(t *testing.T) {
	ref := newRefCloud(t, cloudtest.Options{})
	h := newHarness(t)
	h.be.set(func(b *backend) { b.printers = nil })
	h.accept(t, "T01")
	h.start(t, ref.options(h))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := ref.c.WaitConnected(ctx, testAgent, true); err != nil {
		t.Fatalf("an agent with no printers did not connect: %v (last error %q)", err, h.link.Stats().LastError)
	}
	if _, err := ref.c.WaitEvents(ctx, testAgent, 1); err != nil {
		t.Fatal(err)
	}
	if hello, ok := ref.c.Hello(testAgent); !ok || hello.Printers == nil || len(hello.Printers) != 0 {
		t.Errorf("hello %+v, want one with an empty printers list", hello)
	}
	h.link.PrintersChanged()
	if err := ref.c.Wait(ctx, func() bool { return len(ref.c.PrinterPushes(testAgent)) >= 2 }); err != nil {
		t.Fatalf("printers push with no printers: %v", err)
	}
	if errs := ref.c.ErrorFrames(testAgent); len(errs) != 0 {
		t.Errorf("the cloud refused frames: %+v", errs)
	}
}
