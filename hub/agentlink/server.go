package agentlink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"printgate/hub/metrics"
	"printgate/hub/store"
	"printgate/internal/clock"
	"printgate/internal/warnlimit"
	"printgate/sync/wire"
)

// Path is where agents open the websocket (the path of the [cloud] url in
// the agent's config), as the reference cloud's.
const Path = "/agent/v1"

// Defaults of Options, those of PROTOCOL.md §5.
const (
	DefaultWriteTimeout = 10 * time.Second
	// storeTimeout bounds one write to the store on behalf of a frame.
	storeTimeout = 10 * time.Second
	// closeGrace is how long a connection the hub closes waits for the
	// agent's close frame, so the agent reads what was sent last.
	closeGrace = time.Second
	// connBudget bounds the handshakes one store's agent may make within
	// connWindow: each connection costs a few log lines and two writes of
	// the owner record, and a stolen token fighting the real agent would
	// otherwise make them as fast as it can. The agent's link reconnects
	// with backoff, far below it.
	connBudget = 30
	connWindow = time.Minute
	// outFrames bounds the frames queued for one connection's writer; a
	// sender waits for room (jobs are read from the store one at a time, so
	// a backlog costs this many frames of memory, not the backlog).
	outFrames = 64
)

// Options configures a Server.
type Options struct {
	// Clock stamps records (default the real clock).
	Clock clock.Clock
	// Logger receives the link's lines (default slog.Default()).
	Logger *slog.Logger
	// PingInterval, SilenceTimeout and WriteTimeout default to §5's 20 s,
	// 60 s and 10 s.
	PingInterval, SilenceTimeout, WriteTimeout time.Duration
	// Metrics counts acks and events and the agents connected (nil: none).
	Metrics *metrics.Metrics
	// Observer, when set, is told what the link does (the test API of
	// PROTOCOL.md §7 records it); nil in production.
	Observer Observer
}

// Observer is told what the link does, as it happens. Its methods are
// called on the connection's goroutines and must not block.
type Observer interface {
	// Welcomed: an agent's hello was answered on a new connection.
	Welcomed(store, agentID string)
	// Sent: a job was queued on a connection of the store's agent.
	Sent(store string, job wire.Job)
	// Acked: a job_ack was recorded (on disk).
	Acked(store string, ack wire.JobAck)
	// Stored: events new to the store's record, on disk, in arrival order.
	Stored(store string, evs []wire.Event)
	// Received: a command_result or log_lines frame.
	Received(store string, m wire.Message)
}

// ErrNotConnected means the store's agent has no welcomed connection on
// this node.
var ErrNotConnected = errors.New("the store's agent is not connected to this hub node")

// Server serves the agents' websocket of PROTOCOL.md §5 for one hub node.
// Serve it at Path; stop it with Close.
type Server struct {
	st       *store.Store
	opts     Options
	log      *slog.Logger
	warn     warnlimit.Limiter
	upgrader websocket.Upgrader
	seq      atomic.Uint64
	wg       sync.WaitGroup

	unwatch func() // ends the watch of owner records

	mu     sync.Mutex
	owners map[string]*conn // by store: the connection holding it on this node
	all    map[*conn]struct{}
	status map[string]*AgentStatus     // by store: what its agent last said
	budget map[string]*connCount       // by store: handshakes in the current window
	tails  map[string]map[string]*Tail // by store and tail id: the log tails running
	closed bool
}

// connCount is a store's handshakes since start.
type connCount struct {
	start  time.Time
	n      int
	warned bool // the window's one line about the refusals was logged
}

// admit counts a handshake of the store and reports how long it must wait
// when the store's budget is spent (0: admitted). The first refusal of a
// window is logged, the others are not: a refusal must not cost a line.
func (s *Server) admit(store string) time.Duration {
	now := s.opts.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.budget[store]
	if c == nil || now.Sub(c.start) >= connWindow {
		if c == nil && len(s.budget) >= 1024 {
			// Stores whose window is over are forgotten; the map holds
			// only stores whose device token passed the check.
			for k, v := range s.budget {
				if now.Sub(v.start) >= connWindow {
					delete(s.budget, k)
				}
			}
		}
		c = &connCount{start: now}
		s.budget[store] = c
	}
	if c.n >= connBudget {
		if !c.warned {
			c.warned = true
			s.log.Warn("hub: a store's agent opens connections too fast; its handshakes are refused (503) until the minute is over",
				"store", store, "connections", c.n)
		}
		return connWindow - now.Sub(c.start)
	}
	c.n++
	return 0
}

// AgentStatus is what this node knows of a store's agent: from its last
// hello and printers frames, and its connection. It is kept in memory (a
// restarted node knows a store again once its agent reconnects).
type AgentStatus struct {
	Online   bool           `json:"online"`
	AgentID  string         `json:"agent_id,omitempty"`
	Version  string         `json:"version,omitempty"`
	Printers []wire.Printer `json:"printers"`
	Outbox   int            `json:"outbox"`
	Since    time.Time      `json:"since,omitzero"`     // when the current (or last) connection was welcomed
	LastSeen time.Time      `json:"last_seen,omitzero"` // when the last connection ended; zero while online
	LastDrop string         `json:"last_drop,omitempty"`
}

// SilentAfter is how long an agent may send nothing (no frame, ping or
// pong) before its store is shown offline: two of §5's 20 s pings missed.
// The connection itself is dropped only at §5's 60 s of silence, but the
// fleet page and GET /v1/stores must show a store offline within 60 s of
// its link going silent, and they refresh every few seconds.
const SilentAfter = 40 * time.Second

// Status returns what this node knows of the store's agent; false when
// no agent of the store has connected to it since it started. A store
// whose agent has been silent for SilentAfter is offline, its LastSeen
// when it was last heard, though its connection is still open.
func (s *Server) Status(store string) (AgentStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status[store]
	if st == nil {
		return AgentStatus{}, false
	}
	out := *st
	out.Printers = slices.Clone(st.Printers)
	if c := s.owners[store]; out.Online && c != nil {
		if n := c.heard.Load(); n != 0 {
			heard := time.Unix(0, n).UTC()
			if silent := s.opts.Clock.Now().Sub(heard); silent >= SilentAfter {
				out.Online, out.LastSeen = false, heard
				out.LastDrop = fmt.Sprintf("silent for %v (no frame, ping or pong); the connection is dropped after %v", silent.Round(time.Second), s.opts.SilenceTimeout)
			}
		}
	}
	return out, true
}

// New makes a Server over st. It watches the owner records, so that a
// store's connection here is closed when a newer one is claimed on
// another node.
func New(st *store.Store, opts Options) *Server {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = wire.PingInterval
	}
	if opts.SilenceTimeout <= 0 {
		opts.SilenceTimeout = wire.SilenceTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	s := &Server{
		st: st, opts: opts, log: opts.Logger,
		owners: map[string]*conn{}, all: map[*conn]struct{}{}, status: map[string]*AgentStatus{},
		budget: map[string]*connCount{}, tails: map[string]map[string]*Tail{},
	}
	s.warn.Now = opts.Clock.Now
	s.upgrader = websocket.Upgrader{
		Subprotocols: []string{wire.Subprotocol},
		// Agents are not browsers: the device token authenticates.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	unwatch, err := st.WatchOwners(s.claimed)
	if err != nil {
		// Without the watch only a connection on this node replaces an
		// older one; the agent's own reconnect still wins in the end.
		s.log.Error("hub: watch owner records", "err", err)
		unwatch = func() {}
	}
	s.unwatch = unwatch
	return s
}

// claimed sees an owner record written on any node: a claim newer than
// the one a connection here holds for that store (another connection,
// another node) closes it, as a newer connection on this node does.
func (s *Server) claimed(store string, o store.Owner, rev uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.owners[store]
	// Connection ids are unique per node only (a time and this node's
	// count): the same id written by another node is another connection.
	if c == nil || (c.id == o.Conn && o.Node == s.st.Node()) {
		return
	}
	// A claim in progress (ownerRev 0) is newer than any record seen
	// before it: compare-and-set orders the writes.
	if held := c.claimRev.Load(); held != 0 && rev > held {
		c.closeWith(websocket.CloseNormalClosure, "replaced by a newer connection on hub node "+o.Node)
	}
}

// Connected is how many agents have a welcomed connection on this node.
func (s *Server) Connected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.owners)
}

// IsConnected reports whether the store's agent has a welcomed connection
// on this node.
func (s *Server) IsConnected(store string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owners[store] != nil
}

// Send queues a frame (a command: reprint, cancel, logs_tail, logs_stop)
// on the store's connection; ErrNotConnected when there is none.
func (s *Server) Send(store string, m wire.Message) error {
	s.mu.Lock()
	c := s.owners[store]
	s.mu.Unlock()
	if c == nil || !c.sendMsg(m) {
		return ErrNotConnected
	}
	return nil
}

// Revoke tells the store's connected agent its token is revoked (a revoke
// frame, then close 1008); the caller revokes the tokens in the store
// first, so the agent's next handshake is refused. It reports whether an
// agent was connected.
func (s *Server) Revoke(store, reason string) bool {
	s.mu.Lock()
	c := s.owners[store]
	s.mu.Unlock()
	if c == nil {
		return false
	}
	c.sendMsg(&wire.Revoke{Reason: reason})
	c.closeWith(websocket.ClosePolicyViolation, "revoked")
	return true
}

// Close ends every connection (close 1001) and refuses new ones, and
// returns once every goroutine serving one has ended.
func (s *Server) Close() {
	s.unwatch()
	s.mu.Lock()
	s.closed = true
	for c := range s.all {
		c.closeWith(websocket.CloseGoingAway, "the hub is shutting down")
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// ServeHTTP checks the handshake of §5 (device token, agent id,
// subprotocol) and serves the connection until it ends.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	agentID := r.Header.Get(wire.HeaderAgent)
	if agentID == "" || len(agentID) > 128 {
		writeError(w, http.StatusBadRequest, "bad_request", wire.HeaderAgent+" is required: the agent's id, at most 128 characters")
		return
	}
	tok, ok := bearer(r)
	if !ok {
		unauthorized(w, "Authorization: Bearer <device token> is required")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	dev, err := s.st.AuthDevice(ctx, tok, agentID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		unauthorized(w, "unknown device token: pair this agent again")
		return
	case errors.Is(err, store.ErrRevoked):
		unauthorized(w, "the device token was revoked: pair this agent again")
		return
	case errors.Is(err, store.ErrExists):
		unauthorized(w, "the device token belongs to another agent: pair this agent again")
		return
	case err != nil:
		s.log.Error("hub: device token check", "agent", agentID, "err", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the hub cannot check tokens now; retry")
		return
	}
	st, err := s.st.StoreInfo(ctx, dev.Store)
	if err != nil {
		unauthorized(w, "the device token's store is gone: pair this agent again")
		return
	}
	if !slices.Contains(websocket.Subprotocols(r), wire.Subprotocol) {
		writeError(w, http.StatusBadRequest, "bad_request", "Sec-WebSocket-Protocol must offer "+wire.Subprotocol)
		return
	}
	if wait := s.admit(st.ID); wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		writeError(w, http.StatusServiceUnavailable, "unavailable",
			"this store's agent opened too many connections in the last minute; retry after Retry-After seconds")
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the hub is shutting down; retry")
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.log.Info("hub: websocket handshake failed", "agent", agentID, "err", err)
		return // the upgrader has answered
	}
	c := &conn{
		srv: s, ws: ws, id: s.opts.Clock.Now().UTC().Format("20060102T150405") + "-" + strconv.FormatUint(s.seq.Add(1), 10),
		agentID: agentID, store: st,
		log:  s.log.With("store", st.ID, "agent", agentID, "remote", r.RemoteAddr),
		out:  make(chan []byte, outFrames),
		ctl:  make(chan closeFrame, 1),
		done: make(chan struct{}),
		read: make(chan struct{}),
		kick: make(chan struct{}, 1),
		sent: map[string]bool{},
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close()
		return
	}
	s.all[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	c.log.Info("hub: agent connected")
	c.run()
}

// bearer reads the token of "Authorization: Bearer <token>".
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get(wire.HeaderAuthorization), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", false
	}
	return tok, true
}

// unauthorized answers 401 with the challenge of RFC 6750: the agent then
// goes unpaired instead of reconnecting (PROTOCOL.md §6).
func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	writeError(w, http.StatusUnauthorized, "unauthorized", msg)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	body, _ := json.Marshal(map[string]map[string]string{"error": {"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
