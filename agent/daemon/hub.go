package daemon

import (
	"context"
	"sync"
	"sync/atomic"

	"printgate/agent"
	"printgate/agent/api"
)

// maxSubscribers bounds the live views open at once; one more gets a
// closed channel (its page reconnects later).
const maxSubscribers = 64

// subscriberBuffer is how many changes a live view may lag behind before
// it misses some.
const subscriberBuffer = 64

// hub fans changes out to the page's live views without ever making the
// agent wait on one.
type hub struct {
	mu   sync.Mutex
	subs map[chan api.Change]struct{}
	// dropped counts changes a full subscriber missed, for tests.
	dropped atomic.Int64
}

func (h *hub) subscribe(ctx context.Context) <-chan api.Change {
	ch := make(chan api.Change, subscriberBuffer)
	h.mu.Lock()
	if ctx.Err() != nil || len(h.subs) >= maxSubscribers {
		h.mu.Unlock()
		close(ch)
		return ch
	}
	if h.subs == nil {
		h.subs = map[chan api.Change]struct{}{}
	}
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		close(ch)
		h.mu.Unlock()
	})
	return ch
}

// publish offers c to every subscriber; a full one misses it.
func (h *hub) publish(c api.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- c:
		default:
			h.dropped.Add(1)
		}
	}
}

// observe publishes the live view's notice of an agent event; it is the
// agent's Options.Observe.
func (h *hub) observe(e agent.Event) {
	if c, ok := changeOf(e); ok {
		h.publish(c)
	}
}

// changeOf is the live view's notice of an agent event; ok is false for
// events the page does not show (a spool write being retried).
func changeOf(e agent.Event) (api.Change, bool) {
	switch {
	case e.Err != nil:
		return api.Change{}, false
	case e.Health:
		return api.Change{Kind: "health"}, true
	case e.Link:
		return api.Change{Kind: "link", State: e.LinkState}, true
	case e.RawWaiting:
		return api.Change{Kind: "raw_waiting", Printer: e.Printer, Detail: e.RawWaitingWhy}, true
	case e.RawRefused != "":
		return api.Change{Kind: "raw_refused", Printer: e.Printer, Detail: e.RawRefused}, true
	case e.Task != nil:
		return api.Change{Kind: "task", Printer: e.Printer, TaskNo: e.Task.TaskNo, State: string(e.Task.State)}, true
	case e.Switch:
		return api.Change{Kind: "printer", Printer: e.Printer}, true
	case e.State != "":
		return api.Change{Kind: "printer", Printer: e.Printer, State: e.State}, true
	}
	return api.Change{}, false
}
