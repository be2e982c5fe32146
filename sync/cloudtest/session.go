package cloudtest

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"printgate/sync/wire"
)

// closeGrace is how long a connection the cloud closes (revoke, replaced,
// no hello) waits for the agent's close frame before the TCP connection is
// closed; waiting lets the agent read what was sent last.
const closeGrace = time.Second

// session is one agent websocket connection.
type session struct {
	c       *Cloud
	conn    *websocket.Conn
	agentID string
	token   string
	log     *slog.Logger

	// Guarded by c.mu.
	out     []outFrame // written in order by writeLoop
	closing bool       // a close is queued: nothing more is sent
	hello   bool       // hello received and welcome queued
	reason  string     // why the cloud ended it, when it did

	wake      chan struct{} // capacity 1: out has frames
	stop      chan struct{} // closed when the reader ends
	ended     chan struct{} // closed when the connection is fully gone
	resetOnce sync.Once
}

// outFrame is a text frame to write, or the close frame that ends it all.
type outFrame struct {
	data  []byte
	close bool
	code  int
	text  string
}

// serveAgent checks a websocket handshake (§5) and serves the connection
// until it ends.
func (c *Cloud) serveAgent(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	closed, refusing := c.closed, c.refusing
	c.mu.Unlock()
	switch {
	case closed:
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the cloud is closed")
		return
	case refusing:
		resetHTTP(w)
		return
	}
	agentID := r.Header.Get(wire.HeaderAgent)
	if agentID == "" {
		writeError(w, http.StatusBadRequest, "bad_request", wire.HeaderAgent+" is required: the agent's id")
		return
	}
	tok, ok := bearer(r)
	if !ok && c.opts.Broken.AcceptAnyToken {
		tok, ok = "(none) "+agentID, true
	}
	if !ok {
		unauthorized(w, "Authorization: Bearer <device token> is required")
		return
	}
	c.mu.Lock()
	t := c.tokens[tok]
	if t == nil && c.opts.Broken.AcceptAnyToken {
		t = &token{agentID: agentID}
		c.tokens[tok] = t
	}
	switch {
	case t == nil:
		c.mu.Unlock()
		unauthorized(w, "unknown device token: pair again")
		return
	case t.revoked:
		c.mu.Unlock()
		unauthorized(w, "the device token was revoked: pair again")
		return
	case t.agentID != "" && t.agentID != agentID:
		c.mu.Unlock()
		unauthorized(w, "the device token belongs to another agent")
		return
	}
	if t.agentID == "" {
		// A token from the device flow belongs to the first agent that
		// connects with it.
		t.agentID = agentID
		c.agentLocked(agentID)
	}
	c.mu.Unlock()
	if !slices.Contains(websocket.Subprotocols(r), wire.Subprotocol) {
		writeError(w, http.StatusBadRequest, "bad_request", "Sec-WebSocket-Protocol must offer "+wire.Subprotocol)
		return
	}
	conn, err := c.upgrader.Upgrade(w, r, nil)
	if err != nil {
		// The upgrader has answered already.
		c.log.Info("cloudtest: websocket handshake failed", "agent", agentID, "err", err)
		return
	}
	s := &session{
		c: c, conn: conn, agentID: agentID, token: tok,
		log:  c.log.With("agent", agentID, "remote", r.RemoteAddr),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), ended: make(chan struct{}),
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		conn.Close()
		return
	}
	c.sessions[s] = struct{}{}
	c.wg.Add(1)
	if t.revoked {
		s.revokeLocked("the device token was revoked")
	}
	c.mu.Unlock()
	defer c.wg.Done()
	s.log.Info("cloudtest: agent connected")
	s.run()
}

// run reads frames until the connection ends, then cleans up.
func (s *session) run() {
	c, conn := s.c, s.conn
	conn.SetReadLimit(wire.ReadLimit)
	alive := func() { conn.SetReadDeadline(time.Now().Add(c.opts.SilenceTimeout)) }
	alive()
	conn.SetPongHandler(func(string) error { alive(); return nil })
	conn.SetPingHandler(func(data string) error {
		alive()
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(c.opts.WriteTimeout))
		var ne net.Error
		if errors.Is(err, websocket.ErrCloseSent) || errors.As(err, &ne) && ne.Timeout() {
			return nil // as gorilla's default handler
		}
		return err
	})
	written := make(chan struct{})
	go func() {
		defer close(written)
		s.writeLoop()
	}()
	var readErr error
	for {
		mt, data, err := conn.ReadMessage()
		if err != nil {
			readErr = err
			break
		}
		alive()
		s.handle(mt, data)
	}
	close(s.stop)
	<-written
	conn.Close()

	c.mu.Lock()
	reason := s.reason
	if reason == "" {
		reason = describeReadError(readErr, c.opts.SilenceTimeout)
	}
	delete(c.sessions, s)
	if a := c.agents[s.agentID]; a != nil && a.sess == s {
		a.sess, a.lastDrop = nil, reason
	}
	c.notify()
	c.mu.Unlock()
	s.log.Info("cloudtest: agent disconnected", "reason", reason)
	close(s.ended)
}

// describeReadError says in words why reading ended.
func describeReadError(err error, silence time.Duration) string {
	var ne net.Error
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("silent for %v", silence)
	case errors.As(err, &ce):
		return fmt.Sprintf("agent closed (%d %s)", ce.Code, ce.Text)
	case errors.Is(err, websocket.ErrReadLimit):
		return fmt.Sprintf("frame over %d bytes", wire.ReadLimit)
	}
	return fmt.Sprintf("read: %v", err)
}

// writeLoop writes queued frames in order and pings, until the reader
// ends or a write fails.
func (s *session) writeLoop() {
	c := s.c
	ping := time.NewTicker(c.opts.PingInterval)
	defer ping.Stop()
	pings := ping.C
	if c.opts.Broken.NoPing {
		pings = nil
	}
	for {
		select {
		case <-s.stop:
			return
		case <-pings:
			if err := s.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.opts.WriteTimeout)); err != nil {
				s.log.Info("cloudtest: ping failed", "err", err)
				s.conn.Close()
				return
			}
		case <-s.wake:
			c.mu.Lock()
			batch := s.out
			s.out = nil
			c.mu.Unlock()
			for _, f := range batch {
				if f.close {
					s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(f.code, f.text),
						time.Now().Add(c.opts.WriteTimeout))
					grace := time.NewTimer(closeGrace)
					select {
					case <-s.stop: // the agent answered the close
					case <-grace.C:
					}
					grace.Stop()
					s.conn.Close()
					return
				}
				s.conn.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout))
				if err := s.conn.WriteMessage(websocket.TextMessage, f.data); err != nil {
					s.log.Info("cloudtest: write failed", "err", err)
					s.conn.Close()
					return
				}
			}
		}
	}
}

// maxOut bounds the frames waiting to be written on one connection: every
// queued job plus room for acks and commands. An agent that reads too
// slowly for that is dropped.
func (s *session) maxOut() int { return s.c.opts.MaxQueuedJobs + 1024 }

// sendLocked queues a text frame. c.mu must be held.
func (s *session) sendLocked(frame []byte) {
	if s.closing {
		return
	}
	if len(s.out) >= s.maxOut() {
		s.closing, s.out, s.reason = true, nil, "too slow: frames waiting to be written over the limit"
		s.conn.Close() // does not block; the reader ends and cleans up
		return
	}
	s.out = append(s.out, outFrame{data: frame})
	s.kick()
}

// closeLocked queues a close frame; nothing is sent after it. c.mu must be
// held.
func (s *session) closeLocked(code int, why string) {
	if s.closing {
		return
	}
	s.closing, s.reason = true, why
	s.out = append(s.out, outFrame{close: true, code: code, text: why})
	s.kick()
}

// revokeLocked sends revoke and closes. c.mu must be held.
func (s *session) revokeLocked(why string) {
	if s.closing {
		return
	}
	frame, _ := wire.Encode(&wire.Revoke{Reason: why}) // a revoke always encodes
	if !s.c.opts.Broken.NoRevokeFrame {
		s.sendLocked(frame)
	}
	s.closeLocked(websocket.ClosePolicyViolation, "revoked")
}

func (s *session) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// reset ends the connection as a network failure would: the TCP
// connection is reset, no close frame is sent.
func (s *session) reset(why string) {
	s.resetOnce.Do(func() {
		s.c.mu.Lock()
		if s.reason == "" {
			s.reason = why
		}
		s.closing = true
		s.c.mu.Unlock()
		nc := s.conn.NetConn()
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		nc.Close()
	})
}

// handle acts on one frame from the agent.
func (s *session) handle(mt int, data []byte) {
	c := s.c
	if mt != websocket.TextMessage {
		s.refuse(&wire.Error{Code: wire.CodeBadJSON, Message: "frame: is binary; a frame is one JSON object in a text frame"})
		return
	}
	m, err := wire.Decode(data)
	if err != nil {
		var fe *wire.FrameError
		if !errors.As(err, &fe) {
			fe = &wire.FrameError{Code: wire.CodeBadJSON, Reason: err.Error()}
		}
		s.log.Warn("cloudtest: refused a frame", "err", fe)
		s.refuse(fe.Reply())
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.closing {
		return
	}
	a := c.agentLocked(s.agentID)
	defer c.notify()
	if !s.hello {
		s.helloLocked(a, m)
		return
	}
	max := c.opts.MaxRecords
	switch m := m.(type) {
	case *wire.Events:
		s.eventsLocked(a, m)
	case *wire.JobAck:
		a.acks = appendBounded(a.acks, max, *m)
		keep := m.Result == wire.ResultRejected && c.opts.Broken.ResendRejected
		if i := slices.IndexFunc(a.jobs, func(q *queuedJob) bool { return q.job.TaskNo == m.TaskNo }); i >= 0 && !keep {
			a.jobs = slices.Delete(a.jobs, i, i+1)
		}
	case *wire.Printers:
		a.pushes = appendBounded(a.pushes, max, m.Printers)
	case *wire.CommandResult:
		if !c.opts.Broken.LoseResults {
			a.results = appendBounded(a.results, max, *m)
		}
	case *wire.LogLines:
		if !c.opts.Broken.LoseResults {
			a.logs = appendBounded(a.logs, max, *m)
		}
	case *wire.Error:
		s.log.Warn("cloudtest: the agent refused a frame", "code", m.Code, "message", m.Message, "frame_type", m.FrameType)
		a.errs = appendBounded(a.errs, max, *m)
	case *wire.Hello:
		s.refuseLocked(a, &wire.Error{Code: wire.CodeInvalid, FrameType: m.Type(),
			Message: "hello frame: was already received on this connection; send it once, first"})
	default:
		s.refuseLocked(a, &wire.Error{Code: wire.CodeInvalid, FrameType: m.Type(),
			Message: fmt.Sprintf("%s frame: is sent by the cloud, not by an agent", m.Type())})
	}
}

// helloLocked handles the first frame: a hello naming the handshake's
// agent is answered with welcome and the agent's queued jobs; anything
// else is refused and the connection closed.
func (s *session) helloLocked(a *agent, m wire.Message) {
	c := s.c
	h, ok := m.(*wire.Hello)
	if !ok {
		s.refuseLocked(a, &wire.Error{Code: wire.CodeInvalid, FrameType: m.Type(),
			Message: fmt.Sprintf("%s frame: hello must be the first frame", m.Type())})
		s.closeLocked(websocket.ClosePolicyViolation, "hello expected")
		return
	}
	if h.AgentID != s.agentID {
		s.refuseLocked(a, &wire.Error{Code: wire.CodeInvalid, FrameType: h.Type(),
			Message: fmt.Sprintf("hello frame: agent_id: is %q but the handshake's %s is %q", h.AgentID, wire.HeaderAgent, s.agentID)})
		s.closeLocked(websocket.ClosePolicyViolation, "agent_id mismatch")
		return
	}
	storeID := c.opts.StoreID
	if storeID == "" {
		storeID = "store-" + s.agentID
	}
	welcome, err := wire.Encode(&wire.Welcome{StoreID: storeID, ServerTime: c.opts.Clock.Now().UTC()})
	if err != nil {
		s.log.Error("cloudtest: welcome", "err", err)
		s.closeLocked(websocket.CloseInternalServerErr, "welcome")
		return
	}
	broken := c.opts.Broken
	if broken.RenumberResent {
		for _, q := range a.jobs {
			if q.sends > 0 {
				q.renumber()
			}
		}
	}
	if broken.JobsBeforeWelcome {
		s.sendJobsLocked(a)
	}
	s.sendLocked(welcome)
	s.hello = true
	if old := a.sess; old != nil {
		old.closeLocked(websocket.CloseNormalClosure, "replaced by a newer connection")
	}
	a.sess = s
	a.connects++
	a.hello = h
	a.pushes = appendBounded(a.pushes, c.opts.MaxRecords, h.Printers)
	if !broken.JobsBeforeWelcome {
		s.sendJobsLocked(a)
	}
}

// sendJobsLocked pushes every job a has not acknowledged. c.mu must be
// held.
func (s *session) sendJobsLocked(a *agent) {
	for _, q := range a.jobs {
		q.sends++
		s.sendLocked(q.frame)
	}
	if s.c.opts.Broken.DropJobOnSend {
		a.jobs = nil
	}
}

// eventsLocked records a batch, each (task_no, seq, n) once, and
// acknowledges it.
func (s *session) eventsLocked(a *agent, m *wire.Events) {
	if err := m.Ordered(); err != nil {
		s.log.Warn("cloudtest: events batch out of order (stored anyway)", "err", err)
	}
	broken := s.c.opts.Broken
	evs := m.Events
	if broken.ReorderBatch {
		evs = slices.Clone(evs)
		slices.Reverse(evs)
	}
	for _, ev := range evs {
		k := eventKey{ev.TaskNo, ev.Seq, ev.N}
		if broken.IgnoreSeq {
			k.seq = 0
		}
		if _, dup := a.seen[k]; dup && !broken.ForgetDedupe {
			a.dupes++
			continue
		}
		a.seen[k] = struct{}{}
		a.events = append(a.events, ev)
	}
	if over := len(a.events) - s.c.opts.MaxEvents; over > 0 {
		for _, ev := range a.events[:over] {
			k := eventKey{ev.TaskNo, ev.Seq, ev.N}
			if s.c.opts.Broken.IgnoreSeq {
				k.seq = 0
			}
			delete(a.seen, k)
		}
		a.events = slices.Delete(a.events, 0, over)
		a.dropped += over
		s.log.Warn("cloudtest: events forgotten to stay under the limit", "forgotten", over, "max_events", s.c.opts.MaxEvents)
	}
	a.batches++
	if drop := s.c.opts.DropEventsAck; drop != nil && drop(s.agentID, m.Batch) {
		a.acksDropped++
		s.log.Info("cloudtest: events_ack dropped on purpose", "batch", m.Batch)
		return
	}
	ack, err := wire.Encode(&wire.EventsAck{Batch: m.Batch})
	if err != nil {
		s.log.Error("cloudtest: events_ack", "err", err)
		return
	}
	s.sendLocked(ack)
	if broken.AckUnreceived {
		if fake, err := wire.Encode(&wire.EventsAck{Batch: m.Batch + "0"}); err == nil {
			s.sendLocked(fake)
		}
	}
}

// refuse answers a frame with an error frame.
func (s *session) refuse(e *wire.Error) {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.refuseLocked(s.c.agentLocked(s.agentID), e)
	s.c.notify()
}

func (s *session) refuseLocked(a *agent, e *wire.Error) {
	a.refused++
	frame, err := wire.Encode(e)
	if err != nil {
		s.log.Error("cloudtest: error frame", "err", err)
		return
	}
	s.sendLocked(frame)
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

// unauthorized answers 401 with the challenge of RFC 6750.
func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	writeError(w, http.StatusUnauthorized, "unauthorized", msg)
}

// resetHTTP resets the client's TCP connection without answering, as an
// unreachable cloud would.
func resetHTTP(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the cloud refuses connections")
		return
	}
	nc, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	nc.Close()
}
