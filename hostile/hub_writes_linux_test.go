package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"printgate/sync/wire"
)

// TestHubUnorderedBatchIsNotAWriteAmplifier sends the real hub one events
// batch of 2,000 events that alternate between ten task_nos (the agent
// sends a batch ordered by task_no, then n) and ensures it costs the hub
// about one write per task, not one synced rewrite of a growing record per
// event: it counts the writes on the job records' stream through the
// engine's inspection port ([nats] listen).
func TestHubUnorderedBatchIsNotAWriteAmplifier(t *testing.T) {
	natsPort := freePort(t)
	h := startHubWith(t, fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:%d\"\n", natsPort))
	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", natsPort), nats.Timeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	writes := func() uint64 {
		kv, err := js.KeyValue(ctx, "hub_tasks")
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.(*jetstream.KeyValueBucketStatus).StreamInfo().State.LastSeq
	}

	a := helloHub(t, h, h.Devices["a1"], "pg-order-a1")
	var evs []wire.Event
	for i := range 2000 {
		evs = append(evs, ev(fmt.Sprintf("MIX-%d", i%10), 1+i/10, "QUEUED"))
	}
	f, err := wire.Encode(&wire.Events{Batch: "mixed", Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	before := writes()
	a.raw(t, websocket.TextMessage, f)
	a.until(t, 60*time.Second, func(m wire.Message) bool { ack, ok := m.(*wire.EventsAck); return ok && ack.Batch == "mixed" })
	n := writes() - before
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
