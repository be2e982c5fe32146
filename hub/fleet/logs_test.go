package fleet_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"printgate/sync/wire"
)

// sseEvent is one server-sent event of the page's log stream.
type sseEvent struct{ event, data string }

// stream opens the page's log stream at path with c's cookies and reads
// its events onto a channel until it ends or the test does.
func (c *client) stream(path string, hdr map[string]string) (int, <-chan sseEvent) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	// The client's own timeout would cut a stream; this one ends with
	// the test.
	hc := *c.hc
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		c.t.Fatalf("GET %s: %v", path, err)
	}
	ch := make(chan sseEvent, 1024)
	done := make(chan struct{})
	c.t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-done
	})
	go func() {
		defer close(done)
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == "":
				if ev.event != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return resp.StatusCode, ch
}

// nextEvent returns the stream's next event of type typ within 10 s,
// skipping others.
func nextEvent(t *testing.T, ch <-chan sseEvent, typ string) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended before a %s event", typ)
			}
			if ev.event == typ {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event within 10 s", typ)
		}
	}
}

// endReason is the reason of a stream's end event.
func endReason(t *testing.T, ev sseEvent) string {
	t.Helper()
	var e struct{ Reason string }
	if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
		t.Fatalf("end event %q: %v", ev.data, err)
	}
	return e.Reason
}

func isTail(m wire.Message) bool { _, ok := m.(*wire.LogsTail); return ok }

// TestLogTailPage ensures a signed-in user follows a store's agent's log
// from the fleet page: the online store's card links to it, the page
// points its script at the stream, the stream asks the agent for the
// recent lines and the level chosen and passes the agent's lines on, a
// flood past the hub's rate is told as dropped lines, and the agent going
// offline ends the stream with agent_offline.
func TestLogTailPage(t *testing.T) {
	r := startHub(t)
	a := r.connect(t, "s1")
	c := r.client(t, "127.0.0.1")
	c.mustLogin("acme", "ana", anaPW)
	if _, _, body := c.do("GET", "/fleet/fragment", nil, nil); !strings.Contains(body, `href="/fleet/stores/s1/logs"`) || strings.Contains(body, `href="/fleet/stores/s2/logs"`) {
		t.Errorf("the fleet should link the online store's log only:\n%s", body)
	}
	status, _, body := c.do("GET", "/fleet/stores/s1/logs?level=warn", nil, nil)
	if status != 200 || !strings.Contains(body, `data-stream="/fleet/stores/s1/logs/stream?level=warn"`) || !strings.Contains(body, `<option value="warn" selected>`) {
		t.Fatalf("log page: %d\n%s", status, body)
	}
	status, events := c.stream("/fleet/stores/s1/logs/stream?level=warn", map[string]string{"Sec-Fetch-Site": "same-origin"})
	if status != 200 {
		t.Fatalf("stream: %d", status)
	}
	lt := a.next(t, isTail).(*wire.LogsTail)
	if !lt.Follow || lt.Lines != 100 || lt.Level != "warn" {
		t.Fatalf("the agent was asked %+v; want to follow, 100 recent lines, level warn", lt)
	}
	a.send(t, &wire.LogLines{ID: lt.ID, Lines: []string{"time=1 level=WARN msg=\"paper low\"", "time=2 level=ERROR msg=jam"}})
	for _, want := range []string{"time=1 level=WARN msg=\"paper low\"", "time=2 level=ERROR msg=jam"} {
		if ev := nextEvent(t, events, "line"); ev.data != want {
			t.Fatalf("line %q; want %q", ev.data, want)
		}
	}
	// Past its first 150 lines a tail passes 50 a second: the rest is
	// counted and the page told.
	var flood []string
	for i := range 400 {
		flood = append(flood, fmt.Sprintf("line %d", i))
	}
	a.send(t, &wire.LogLines{ID: lt.ID, Lines: flood})
	var d struct{ Dropped int }
	if err := json.Unmarshal([]byte(nextEvent(t, events, "dropped").data), &d); err != nil || d.Dropped < 200 {
		t.Fatalf("dropped event %+v (%v); want at least 200 dropped", d, err)
	}
	a.ws.Close()
	if reason := endReason(t, nextEvent(t, events, "end")); reason != "agent_offline" {
		t.Fatalf("end reason %q after the agent left; want agent_offline", reason)
	}
}

// TestLogTailOffline ensures an offline store's log page says so and
// opens no stream, and that a stream asked for all the same says
// agent_offline in its one end event (which an EventSource can read).
func TestLogTailOffline(t *testing.T) {
	r := startHub(t)
	c := r.client(t, "127.0.0.1")
	c.mustLogin("acme", "ana", anaPW)
	status, _, body := c.do("GET", "/fleet/stores/s2/logs", nil, nil)
	if status != 200 || !strings.Contains(body, `data-state="agent_offline"`) || !strings.Contains(body, "The store&#39;s agent is offline") || strings.Contains(body, "data-stream=") {
		t.Fatalf("offline store's log page: %d\n%s", status, body)
	}
	status, events := c.stream("/fleet/stores/s2/logs/stream", nil)
	if status != 200 {
		t.Fatalf("stream of an offline store: %d, want 200 with an end event", status)
	}
	if reason := endReason(t, nextEvent(t, events, "end")); reason != "agent_offline" {
		t.Fatalf("end reason %q; want agent_offline", reason)
	}
}

// TestLogTailRefused ensures nobody starts a tail of a store's agent but
// its tenant's signed-in users from the page itself: without a session
// the page sends to the sign-in and the stream is 401; another tenant's
// store is the 404 of a store that does not exist; a stream a browser
// marks as asked by another site is 403. None of them reaches the agent:
// the first logs_tail it gets is its own user's, told apart by level.
func TestLogTailRefused(t *testing.T) {
	r := startHub(t)
	o := r.connect(t, "o1")
	anon := r.client(t, "127.0.0.3")
	if status, h, _ := anon.do("GET", "/fleet/stores/o1/logs", nil, nil); status != 303 || !strings.HasPrefix(h.Get("Location"), "/fleet/login?next=") {
		t.Errorf("anonymous log page: %d → %q, want 303 to the sign-in", status, h.Get("Location"))
	}
	if status, _, _ := anon.do("GET", "/fleet/stores/o1/logs/stream?level=debug", nil, nil); status != 401 {
		t.Errorf("anonymous stream: %d, want 401", status)
	}
	ana := r.client(t, "127.0.0.2")
	ana.mustLogin("acme", "ana", anaPW)
	back := regexp.MustCompile(`back=[^"]*`)
	_, _, missing := ana.do("GET", "/fleet/stores/zz/logs", nil, nil)
	if status, _, body := ana.do("GET", "/fleet/stores/o1/logs", nil, nil); status != 404 || back.ReplaceAllString(body, "") != back.ReplaceAllString(missing, "") || strings.Contains(body, "Other 1") {
		t.Errorf("the other tenant's store's log page: %d, want the 404 of a store that does not exist\n%s", status, body)
	}
	if status, _, _ := ana.do("GET", "/fleet/stores/o1/logs/stream?level=error", nil, nil); status != 404 {
		t.Errorf("the other tenant's store's stream: %d, want 404", status)
	}
	olga := r.client(t, "127.0.0.1")
	olga.mustLogin("other", "olga", olgaPW)
	for _, site := range []string{"cross-site", "same-site"} {
		if status, _, _ := olga.do("GET", "/fleet/stores/o1/logs/stream?level=warn", nil, map[string]string{"Sec-Fetch-Site": site}); status != 403 {
			t.Errorf("stream marked Sec-Fetch-Site %s: %d, want 403", site, status)
		}
	}
	if status, _, _ := olga.do("HEAD", "/fleet/stores/o1/logs/stream?level=warn", nil, nil); status != 200 {
		t.Errorf("HEAD of the stream: %d, want 200 (and no tail)", status)
	}
	if status, _ := olga.stream("/fleet/stores/o1/logs/stream?level=info", map[string]string{"Sec-Fetch-Site": "same-origin"}); status != 200 {
		t.Fatalf("olga's own stream: %d", status)
	}
	if lt := o.next(t, isTail).(*wire.LogsTail); lt.Level != "info" {
		t.Fatalf("the agent's first logs_tail asks level %q; a refused request reached it (want olga's, info)", lt.Level)
	}
}

// TestLogTailTooMany ensures the page's tails keep the order API's bound
// per store: past agentlink.MaxTailsPerStore (2) open at once, another
// stream is one end event too_many_tails.
func TestLogTailTooMany(t *testing.T) {
	r := startHub(t)
	a := r.connect(t, "s1")
	c := r.client(t, "127.0.0.1")
	c.mustLogin("acme", "ana", anaPW)
	same := map[string]string{"Sec-Fetch-Site": "same-origin"}
	for _, level := range []string{"info", "warn"} {
		if status, _ := c.stream("/fleet/stores/s1/logs/stream?level="+level, same); status != 200 {
			t.Fatalf("stream %s: %d", level, status)
		}
		if lt := a.next(t, isTail).(*wire.LogsTail); lt.Level != level {
			t.Fatalf("the agent was asked level %q, want %q", lt.Level, level)
		}
	}
	status, events := c.stream("/fleet/stores/s1/logs/stream?level=error", same)
	if status != 200 {
		t.Fatalf("third stream: %d, want 200 with an end event", status)
	}
	if reason := endReason(t, nextEvent(t, events, "end")); reason != "too_many_tails" {
		t.Fatalf("third stream's end reason %q; want too_many_tails", reason)
	}
}
