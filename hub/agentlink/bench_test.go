package agentlink

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/spool"
	"printgate/sync/cloudtest"
	"printgate/sync/wire"
)

// benchCloud is one cloud under benchmark: the hub or the reference
// cloud, behind the same agent connection.
type benchCloud struct {
	ws    *websocket.Conn
	queue func(b *testing.B, j wire.Job)
}

// hubCloud is the hub's link over a real store (sync_always, a temp dir).
func hubCloud(b *testing.B) benchCloud {
	r := newRig(b)
	ws, _, err := r.tryDial(r.token, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	hello(b, ws, "bench")
	return benchCloud{ws: ws, queue: func(b *testing.B, j wire.Job) {
		if _, err := r.st.Submit(context.Background(), r.info, j, "", time.Now()); err != nil {
			b.Fatal(err)
		}
	}}
}

// refCloud is the reference cloud (in memory), the figure the hub is
// compared with.
func refCloud(b *testing.B) benchCloud {
	c := cloudtest.New(cloudtest.Options{Logger: slog.New(slog.DiscardHandler), StoreID: "s1"})
	hs := httptest.NewServer(c.Handler())
	b.Cleanup(func() {
		c.Close()
		hs.Close()
	})
	tok := c.IssueToken("bench")
	h := http.Header{}
	h.Set(wire.HeaderAuthorization, "Bearer "+tok)
	h.Set(wire.HeaderAgent, "bench")
	d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}}
	ws, _, err := d.Dial("ws"+strings.TrimPrefix(hs.URL, "http")+cloudtest.AgentPath, h)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	hello(b, ws, "bench")
	return benchCloud{ws: ws, queue: func(b *testing.B, j wire.Job) {
		if err := c.Queue("bench", j); err != nil {
			b.Fatal(err)
		}
	}}
}

// BenchmarkSubmitToAgent measures a job from its submit (on disk, for the
// hub) to its frame read on the agent's connection, with the agent's
// job_ack sent back each time; it reports p50 and p99 in ms.
func BenchmarkSubmitToAgent(b *testing.B) {
	for _, c := range []struct {
		name string
		make func(*testing.B) benchCloud
	}{{"hub", hubCloud}, {"cloudtest", refCloud}} {
		b.Run(c.name, func(b *testing.B) {
			cl := c.make(b)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				no := fmt.Sprintf("B%d", i)
				t0 := time.Now()
				cl.queue(b, wire.Job{TaskNo: no, Printer: "kitchen", Document: []byte(`{"lines":[{"text":"x"}]}`)})
				for {
					_, data, err := cl.ws.ReadMessage()
					if err != nil {
						b.Fatal(err)
					}
					if m, err := wire.Decode(data); err == nil {
						if j, ok := m.(*wire.Job); ok && j.TaskNo == no {
							break
						}
					}
				}
				lat = append(lat, time.Since(t0))
				frame, _ := wire.Encode(&wire.JobAck{TaskNo: no, Result: wire.ResultAccepted, State: "ACCEPTED"})
				cl.ws.WriteMessage(websocket.TextMessage, frame)
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkEvents measures events stored and acknowledged: batches of 100
// events (25 tasks, 4 events each, as a printed job has), one in flight;
// it reports events/s.
func BenchmarkEvents(b *testing.B) {
	for _, c := range []struct {
		name string
		make func(*testing.B) benchCloud
	}{{"hub", hubCloud}, {"cloudtest", refCloud}} {
		b.Run(c.name, func(b *testing.B) {
			cl := c.make(b)
			at := time.Now().UTC()
			states := []string{"ACCEPTED", "QUEUED", "SENDING", "PRINTED"}
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				batch := &wire.Events{Batch: fmt.Sprintf("b-%d", i)}
				for task := range 25 {
					for n, st := range states {
						batch.Events = append(batch.Events, wire.Event{TaskNo: fmt.Sprintf("T%d-%02d", i, task), N: n + 1,
							State: spool.State(st), Printer: "kitchen", Origin: "cloud", At: at})
					}
				}
				frame, err := wire.Encode(batch)
				if err != nil {
					b.Fatal(err)
				}
				if err := cl.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
					b.Fatal(err)
				}
				for {
					_, data, err := cl.ws.ReadMessage()
					if err != nil {
						b.Fatal(err)
					}
					if m, err := wire.Decode(data); err == nil {
						if a, ok := m.(*wire.EventsAck); ok && a.Batch == batch.Batch {
							break
						}
					}
				}
			}
			b.ReportMetric(float64(b.N*100)/time.Since(start).Seconds(), "events/s")
		})
	}
}
