package api

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/hub/agentlink"
	"printgate/hub/store"
	"printgate/internal/apispec"
	"printgate/internal/clock"
	"printgate/sync/wire"
)

// tailRig is the API over a real store and a real agents' link, on a fake
// clock, with five stores of tenant acme whose agents are raw websockets
// (so a test can flood).
type tailRig struct {
	fc     *clock.FakeClock
	url    string
	key    string
	agents map[string]*websocket.Conn
}

func newTailRig(t *testing.T) *tailRig {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: t.TempDir(), Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fc := clock.NewFakeClock(time.Unix(1_800_000_000, 0))
	link := agentlink.New(st, agentlink.Options{Clock: fc, PingInterval: time.Hour})
	ls := httptest.NewServer(link)
	t.Cleanup(func() {
		link.Close()
		ls.Close()
	})
	if _, err := st.AddTenant(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	}
	_, key, err := st.AddAPIKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := apispec.LoadHub()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(spec.Handler(New(st, Options{Clock: fc, Link: link, TailLimit: time.Minute}), func(err error) { t.Error(err) }))
	t.Cleanup(srv.Close)
	r := &tailRig{fc: fc, url: srv.URL, key: key, agents: map[string]*websocket.Conn{}}
	for i := 1; i <= 5; i++ {
		id := fmt.Sprintf("s%d", i)
		if _, err := st.AddStore(ctx, "acme", id, ""); err != nil {
			t.Fatal(err)
		}
		_, tok, err := st.AddDevice(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set(wire.HeaderAuthorization, "Bearer "+tok)
		h.Set(wire.HeaderAgent, "pg-"+id)
		d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}, HandshakeTimeout: 5 * time.Second}
		ws, _, err := d.Dial("ws"+strings.TrimPrefix(ls.URL, "http")+agentlink.Path, h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		r.agents[id] = ws
		r.send(t, id, &wire.Hello{AgentID: "pg-" + id, Version: "test", Printers: []wire.Printer{}})
		if _, ok := r.read(t, id, wire.TypeWelcome).(*wire.Welcome); !ok {
			t.Fatalf("%s: no welcome", id)
		}
	}
	return r
}

func (r *tailRig) send(t *testing.T, store string, m wire.Message) {
	t.Helper()
	frame, err := wire.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.agents[store].WriteMessage(websocket.TextMessage, frame); err != nil {
		t.Fatal(err)
	}
}

// read reads the store's agent's frames until one of type typ.
func (r *tailRig) read(t *testing.T, store, typ string) wire.Message {
	t.Helper()
	for range 10 {
		_, data, err := r.agents[store].ReadMessage()
		if err != nil {
			t.Fatalf("%s: read: %v", store, err)
		}
		m, err := wire.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if m.Type() == typ {
			return m
		}
	}
	t.Fatalf("%s: no %s frame", store, typ)
	return nil
}

// stream is one open log tail.
type stream struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func (r *tailRig) open(t *testing.T, store, query string) *stream {
	t.Helper()
	req, _ := http.NewRequest("GET", r.url+"/v1/stores/"+store+"/logs"+query, nil)
	req.Header.Set("Authorization", "Bearer "+r.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &stream{resp: resp, sc: bufio.NewScanner(resp.Body)}
}

// next reads the stream's next event.
func (s *stream) next(t *testing.T) (event, data string) {
	t.Helper()
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "" && event != "":
			return event, data
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data += strings.TrimPrefix(line, "data: ")
		}
	}
	t.Fatalf("the stream ended: %v", s.sc.Err())
	return "", ""
}

// TestLogTailBounds holds GET /v1/stores/{store}/logs to its bounds: the
// agent's lines come as line events; a flood past 50 lines a second is
// cut and said in a dropped event; the stream ends with time_limit after
// TailLimit (on the clock) and the agent gets logs_stop; a tenant streams
// at most MaxTailsPerTenant tails at once (429 too_many_tails), and gets
// them back once they end.
func TestLogTailBounds(t *testing.T) {
	r := newTailRig(t)
	head, _ := http.NewRequest("HEAD", r.url+"/v1/stores/s1/logs", nil)
	head.Header.Set("Authorization", "Bearer "+r.key)
	hr, err := http.DefaultClient.Do(head)
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if hr.StatusCode != 200 || hr.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("HEAD: %d %s; want 200 text/event-stream", hr.StatusCode, hr.Header.Get("Content-Type"))
	}
	s := r.open(t, "s1", "?tail=0")
	if s.resp.StatusCode != 200 {
		t.Fatalf("tail: %d", s.resp.StatusCode)
	}
	lt := r.read(t, "s1", wire.TypeLogsTail).(*wire.LogsTail)
	if lt.Lines != 0 || !lt.Follow {
		t.Fatalf("logs_tail %+v; want follow, no recent lines", lt)
	}
	r.send(t, "s1", &wire.LogLines{ID: lt.ID, Lines: []string{"first", "two\nlines"}})
	if ev, data := s.next(t); ev != "line" || data != "first" {
		t.Fatalf("event %s %q; want line first", ev, data)
	}
	if ev, data := s.next(t); ev != "line" || data != "twolines" {
		t.Fatalf("event %s %q; want the two data fields of one line", ev, data)
	}
	var flood []string
	for i := range 200 {
		flood = append(flood, fmt.Sprintf("flood %d", i))
	}
	r.send(t, "s1", &wire.LogLines{ID: lt.ID, Lines: flood})
	for i := range 48 { // the bucket held 50, two went to the first lines
		if ev, data := s.next(t); ev != "line" || data != fmt.Sprintf("flood %d", i) {
			t.Fatalf("event %s %q; want line flood %d", ev, data, i)
		}
	}
	r.fc.WaitTimer(r.fc.Now().Add(time.Second))
	r.fc.Advance(time.Second)
	if ev, data := s.next(t); ev != "dropped" || data != `{"dropped":152}` {
		t.Fatalf("event %s %s; want dropped 152", ev, data)
	}

	// The tenant's other tails: 2 per store on s2..s4, one more on s1
	// makes 8 with the first; a ninth is refused, on any store.
	var more []*stream
	for _, id := range []string{"s1", "s2", "s2", "s3", "s3", "s4", "s4"} {
		o := r.open(t, id, "")
		if o.resp.StatusCode != 200 {
			t.Fatalf("tail %d of the tenant (%s): %d", len(more)+2, id, o.resp.StatusCode)
		}
		more = append(more, o)
	}
	ninth := r.open(t, "s5", "")
	if ninth.resp.StatusCode != http.StatusTooManyRequests || ninth.resp.Header.Get("Retry-After") == "" {
		t.Fatalf("the tenant's ninth tail: %d; want 429 with Retry-After", ninth.resp.StatusCode)
	}

	// The time limit ends every stream, each with its last event.
	r.fc.Advance(time.Minute)
	for _, o := range append([]*stream{s}, more...) {
		for {
			ev, data := o.next(t)
			if ev == "end" {
				if !strings.Contains(data, `"reason":"time_limit"`) {
					t.Fatalf("end %s; want time_limit", data)
				}
				break
			}
		}
	}
	// s1 ran two tails: both are stopped, in either order.
	stops := []string{r.read(t, "s1", wire.TypeLogsStop).(*wire.LogsStop).ID, r.read(t, "s1", wire.TypeLogsStop).(*wire.LogsStop).ID}
	if stops[0] != lt.ID && stops[1] != lt.ID {
		t.Errorf("logs_stop %v; want one for %s", stops, lt.ID)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		again := r.open(t, "s5", "")
		again.resp.Body.Close()
		if again.resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the tails ended: %d; want the tenant's tails back", again.resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond) // the handlers' deferred release
	}
}
