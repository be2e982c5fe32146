package cloudtest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"

	"github.com/gorilla/websocket"

	"printgate/sync/wire"
)

// AgentPath is where agents open the websocket of PROTOCOL.md §5 (the
// path of the [cloud] url in the agent's config).
const AgentPath = "/agent/v1"

// Cloud is the in-memory reference cloud. Its methods are safe for
// concurrent use; serve it with Handler and stop it with Close.
type Cloud struct {
	opts     Options
	log      *slog.Logger
	handler  http.Handler
	upgrader websocket.Upgrader
	wg       sync.WaitGroup // one per websocket connection being served

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change, for Wait
	agents   map[string]*agent
	tokens   map[string]*token
	devices  map[string]*deviceAuth // by device_code
	users    map[string]*deviceAuth // by normalized user_code
	sessions map[*session]struct{}
	refusing bool
	closed   bool
}

// token is one device token the cloud issued.
type token struct {
	agentID string // bound at issue or at its first connection; empty until then
	revoked bool
}

// New makes a Cloud. It starts nothing: connections are served by the
// http.Server that serves Handler.
func New(opts Options) *Cloud {
	opts = opts.withDefaults()
	c := &Cloud{
		opts:     opts,
		log:      opts.Logger,
		changed:  make(chan struct{}),
		agents:   map[string]*agent{},
		tokens:   map[string]*token{},
		devices:  map[string]*deviceAuth{},
		users:    map[string]*deviceAuth{},
		sessions: map[*session]struct{}{},
	}
	c.upgrader = websocket.Upgrader{
		Subprotocols: []string{wire.Subprotocol},
		// Agents are not browsers; the token is what authenticates.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+AgentPath, c.serveAgent)
	c.routeDevice(mux)
	c.routeAPI(mux)
	// No catch-all: it would take wrong methods from the mux's 405.
	c.handler = mux
	return c
}

// Handler serves the agent websocket, the device flow and the test API.
func (c *Cloud) Handler() http.Handler { return c.handler }

// Close drops every connection, refuses new ones and waits until every
// goroutine serving a connection has ended. Recorded state stays readable.
// It is safe to call more than once.
func (c *Cloud) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.DropAll()
	c.wg.Wait()
	return nil
}

// Wait returns once cond reports true, or with ctx's error. cond is
// called again after every change the cloud records (a connection, a
// frame, a queued job, ...); it may call the Cloud's methods.
func (c *Cloud) Wait(ctx context.Context, cond func() bool) error {
	for {
		c.mu.Lock()
		ch := c.changed
		c.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("cloudtest: wait: %w", ctx.Err())
		}
	}
}

// notify wakes every Wait. c.mu must be held.
func (c *Cloud) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// IssueToken makes a device token bound to agentID, as pairing would, for
// tests that skip pairing.
func (c *Cloud) IssueToken(agentID string) string {
	tok := randomString(32)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokens[tok] = &token{agentID: agentID}
	c.agentLocked(agentID)
	c.notify()
	return tok
}

// Revoke revokes a device token: handshakes with it are refused with 401
// from now on, and every connection that presented it is sent a revoke
// frame and closed. It reports whether the token was known and not yet
// revoked.
func (c *Cloud) Revoke(tok string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tokens[tok]
	if !ok || t.revoked {
		return false
	}
	t.revoked = true
	for s := range c.sessions {
		if s.token == tok {
			s.revokeLocked("the device token was revoked")
		}
	}
	c.notify()
	return true
}

// RevokeAgent revokes every token bound to agentID, as Revoke does, and
// returns how many it revoked.
func (c *Cloud) RevokeAgent(agentID string) int {
	c.mu.Lock()
	var toks []string
	for k, t := range c.tokens {
		if t.agentID == agentID && !t.revoked {
			toks = append(toks, k)
		}
	}
	c.mu.Unlock()
	n := 0
	for _, k := range toks {
		if c.Revoke(k) {
			n++
		}
	}
	return n
}

// DropAll ends every websocket connection at once, as a WAN outage would:
// the TCP connection is reset (no close frame), and DropAll returns when
// each connection's goroutines have ended, with how many it dropped.
// Unacknowledged jobs stay queued and are resent when the agent is back.
func (c *Cloud) DropAll() int {
	c.mu.Lock()
	list := make([]*session, 0, len(c.sessions))
	for s := range c.sessions {
		list = append(list, s)
	}
	c.mu.Unlock()
	for _, s := range list {
		s.reset("dropped")
	}
	for _, s := range list {
		<-s.ended
	}
	return len(list)
}

// SetRefusing switches the websocket endpoint off (true) or back on. While
// off, a new connection is reset before any HTTP answer, as if the WAN
// were down; connections already up are left alone (DropAll ends them).
// The device flow and the test API keep answering.
func (c *Cloud) SetRefusing(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refusing = on
	c.notify()
}

// Agents describes every agent the cloud knows, sorted by id.
func (c *Cloud) Agents() []AgentInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]AgentInfo, 0, len(c.agents))
	for _, a := range c.agents {
		out = append(out, a.info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AgentID < out[j].AgentID })
	return out
}
