package hostile

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/sync/wire"
)

// sizedEvents is an events batch of exactly size bytes, spread over ten
// tasks (each record stays small), with n from first. It is encoded by
// hand: wire.Encode refuses a frame over the limit, and a hostile agent
// sends what it likes.
func sizedEvents(t *testing.T, batch string, size, first int) []byte {
	t.Helper()
	const per = 1000
	var evs []wire.Event
	count := size / per
	for i := range count {
		// Ordered by task_no then n, as the agent sends a batch.
		e := ev(fmt.Sprintf("SIZE-%d", i*10/count), first+i, "QUEUED")
		e.Reason = strings.Repeat("r", per-200)
		evs = append(evs, e)
	}
	for {
		f, err := json.Marshal(struct {
			Type   string       `json:"type"`
			Batch  string       `json:"batch"`
			Events []wire.Event `json:"events"`
		}{wire.TypeEvents, batch, evs})
		if err != nil {
			t.Fatal(err)
		}
		d := size - len(f)
		if d == 0 {
			return f
		}
		last := &evs[len(evs)-1]
		if len(last.Reason)+d < 0 {
			t.Fatalf("cannot size a frame to %d", size)
		}
		last.Reason = strings.Repeat("r", len(last.Reason)+d)
	}
}

// TestHubFramesAtTheSizeLimits sends the real hub frames at and over the
// wire's limits with store a1's token: a batch of exactly 2 MiB is stored
// and acknowledged; one byte more and a frame of exactly 3 MiB are refused
// too_large, not stored, and the connection stays up; a frame over 3 MiB
// ends the connection (1009) and the hub still serves. The hub's RSS and
// log stay bounded.
func TestHubFramesAtTheSizeLimits(t *testing.T) {
	h := startHub(t)
	a := helloHub(t, h, h.Devices["a1"], "pg-size-a1")
	lines0, rss0 := h.logLines(), h.rssKB(t)
	acked := func(batch string) bool {
		m := a.until(t, 30*time.Second, func(m wire.Message) bool {
			switch m := m.(type) {
			case *wire.EventsAck:
				return m.Batch == batch
			case *wire.Error:
				return true
			}
			return false
		})
		if e, ok := m.(*wire.Error); ok {
			if e.Code != wire.CodeTooLarge {
				t.Fatalf("batch %s: error %s %s, want too_large or an ack", batch, e.Code, e.Message)
			}
			return false
		}
		return true
	}

	a.raw(t, websocket.TextMessage, sizedEvents(t, "at-limit", wire.MaxFrameBytes, 1))
	if !acked("at-limit") {
		t.Fatal("a batch of exactly 2 MiB was refused")
	}
	for i, size := range []int{wire.MaxFrameBytes + 1, wire.ReadLimit} {
		b := fmt.Sprintf("over-%d", i)
		a.raw(t, websocket.TextMessage, sizedEvents(t, b, size, 10000*(i+1)))
		if acked(b) {
			t.Fatalf("a batch of %d bytes was acknowledged", size)
		}
	}
	// The connection is still up: a small batch is acknowledged.
	a.send(t, &wire.Events{Batch: "small", Events: []wire.Event{ev("SMALL", 1, "QUEUED")}})
	if !acked("small") {
		t.Fatal("small batch refused")
	}
	// Nothing of the refused frames was stored: SIZE-0 has only the
	// events of the accepted batch (n below 10000).
	if body := h.hubJob(t, "a1", h.KeyAcme, "SIZE-0"); strings.Contains(body, `"n":10000`) || strings.Contains(body, `"n":20000`) {
		t.Errorf("a refused frame's events were stored: %s", trim(body))
	}

	// Over the read limit: the hub closes the connection, and serves on.
	a.raw(t, websocket.TextMessage, make([]byte, wire.ReadLimit+1))
	var err error
	for err == nil {
		_, err = a.read(30 * time.Second)
	}
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Logf("over the read limit: %v (want close 1009; a reset before the close frame is read is as good)", err)
	}
	if code, body, _ := h.call(t, "GET", "/v1/stores/a1", h.KeyAcme, ""); code != http.StatusOK {
		t.Fatalf("the hub after the oversize frame: %d %s", code, body)
	}
	b := helloHub(t, h, h.Devices["a1"], "pg-size-a1")
	b.send(t, &wire.Events{Batch: "after", Events: []wire.Event{ev("SMALL", 2, "PRINTED")}})
	b.until(t, 15*time.Second, func(m wire.Message) bool { ack, ok := m.(*wire.EventsAck); return ok && ack.Batch == "after" })

	if testing.Verbose() {
		t.Logf("lines caused:\n%s", tail(h.Logs(), h.logLines()-lines0+1))
	}
	lines, rss := h.logLines()-lines0, h.rssKB(t)
	t.Logf("frames at the limits: RSS %d -> %d KiB, log lines %d", rss0, rss, lines)
	if lines > 20 {
		t.Errorf("the frames caused %d log lines:\n%s", lines, tail(h.Logs(), 30))
	}
	if rss-rss0 > 96<<10 {
		t.Errorf("the frames grew the hub's RSS by %d KiB", rss-rss0)
	}
}

// TestHubStolenDeviceToken uses store a1's device token as a thief would:
// from another agent id (401: the token is bound to the first agent that
// used it), and from the same agent id at once (the newer connection
// replaces the older with close 1000, and it sees only a1's jobs, never
// a2's or another tenant's); a hello naming another agent than the
// handshake is refused; after the store's revoke the token is 401.
func TestHubStolenDeviceToken(t *testing.T) {
	h := startHub(t)
	tok := h.Devices["a1"]
	real := helloHub(t, h, tok, "pg-real-a1")
	if status, _ := dialHub(t, h, tok, "pg-thief"); status != http.StatusUnauthorized {
		t.Errorf("a1's token from another agent id: %d, want 401", status)
	}
	// A handshake as the bound agent whose hello names another.
	if status, x := dialHub(t, h, tok, "pg-real-a1"); status == http.StatusSwitchingProtocols {
		x.send(t, &wire.Hello{AgentID: "pg-thief", Version: "x"})
		if m := x.next(t, 15*time.Second); m.Type() != wire.TypeError {
			t.Errorf("a hello naming another agent: %T, want error", m)
		}
		if _, err := x.read(15 * time.Second); err == nil {
			t.Error("the connection with a mismatched hello stayed open")
		}
	} else {
		t.Fatalf("handshake: %d", status)
	}

	// The same token and id at once: the thief replaces the real agent.
	for _, s := range []struct{ store, key, taskNo string }{{"a1", h.KeyAcme, "A-1"}, {"a2", h.KeyAcme, "B-1"}, {"r1", h.KeyRival, "R-1"}} {
		if code, body, _ := h.call(t, "POST", "/v1/stores/"+s.store+"/jobs", s.key, fmt.Sprintf(`{"task_no":%q,"printer":"kitchen","document":{"lines":[{"text":"x"}]}}`, s.taskNo)); code != 202 {
			t.Fatalf("submit %s: %d %s", s.taskNo, code, body)
		}
	}
	thief := helloHub(t, h, tok, "pg-real-a1")
	var err error
	for err == nil {
		_, err = real.read(15 * time.Second)
	}
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure || !strings.Contains(ce.Text, "replaced") {
		t.Errorf("the older connection ended with %v, want close 1000 replaced", err)
	}
	// Jobs are sent oldest first: a1's A-1, then A-2 submitted now. Any
	// other job before A-2 would be another store's.
	if code, body, _ := h.call(t, "POST", "/v1/stores/a1/jobs", h.KeyAcme, `{"task_no":"A-2","printer":"kitchen","document":{"lines":[{"text":"x"}]}}`); code != 202 {
		t.Fatalf("submit A-2: %d %s", code, body)
	}
	var jobs []string
	thief.until(t, 15*time.Second, func(m wire.Message) bool {
		j, ok := m.(*wire.Job)
		if ok {
			jobs = append(jobs, j.TaskNo)
		}
		return ok && j.TaskNo == "A-2"
	})
	if strings.Join(jobs, ",") != "A-1,A-2" {
		t.Errorf("the stolen token's connection got jobs %v, want only a1's [A-1 A-2]", jobs)
	}
	// Revoked: the thief is told and closed, and the token is 401 after.
	if code, body, _ := h.call(t, "POST", "/v1/stores/a1/revoke", h.KeyAcme, ""); code != 200 {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if m := thief.until(t, 15*time.Second, func(m wire.Message) bool { return m.Type() == wire.TypeRevoke }); m == nil {
		t.Fatal("no revoke frame")
	}
	for _, id := range []string{"pg-real-a1", "pg-thief"} {
		if status, _ := dialHub(t, h, tok, id); status != http.StatusUnauthorized {
			t.Errorf("the revoked token as %s: %d, want 401", id, status)
		}
	}
	// Store a2's and the rival's jobs were not touched by any of it.
	for _, s := range []struct{ store, key, taskNo string }{{"a2", h.KeyAcme, "B-1"}, {"r1", h.KeyRival, "R-1"}} {
		if body := h.hubJob(t, s.store, s.key, s.taskNo); !strings.Contains(body, `"state":"STORED"`) {
			t.Errorf("%s/%s after the thief: %s, want STORED", s.store, s.taskNo, trim(body))
		}
	}
}

// TestHubConnectionChurnIsBounded opens and drops a store's connection
// with its device token again and again (a stolen token fighting the
// real agent) and ensures the hub's log stays bounded: past a store's
// connection budget a handshake is 503 with Retry-After (the agent's link
// retries with backoff), and the refusals write no line.
func TestHubConnectionChurnIsBounded(t *testing.T) {
	h := startHub(t)
	tok := h.Devices["a1"]
	lines0 := h.logLines()
	refused := 0
	const conns = 80
	for i := range conns {
		status, a := dialHub(t, h, tok, "pg-churn-a1")
		if status == http.StatusServiceUnavailable {
			refused++
			continue
		}
		if status != http.StatusSwitchingProtocols {
			t.Fatalf("connection %d: %d", i, status)
		}
		a.send(t, &wire.Hello{AgentID: "pg-churn-a1", Version: "x"})
		a.next(t, 15*time.Second)
		a.ws.Close()
	}
	// The last connection's end is logged after its close; wait for the
	// hub to have seen it (the store shows offline).
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, body, _ := h.call(t, "GET", "/v1/stores/a1", h.KeyAcme, "")
		if strings.Contains(body, `"online":false`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // another process: nothing to wait on but its answer
	}
	lines := h.logLines() - lines0
	t.Logf("%d connections of one store: %d refused, %d log lines", conns, refused, lines)
	if refused == 0 || lines > 120 {
		t.Errorf("%d connections of one store in a row: %d refused, %d log lines; want the churn refused past the store's budget and its lines bounded", conns, refused, lines)
	}
	// The hub still takes the store's agent once the budget allows, and
	// other stores meanwhile.
	helloHub(t, h, h.Devices["a2"], "pg-a2")
}
