package store

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"printgate/sync/wire"
)

// fanOut runs s's webhook fan-out until the test ends or the returned
// stop is called, and waits for it to end then.
func fanOut(t *testing.T, s *Store) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.RunOutbox(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// queued waits until the queued deliveries are want ("task_no state", in
// any order) and returns them; it fails the test after ten seconds. The
// fan-out is another goroutine reading the engine's stream: there is no
// clock to move, only the queue to read again.
func queued(t *testing.T, s *Store, want ...string) []Delivery {
	t.Helper()
	slices.Sort(want)
	var got []string
	for deadline := time.Now().Add(10 * time.Second); ; {
		ds, err := s.Deliveries(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, d := range ds {
			m := mustMessage(t, d)
			got = append(got, m.Data.TaskNo+" "+m.Data.State)
		}
		slices.Sort(got)
		if slices.Equal(got, want) {
			return ds
		}
		if time.Now().After(deadline) {
			t.Fatalf("queued deliveries %q, want %q", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mustMessage(t *testing.T, d Delivery) Message {
	t.Helper()
	var m Message
	if err := json.Unmarshal(d.Body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOutboxFanOut ensures a job's state changes and their webhook
// messages are one write, and that the fan-out queues them all: four
// changes written while no fan-out runs (the record's stream then holds
// only its last write) are queued once each when it starts, the record's
// outbox is emptied, and a fan-out started again after a restart, from its
// cursor, queues nothing twice. A tenant without endpoints gets no outbox.
func TestOutboxFanOut(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: dir, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	st := seed(t, s)
	if err := s.AddWebhook(ctx, Webhook{ID: "ep_1", Tenant: "acme", URL: "https://orders.example.com/h", Secret: "whsec_AAAA"}); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0).UTC()
	if _, err := s.Submit(ctx, st, job("T1"), "aa", now); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyAck(ctx, "s1", wire.JobAck{TaskNo: "T1", Result: wire.ResultAccepted, State: "ACCEPTED"}, now); err != nil {
		t.Fatal(err)
	}
	evs := []wire.Event{{TaskNo: "T1", Seq: 1, N: 1, State: "ACCEPTED", At: now}, {TaskNo: "T1", Seq: 1, N: 4, State: "PRINTED", Confirmation: "printed", At: now}}
	if _, err := s.ApplyEvents(ctx, st, "T1", evs, now); err != nil {
		t.Fatal(err)
	}
	tk, err := s.Task(ctx, "s1", "T1")
	if err != nil || len(tk.Outbox) != 4 {
		t.Fatalf("T1 before any fan-out: outbox %+v (%v), want its 4 changes' messages", tk.Outbox, err)
	}

	stop := fanOut(t, s)
	ds := queued(t, s, "T1 STORED", "T1 ACCEPTED", "T1 ACCEPTED", "T1 PRINTED")
	for deadline := time.Now().Add(10 * time.Second); ; {
		if tk, err = s.Task(ctx, "s1", "T1"); err == nil && len(tk.Outbox) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("T1's outbox after the fan-out: %+v (%v), want empty", tk.Outbox, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if tk.State != "PRINTED" || len(tk.Timeline) != 3 {
		t.Fatalf("T1 after the fan-out: %s, %d timeline entries; want PRINTED and 3 (emptying the outbox changes nothing else)", tk.State, len(tk.Timeline))
	}
	for _, d := range ds {
		if d.Endpoint != "ep_1" || !strings.HasPrefix(d.ID, "msg_") || d.Tenant != "acme" {
			t.Errorf("delivery %+v: want ep_1 of acme with a msg_ id", d)
		}
		if err := s.Delivered(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	s.Close()

	s, err = Open(ctx, Options{Dir: dir, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	stop = fanOut(t, s)
	defer stop() // before the store closes
	// T2 is written after every T1 write: once its message is queued, the
	// fan-out has read past T1's, and queued none of them again.
	if _, err := s.Submit(ctx, st, job("T2"), "bb", now); err != nil {
		t.Fatal(err)
	}
	queued(t, s, "T2 STORED")

	if _, err := s.AddTenant(ctx, "quiet", "No webhooks"); err != nil {
		t.Fatal(err)
	}
	qs, err := s.AddStore(ctx, "quiet", "q1", "")
	if err != nil {
		t.Fatal(err)
	}
	if tk, err := s.Submit(ctx, qs, job("Q1"), "cc", now); err != nil || len(tk.Outbox) != 0 {
		t.Fatalf("a job of a tenant without endpoints: outbox %+v (%v), want none", tk.Outbox, err)
	}
}

// TestFanOutSkipsStaleWrite ensures the fan-out queues a message once
// though it reads it again in an older write of its record: the consumer
// holds writes it fetched before the fan-out emptied the outbox, and a
// message delivered meanwhile must not be queued (and sent) again.
func TestFanOutSkipsStaleWrite(t *testing.T) {
	s := open(t, t.TempDir())
	ctx := context.Background()
	st := seed(t, s)
	if err := s.AddWebhook(ctx, Webhook{ID: "ep_1", Tenant: "acme", URL: "https://orders.example.com/h", Secret: "whsec_AAAA"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(ctx, st, job("T1"), "aa", time.Unix(1_800_000_000, 0).UTC()); err != nil {
		t.Fatal(err)
	}
	c, err := s.js.OrderedConsumer(ctx, tasksStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{tasksSubject + "s1.T1"}})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r := newRecentIDs(16)
	if err := s.fanOutRecord(ctx, msg, r); err != nil {
		t.Fatal(err)
	}
	for _, d := range queued(t, s, "T1 STORED") {
		if err := s.Delivered(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.fanOutRecord(ctx, msg, r); err != nil { // the same write, read again
		t.Fatal(err)
	}
	if ds, err := s.Deliveries(ctx, 0); err != nil || len(ds) != 0 {
		t.Fatalf("after the stale write: %d deliveries queued (%v), want none (STORED was delivered)", len(ds), err)
	}
}
