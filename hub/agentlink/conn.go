package agentlink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"printgate/hub/store"
	"printgate/sync/wire"
)

// conn is one agent's websocket connection.
type conn struct {
	srv     *Server
	ws      *websocket.Conn
	id      string
	agentID string
	store   store.StoreInfo
	log     *slog.Logger

	out  chan []byte     // text frames for the writer, in order
	ctl  chan closeFrame // a close frame ends the writer
	done chan struct{}   // closed once the connection is ending
	read chan struct{}   // closed when the reader has ended
	end  sync.Once
	kick chan struct{} // capacity 1: the pump has pending jobs to look at

	// heard is when the agent was last heard (a frame, ping or pong), in
	// Unix nanoseconds on the Server's clock: Status shows a store whose
	// agent is silent for SilentAfter offline before §5 drops the
	// connection.
	heard atomic.Int64

	// claimRev is the revision of this connection's owner record, 0 until
	// it is written; the owner watch reads it.
	claimRev atomic.Uint64

	// Owned by the reader goroutine.
	hello    bool
	ownerRev uint64
	unwatch  func()
	pumped   chan struct{} // closed when the pump ends; nil before hello

	sentMu   sync.Mutex
	sent     map[string]bool // task_nos sent on this connection and not yet acknowledged
	notified []string        // task_nos announced since the pump last looked
	reload   bool            // the pump must list the store's pending jobs
}

// maxNotified bounds the announced task_nos a connection keeps for its
// pump; past it the pump lists the store's pending jobs instead.
const maxNotified = 1024

// closeFrame is a websocket close the writer sends last.
type closeFrame struct {
	code int
	text string
}

// finish marks the connection as ending: senders stop waiting.
func (c *conn) finish() { c.end.Do(func() { close(c.done) }) }

// closeWith asks the writer to send a close frame and end the connection.
// Safe from any goroutine; only the first call counts.
func (c *conn) closeWith(code int, text string) {
	select {
	case c.ctl <- closeFrame{code, text}:
	default:
	}
}

// send queues a frame for the writer; false when the connection ends
// first.
func (c *conn) send(frame []byte) bool {
	select {
	case c.out <- frame:
		return true
	case <-c.done:
		return false
	}
}

// sendMsg encodes and queues m.
func (c *conn) sendMsg(m wire.Message) bool {
	frame, err := wire.Encode(m)
	if err != nil {
		c.log.Error("hub: encode a frame", "type", m.Type(), "err", err)
		return false
	}
	return c.send(frame)
}

// run reads frames until the connection ends, then releases what the
// connection held: its owner record, its job watch, its goroutines.
func (c *conn) run() {
	s, ws := c.srv, c.ws
	ws.SetReadLimit(wire.ReadLimit)
	alive := func() {
		c.heard.Store(s.opts.Clock.Now().UnixNano())
		ws.SetReadDeadline(time.Now().Add(s.opts.SilenceTimeout))
	}
	alive()
	ws.SetPongHandler(func(string) error { alive(); return nil })
	ws.SetPingHandler(func(data string) error {
		alive()
		err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(s.opts.WriteTimeout))
		var ne net.Error
		if errors.Is(err, websocket.ErrCloseSent) || errors.As(err, &ne) && ne.Timeout() {
			return nil // as gorilla's default handler
		}
		return err
	})
	written := make(chan struct{})
	go func() {
		defer close(written)
		c.write()
	}()
	var readErr error
	for {
		mt, data, err := ws.ReadMessage()
		if err != nil {
			readErr = err
			break
		}
		alive()
		c.handle(mt, data)
	}
	close(c.read)
	c.finish()
	s.endTails(c)
	<-written
	ws.Close()
	if c.pumped != nil {
		<-c.pumped
	}
	if c.unwatch != nil {
		c.unwatch()
	}
	s.mu.Lock()
	delete(s.all, c)
	mine := s.owners[c.store.ID] == c
	reason := describe(readErr, s.opts.SilenceTimeout)
	if mine {
		delete(s.owners, c.store.ID)
		s.opts.Metrics.Connected(len(s.owners))
		if st := s.status[c.store.ID]; st != nil {
			st.Online, st.LastSeen, st.LastDrop = false, s.opts.Clock.Now().UTC(), reason
		}
	}
	s.mu.Unlock()
	if mine && c.ownerRev != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		if _, err := s.st.Release(ctx, c.store.ID, c.ownerRev); err != nil {
			c.log.Warn("hub: release the store's owner record", "err", err)
		}
		cancel()
	}
	c.log.Info("hub: agent disconnected", "reason", reason)
}

// describe says in words why reading ended.
func describe(err error, silence time.Duration) string {
	var ne net.Error
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("silent for %v", silence)
	case errors.As(err, &ce):
		return fmt.Sprintf("closed (%d %s)", ce.Code, ce.Text)
	case errors.Is(err, websocket.ErrReadLimit):
		return fmt.Sprintf("frame over %d bytes", wire.ReadLimit)
	}
	return fmt.Sprintf("read: %v", err)
}

// write sends queued frames in order and pings, until the connection ends
// or a write fails (then it closes the socket, which ends the reader).
func (c *conn) write() {
	s := c.srv
	ping := time.NewTicker(s.opts.PingInterval)
	defer ping.Stop()
	fail := func(what string, err error) {
		c.log.Info("hub: "+what+" failed", "err", err)
		c.finish()
		c.ws.Close()
	}
	for {
		select {
		case <-c.done:
			return
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.opts.WriteTimeout)); err != nil {
				fail("ping", err)
				return
			}
		case f := <-c.out:
			c.ws.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
			if err := c.ws.WriteMessage(websocket.TextMessage, f); err != nil {
				fail("write", err)
				return
			}
		case cf := <-c.ctl:
			// The frames queued before the close go first: a refusal's
			// error frame says why, and select picks among ready cases at
			// random, so the close once overtook it.
			if err := c.flush(); err != nil {
				fail("write", err)
				return
			}
			c.log.Info("hub: closing the connection", "code", cf.code, "why", cf.text)
			c.finish()
			c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(cf.code, cf.text), time.Now().Add(s.opts.WriteTimeout))
			grace := time.NewTimer(closeGrace)
			defer grace.Stop()
			// The reader ends when the agent answers the close; wait a
			// little for it, then cut.
			select {
			case <-grace.C:
			case <-c.read:
			}
			c.ws.Close()
			return
		}
	}
}

// flush writes the frames already queued, without waiting for more.
func (c *conn) flush() error {
	for {
		select {
		case f := <-c.out:
			c.ws.SetWriteDeadline(time.Now().Add(c.srv.opts.WriteTimeout))
			if err := c.ws.WriteMessage(websocket.TextMessage, f); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// handle acts on one frame from the agent.
func (c *conn) handle(mt int, data []byte) {
	if mt != websocket.TextMessage {
		c.refuse(&wire.Error{Code: wire.CodeBadJSON, Message: "frame: is binary; a frame is one JSON object in a text frame"})
		return
	}
	m, err := wire.Decode(data)
	if err != nil {
		var fe *wire.FrameError
		if !errors.As(err, &fe) {
			fe = &wire.FrameError{Code: wire.CodeBadJSON, Reason: err.Error()}
		}
		c.srv.warn.Warn(c.log, "hub: refused a frame from an agent", "store", c.store.ID, "err", fe)
		c.refuse(fe.Reply())
		return
	}
	if !c.hello {
		c.onHello(m)
		return
	}
	switch m := m.(type) {
	case *wire.Events:
		c.onEvents(m)
	case *wire.JobAck:
		c.onJobAck(m)
	case *wire.Printers:
		c.log.Debug("hub: printers", "printers", m.Printers)
		c.srv.mu.Lock()
		if st := c.srv.status[c.store.ID]; st != nil && c.srv.owners[c.store.ID] == c {
			st.Printers = slices.Clone(m.Printers)
		}
		c.srv.mu.Unlock()
	case *wire.CommandResult:
		if err := store.ValidTaskNo(m.ID); err != nil {
			c.refuseKey(m.Type(), "id", m.ID, err)
			return
		}
		if t := c.srv.tailOf(c, m.ID); t != nil {
			t.onResult(m)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		if err := c.srv.st.CommandAnswered(ctx, c.store.ID, *m, c.srv.opts.Clock.Now().UTC()); err != nil {
			c.srv.warn.Warn(c.log, "hub: record a command_result", "store", c.store.ID, "id", m.ID, "err", err)
		}
		cancel()
		if obs := c.srv.opts.Observer; obs != nil {
			obs.Received(c.store.ID, m)
		}
	case *wire.LogLines:
		if t := c.srv.tailOf(c, m.ID); t != nil {
			t.deliver(m.Lines)
			return
		}
		if obs := c.srv.opts.Observer; obs != nil {
			obs.Received(c.store.ID, m)
		} else {
			c.log.Debug("hub: log lines with no tail to take them", "id", m.ID)
		}
	case *wire.Error:
		c.srv.warn.Warn(c.log, "hub: the agent refused a frame", "store", c.store.ID, "code", m.Code, "message", m.Message, "frame_type", m.FrameType)
	case *wire.Hello:
		c.refuse(&wire.Error{Code: wire.CodeInvalid, FrameType: m.Type(),
			Message: "hello frame: was already received on this connection; send it once, first"})
	default:
		c.refuse(&wire.Error{Code: wire.CodeInvalid, FrameType: m.Type(),
			Message: fmt.Sprintf("%s frame: is sent by the cloud, not by an agent", m.Type())})
	}
}

func (c *conn) refuse(e *wire.Error) { c.sendMsg(e) }

// refuseKey refuses a frame whose task_no (or command id) is outside the
// task_no alphabet: nothing of it is stored, the agent is told why, and
// the line is rate-limited (only a hostile or broken agent sends one).
func (c *conn) refuseKey(frameType, field, value string, err error) {
	c.srv.warn.Warn(c.log, "hub: refused a frame with a task_no outside the alphabet", "store", c.store.ID, "frame_type", frameType, "err", err)
	if len(value) > 64 {
		value = value[:64] + "…"
	}
	c.refuse(&wire.Error{Code: wire.CodeInvalid, FrameType: frameType,
		Message: fmt.Sprintf("%s frame: %s %q %v; nothing of the frame was stored", frameType, field, value, err)})
}

// onHello takes the first frame: a hello naming the handshake's agent
// makes this connection the store's owner (a newer connection replaces an
// older one), is answered with welcome, and starts the pump of the store's
// pending jobs. Anything else is refused and the connection closed.
func (c *conn) onHello(m wire.Message) {
	h, ok := m.(*wire.Hello)
	if !ok {
		c.refuse(&wire.Error{Code: wire.CodeInvalid, FrameType: m.Type(),
			Message: fmt.Sprintf("%s frame: hello must be the first frame", m.Type())})
		c.closeWith(websocket.ClosePolicyViolation, "hello expected")
		return
	}
	if h.AgentID != c.agentID {
		c.refuse(&wire.Error{Code: wire.CodeInvalid, FrameType: h.Type(),
			Message: fmt.Sprintf("hello frame: agent_id: is %q but the handshake's %s is %q", h.AgentID, wire.HeaderAgent, c.agentID)})
		c.closeWith(websocket.ClosePolicyViolation, "agent_id mismatch")
		return
	}
	s := c.srv
	now := s.opts.Clock.Now().UTC()
	s.mu.Lock()
	if old := s.owners[c.store.ID]; old != nil && old != c {
		old.closeWith(websocket.CloseNormalClosure, "replaced by a newer connection")
	}
	s.owners[c.store.ID] = c
	s.opts.Metrics.Connected(len(s.owners))
	s.status[c.store.ID] = &AgentStatus{Online: true, AgentID: c.agentID, Version: h.Version,
		Printers: slices.Clone(h.Printers), Outbox: h.Outbox, Since: now}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	prev, rev, err := s.st.Claim(ctx, c.store.ID, c.id, c.agentID, now)
	if err != nil {
		c.log.Error("hub: claim the store", "err", err)
		c.closeWith(websocket.CloseInternalServerErr, "the hub could not record the connection; retry")
		return
	}
	c.ownerRev = rev
	c.claimRev.Store(rev)
	if prev.Conn != "" {
		c.log.Info("hub: replaces the store's earlier connection", "previous_node", prev.Node, "previous_conn", prev.Conn)
	}
	c.hello = true
	if !c.sendMsg(&wire.Welcome{StoreID: c.store.ID, ServerTime: now}) {
		return
	}
	unwatch, err := s.st.WatchJobs(c.store.ID, c.announce)
	if err != nil {
		c.log.Error("hub: watch the store's jobs", "err", err)
		c.closeWith(websocket.CloseInternalServerErr, "the hub could not watch the store's jobs; retry")
		return
	}
	c.unwatch = unwatch
	if obs := s.opts.Observer; obs != nil {
		obs.Welcomed(c.store.ID, c.agentID)
	}
	c.pumped = make(chan struct{})
	c.log.Info("hub: agent welcomed", "version", h.Version, "printers", len(h.Printers), "outbox", h.Outbox)
	go c.pump()
	c.sentMu.Lock()
	c.reload = true
	c.sentMu.Unlock()
	c.poke()
}

// announce takes a job stored for the store while this connection holds
// it: the pump sends it without listing every pending job again (a
// listing is a consumer on the engine; one per job would load it).
func (c *conn) announce(taskNo string) {
	c.sentMu.Lock()
	if len(c.notified) >= maxNotified {
		c.notified, c.reload = nil, true
	} else if !c.reload {
		c.notified = append(c.notified, taskNo)
	}
	c.sentMu.Unlock()
	c.poke()
}

// poke wakes the pump.
func (c *conn) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// pump sends the store's pending jobs, oldest first, each once per
// connection (a job is sent again on the next connection until its
// job_ack, under the same task_no): at hello every pending job, then each
// job announced as stored for the store.
func (c *conn) pump() {
	defer close(c.pumped)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-c.done
		cancel()
	}()
	st := c.srv.st
	for {
		select {
		case <-c.done:
			return
		case <-c.kick:
		}
		c.sentMu.Lock()
		reload, pending := c.reload, c.notified
		c.reload, c.notified = false, nil
		c.sentMu.Unlock()
		if reload {
			var err error
			if pending, err = st.Pending(ctx, c.store.ID); err != nil {
				if ctx.Err() == nil {
					c.log.Warn("hub: list the store's pending jobs", "err", err)
					c.sentMu.Lock()
					c.reload = true
					c.sentMu.Unlock()
				}
				continue
			}
		}
		for _, no := range pending {
			if c.wasSent(no) {
				continue
			}
			job, err := st.PendingJob(ctx, c.store.ID, no)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				c.log.Warn("hub: read a pending job", "task_no", no, "err", err)
				continue
			}
			c.markSent(no, true)
			if !c.sendMsg(&job) {
				return
			}
			if obs := c.srv.opts.Observer; obs != nil {
				obs.Sent(c.store.ID, job)
			}
			if err := st.MarkSent(ctx, c.store.ID, no); err != nil && ctx.Err() == nil {
				c.log.Warn("hub: record a job as sent", "task_no", no, "err", err)
			}
		}
	}
}

func (c *conn) wasSent(no string) bool {
	c.sentMu.Lock()
	defer c.sentMu.Unlock()
	return c.sent[no]
}

func (c *conn) markSent(no string, sent bool) {
	c.sentMu.Lock()
	defer c.sentMu.Unlock()
	if sent {
		c.sent[no] = true
	} else {
		delete(c.sent, no)
	}
}

// onJobAck records the agent's answer to a job; the job is not sent again
// once that is on disk.
func (c *conn) onJobAck(m *wire.JobAck) {
	if err := store.ValidTaskNo(m.TaskNo); err != nil {
		c.refuseKey(m.Type(), "task_no", m.TaskNo, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := c.srv.st.ApplyAck(ctx, c.store.ID, *m, c.srv.opts.Clock.Now().UTC()); err != nil {
		// The job stays pending and is sent on the next connection, which
		// the agent answers duplicate: the ack is recorded then.
		c.srv.warn.Warn(c.log, "hub: record a job_ack", "store", c.store.ID, "task_no", m.TaskNo, "err", err)
		return
	}
	c.markSent(m.TaskNo, false)
	c.srv.opts.Metrics.Ack(m.Result)
	if obs := c.srv.opts.Observer; obs != nil {
		obs.Acked(c.store.ID, *m)
	}
}

// onEvents stores a batch, each (store, task_no, seq, n) once, and answers
// events_ack only once every event of it is on disk. A batch that cannot
// be stored is not acknowledged: the agent resends it.
func (c *conn) onEvents(m *wire.Events) {
	for i := range m.Events {
		if err := store.ValidTaskNo(m.Events[i].TaskNo); err != nil {
			// Refused whole and not acknowledged, as a frame Decode
			// refuses: the agent's own task_nos are always in the alphabet.
			c.refuseKey(m.Type(), fmt.Sprintf("events[%d].task_no", i), m.Events[i].TaskNo, err)
			return
		}
	}
	evs := m.Events
	if err := m.Ordered(); err != nil {
		c.srv.warn.Warn(c.log, "hub: events batch out of order (stored anyway)", "store", c.store.ID, "err", err)
		// A task's events are folded in one write; grouped by task_no
		// (each task's in arrival order), a batch that interleaves tasks
		// costs a write per task, not one rewrite of the record per event.
		evs = slices.Clone(evs)
		slices.SortStableFunc(evs, func(a, b wire.Event) int { return strings.Compare(a.TaskNo, b.TaskNo) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	now := c.srv.opts.Clock.Now().UTC()
	added := 0
	var fresh []wire.Event
	for i := 0; i < len(evs); {
		j := i + 1
		for j < len(evs) && evs[j].TaskNo == evs[i].TaskNo {
			j++
		}
		n, err := c.srv.st.ApplyEvents(ctx, c.store, evs[i].TaskNo, evs[i:j], now)
		if err != nil {
			c.srv.warn.Warn(c.log, "hub: store an events batch (not acknowledged; the agent resends it)", "store", c.store.ID, "batch", m.Batch, "err", err)
			return
		}
		added += len(n)
		fresh = append(fresh, n...)
		i = j
	}
	c.srv.opts.Metrics.Events(added)
	if obs := c.srv.opts.Observer; obs != nil && len(fresh) > 0 {
		obs.Stored(c.store.ID, fresh)
	}
	c.log.Debug("hub: events stored", "batch", m.Batch, "events", len(m.Events), "new", added)
	c.sendMsg(&wire.EventsAck{Batch: m.Batch})
}
