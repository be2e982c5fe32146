package agentlink

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"printgate/sync/wire"
)

// Bounds of the log tails the hub asks of its agents (PROTOCOL.md §5
// logs_tail), whoever reads them (the order API's SSE route, the fleet
// page): what one tail may cost the hub's memory and its reader's link.
const (
	// MaxTailsPerStore bounds the tails of one store's agent at once. The
	// agent runs at most 4 per connection; the hub keeps the rest for
	// support (the test API) and a replaced tail's logs_stop in flight.
	MaxTailsPerStore = 2
	// TailLinesPerSecond bounds the new lines a tail passes on; lines
	// over it are dropped and counted (Tail.Dropped). The recent lines a
	// tail asks for first pass on top of it, once.
	TailLinesPerSecond = 50
	// MaxTailLines bounds the recent lines a tail may ask for first.
	MaxTailLines = 1000
	// tailBuffer bounds the lines waiting for a slow reader; past it
	// lines are dropped and counted.
	tailBuffer = 1024
)

// ErrTooManyTails means the store's agent already streams
// MaxTailsPerStore tails through this hub node.
var ErrTooManyTails = fmt.Errorf("the store's agent already streams %d log tails through this hub node", MaxTailsPerStore)

// TailOptions is what a tail asks of the agent's log.
type TailOptions struct {
	// Lines is how many recent lines to send first (0 to MaxTailLines).
	Lines int
	// Level is the least severe level wanted (debug, info, warn, error;
	// empty: every line the agent keeps).
	Level string
}

// AgentError is the agent's refusal of a tail (its command_result), e.g.
// too_many_tails or not_supported.
type AgentError struct{ Problem wire.Problem }

// Error says the agent's code and message.
func (e *AgentError) Error() string {
	return fmt.Sprintf("the agent refused the log tail: %s: %s", e.Problem.Code, e.Problem.Message)
}

// Tail is one follow of a store's agent's log: the lines come on Lines
// until Done is closed; Err then says why it ended. Close it when done
// reading (it sends the agent logs_stop).
type Tail struct {
	srv   *Server
	c     *conn
	id    string
	lines chan string
	done  chan struct{}
	once  sync.Once

	mu      sync.Mutex
	err     error
	dropped int
	tokens  float64
	last    time.Time
}

// Tail starts a follow of the store's agent's log (a logs_tail frame with
// follow): ErrNotConnected when the agent has no connection on this node,
// ErrTooManyTails past MaxTailsPerStore. The tail ends when its reader
// closes it, when the connection ends (Err ErrNotConnected) or when the
// agent refuses it (Err an *AgentError).
func (s *Server) Tail(store string, opts TailOptions) (*Tail, error) {
	if opts.Lines < 0 || opts.Lines > MaxTailLines {
		return nil, fmt.Errorf("lines %d: ask for 0 to %d recent lines", opts.Lines, MaxTailLines)
	}
	var idb [8]byte
	rand.Read(idb[:])
	s.mu.Lock()
	c := s.owners[store]
	if c == nil {
		s.mu.Unlock()
		return nil, ErrNotConnected
	}
	if len(s.tails[store]) >= MaxTailsPerStore {
		s.mu.Unlock()
		return nil, ErrTooManyTails
	}
	t := &Tail{srv: s, c: c, id: "hubtail-" + hex.EncodeToString(idb[:]),
		lines: make(chan string, tailBuffer), done: make(chan struct{}),
		tokens: float64(TailLinesPerSecond + opts.Lines), last: s.opts.Clock.Now()}
	if s.tails[store] == nil {
		s.tails[store] = map[string]*Tail{}
	}
	s.tails[store][t.id] = t
	s.mu.Unlock()
	if !c.sendMsg(&wire.LogsTail{ID: t.id, Level: opts.Level, Lines: opts.Lines, Follow: true}) {
		t.end(ErrNotConnected)
		return nil, ErrNotConnected
	}
	return t, nil
}

// Lines carries the agent's log lines, oldest first.
func (t *Tail) Lines() <-chan string { return t.lines }

// Done is closed when the tail has ended.
func (t *Tail) Done() <-chan struct{} { return t.done }

// Err says why the tail ended: nil (closed by its reader),
// ErrNotConnected (the agent's connection ended) or an *AgentError.
func (t *Tail) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Dropped is how many lines were dropped: over TailLinesPerSecond, or
// while the reader was too slow.
func (t *Tail) Dropped() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

// Close ends the tail and tells the agent (logs_stop) if its connection
// is still up.
func (t *Tail) Close() {
	if t.end(nil) {
		t.c.sendMsg(&wire.LogsStop{ID: t.id})
	}
}

// end ends the tail with err once; it reports whether this call did.
func (t *Tail) end(err error) bool {
	first := false
	t.once.Do(func() {
		first = true
		t.mu.Lock()
		t.err = err
		t.mu.Unlock()
		s := t.srv
		s.mu.Lock()
		if m := s.tails[t.c.store.ID]; m[t.id] == t {
			delete(m, t.id)
			if len(m) == 0 {
				delete(s.tails, t.c.store.ID)
			}
		}
		s.mu.Unlock()
		close(t.done)
	})
	return first
}

// deliver passes lines on within the rate and the buffer, counting the
// rest.
func (t *Tail) deliver(lines []string) {
	now := t.srv.opts.Clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	if t.tokens < TailLinesPerSecond {
		t.tokens = min(TailLinesPerSecond, t.tokens+now.Sub(t.last).Seconds()*TailLinesPerSecond)
	}
	t.last = now
	for _, l := range lines {
		if t.tokens < 1 {
			t.dropped++
			continue
		}
		select {
		case t.lines <- l:
			t.tokens--
		default:
			t.dropped++
		}
	}
}

// tailOf returns the tail of the connection's store with id, if this
// connection runs it.
func (s *Server) tailOf(c *conn, id string) *Tail {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tails[c.store.ID][id]; t != nil && t.c == c {
		return t
	}
	return nil
}

// endTails ends the tails the connection ran: its agent is gone.
func (s *Server) endTails(c *conn) {
	var ts []*Tail
	s.mu.Lock()
	for _, t := range s.tails[c.store.ID] {
		if t.c == c {
			ts = append(ts, t)
		}
	}
	s.mu.Unlock()
	for _, t := range ts {
		t.end(ErrNotConnected)
	}
}

// onResult takes the agent's command_result for the tail: a refusal ends it.
func (t *Tail) onResult(m *wire.CommandResult) {
	p := wire.Problem{Code: "refused", Message: "the agent answered the log tail without saying why"}
	if m.Error != nil {
		p = *m.Error
	}
	if m.OK {
		return
	}
	t.end(&AgentError{Problem: p})
}
