package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"printgate/sync/wire"
)

// startHubInspected starts a hub with the engine's inspection port open
// ([nats] listen) and returns it with a function that reads how many
// writes a bucket's stream has taken (its last sequence).
func startHubInspected(t *testing.T) (*Hub, func(bucket string) uint64) {
	t.Helper()
	natsPort := freePort(t)
	h := startHubWith(t, fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:%d\"\n", natsPort))
	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", natsPort), nats.Timeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return h, func(bucket string) uint64 {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		defer cancel()
		kv, err := js.KeyValue(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.(*jetstream.KeyValueBucketStatus).StreamInfo().State.LastSeq
	}
}

// TestHubUnorderedBatchIsNotAWriteAmplifier sends the real hub one events
// batch of 2,000 events that alternate between ten task_nos (the agent
// sends a batch ordered by task_no, then n) and ensures it costs the hub
// about one write per task, not one synced rewrite of a growing record per
// event: it counts the writes on the job records' stream through the
// engine's inspection port ([nats] listen).
func TestHubUnorderedBatchIsNotAWriteAmplifier(t *testing.T) {
	h, writes := startHubInspected(t)
	a := helloHub(t, h, h.Devices["a1"], "pg-order-a1")
	var evs []wire.Event
	for i := range 2000 {
		evs = append(evs, ev(fmt.Sprintf("MIX-%d", i%10), 1+i/10, "QUEUED"))
	}
	f, err := wire.Encode(&wire.Events{Batch: "mixed", Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	before := writes("hub_tasks")
	a.raw(t, websocket.TextMessage, f)
	a.until(t, 60*time.Second, func(m wire.Message) bool { ack, ok := m.(*wire.EventsAck); return ok && ack.Batch == "mixed" })
	n := writes("hub_tasks") - before
	t.Logf("an unordered batch of 2000 events over 10 tasks: %d record writes", n)
	if n > 20 {
		t.Errorf("an unordered batch of 2000 events over 10 tasks cost %d record writes, want about 10", n)
	}
	// Every event is stored all the same.
	for i := range 10 {
		var j struct {
			Timeline []struct{ N int } `json:"timeline"`
		}
		body := h.hubJob(t, "a1", h.KeyAcme, fmt.Sprintf("MIX-%d", i))
		if err := jsonUnmarshal(body, &j); err != nil || len(j.Timeline) != 200 || j.Timeline[199].N != 200 {
			t.Errorf("MIX-%d: %d timeline entries (%v), want 200 in n order", i, len(j.Timeline), err)
		}
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestHubJobAcksForNoJobWriteNothing sends the real hub job_acks for
// task_nos the store has no pending job under (never sent, another store's,
// the agent's own LAN task) and ensures they write nothing to the pending
// bucket: were each a purge marker, a hostile agent could fill the bucket
// every store's submits share (the order API's 507 for every tenant).
func TestHubJobAcksForNoJobWriteNothing(t *testing.T) {
	h, writes := startHubInspected(t)
	if code, body, _ := h.call(t, "POST", "/v1/stores/a2/jobs", h.KeyAcme, `{"task_no":"B-1","printer":"kitchen","document":{"lines":[{"text":"x"}]}}`); code != 202 {
		t.Fatalf("submit: %d %s", code, body)
	}
	a := helloHub(t, h, h.Devices["a1"], "pg-ack-a1")
	a.send(t, &wire.Events{Batch: "lan", Events: []wire.Event{ev("LAN-1", 1, "PRINTED")}})
	a.until(t, 15*time.Second, func(m wire.Message) bool { ack, ok := m.(*wire.EventsAck); return ok && ack.Batch == "lan" })
	before := writes("hub_pending")
	for i := range 300 {
		no := []string{fmt.Sprintf("GHOST-%d", i), "B-1", "LAN-1"}[i%3]
		a.send(t, &wire.JobAck{TaskNo: no, Result: wire.ResultAccepted, State: "QUEUED"})
	}
	// The acks are handled in order: a batch after them is acknowledged
	// once they are.
	a.send(t, &wire.Events{Batch: "after", Events: []wire.Event{ev("LAN-1", 2, "PRINTED")}})
	a.until(t, 30*time.Second, func(m wire.Message) bool { ack, ok := m.(*wire.EventsAck); return ok && ack.Batch == "after" })
	if n := writes("hub_pending") - before; n != 0 {
		t.Errorf("300 job_acks for no pending job of the store wrote %d pending marks", n)
	}
	if body := h.hubJob(t, "a2", h.KeyAcme, "B-1"); !strings.Contains(body, `"state":"STORED"`) {
		t.Errorf("a2's job after a1's acks: %s", trim(body))
	}
}
