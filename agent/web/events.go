package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"printgate/agent/api"
	"strings"
	"sync"
	"time"
)

// hub fans the backend's changes out to the open /events streams. A slow
// stream misses changes rather than holding up the others: the page
// re-reads the state on each change anyway.
type hub struct {
	mu   sync.Mutex
	subs map[chan api.Change]struct{}
}

func newHub() *hub { return &hub{subs: make(map[chan api.Change]struct{})} }

func (h *hub) subscribe() chan api.Change {
	ch := make(chan api.Change, 16)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch
}

func (h *hub) unsubscribe(ch chan api.Change) {
	h.mu.Lock()
	delete(h.subs, ch)
	h.mu.Unlock()
}

func (h *hub) publish(c api.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- c:
		default:
		}
	}
}

// sse writes one server-sent event stream.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startSSE takes one of the MaxStreams slots and sends the stream's
// headers. It returns nil, having answered 503, when every slot is taken;
// otherwise the caller must call done.
func (p *Page) startSSE(w http.ResponseWriter, r *http.Request) (*sse, func()) {
	if p.streams.Add(1) > MaxStreams {
		p.streams.Add(-1)
		w.Header().Set("Retry-After", "10")
		http.Error(w, pickLang(r).T("error.busy"), http.StatusServiceUnavailable)
		return nil, nil
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w)}
	// A stream may stay open for hours; the server's write timeout must
	// not cut it (an error here means there is none to lift).
	_ = s.rc.SetWriteDeadline(time.Time{})
	if err := s.rc.Flush(); err != nil {
		p.streams.Add(-1)
		return nil, nil
	}
	return s, func() { p.streams.Add(-1) }
}

// send writes one event (data split over data: lines) and flushes it.
func (s *sse) send(event, data string) error {
	var b strings.Builder
	if event != "" {
		fmt.Fprintf(&b, "event: %s\n", event)
	}
	for line := range strings.SplitSeq(data, "\n") {
		fmt.Fprintf(&b, "data: %s\n", strings.TrimSuffix(line, "\r"))
	}
	b.WriteString("\n")
	if _, err := s.w.Write([]byte(b.String())); err != nil {
		return err
	}
	return s.rc.Flush()
}

// comment writes a heartbeat comment line.
func (s *sse) comment() error {
	if _, err := s.w.Write([]byte(": keep-alive\n\n")); err != nil {
		return err
	}
	return s.rc.Flush()
}

// changeJSON is a Change as /events sends it.
type changeJSON struct {
	Kind    string `json:"kind"`
	Printer string `json:"printer,omitempty"`
	TaskNo  string `json:"task_no,omitempty"`
	State   string `json:"state,omitempty"`
}

// events serves GET /events: one "change" event per backend change, a
// heartbeat comment every 15 s, until the client leaves or the page
// closes.
func (p *Page) events(w http.ResponseWriter, r *http.Request, _ *session) {
	ch := p.hub.subscribe()
	defer p.hub.unsubscribe(ch)
	s, done := p.startSSE(w, r)
	if s == nil {
		return
	}
	defer done()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-p.ctx.Done():
			return
		case <-tick.C:
			if s.comment() != nil {
				return
			}
		case c := <-ch:
			data, _ := json.Marshal(changeJSON{Kind: c.Kind, Printer: c.Printer, TaskNo: c.TaskNo, State: c.State})
			if s.send("change", string(data)) != nil {
				return
			}
		}
	}
}
