package link

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"printgate/internal/clock"
	"printgate/sync/wire"
)

// outcome is how a connection ended, for Run's next move.
type outcome struct {
	welcomed bool          // the cloud welcomed it
	lasted   time.Duration // from dial to end
	unpaired bool          // the token was refused (401/403) or revoked
	revoked  bool          // by a revoke message
	reason   string        // the revoke's reason
	// tokenChanged: CheckToken found the stored token gone or replaced (a
	// manager unpaired, or paired again) and the connection was closed.
	tokenChanged bool
	err          error // why it ended
}

// testHookPong, when set by a test before Run, is called after each pong
// is taken as heard, so a test can move the clock only once it was.
var testHookPong func()

// errTokenChanged ends a connection whose device token was removed or
// replaced while it was open.
var errTokenChanged = errors.New("the device token was removed or replaced")

// errSilence ends a connection on which nothing arrived for SilenceTimeout.
var errSilence = errors.New("no frame or pong from the cloud within the silence timeout")

// connect dials the cloud with token and runs the connection until it ends.
func (l *Link) connect(ctx context.Context, token string) outcome {
	start := l.clock.Now()
	h := http.Header{}
	h.Set(wire.HeaderAuthorization, "Bearer "+token)
	h.Set(wire.HeaderAgent, l.opts.AgentID)
	l.update(func(st *Stats) { st.Dials++ })
	conn, resp, err := l.dialer.DialContext(ctx, l.opts.URL, h)
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			return outcome{unpaired: true, err: fmt.Errorf("handshake with %s: HTTP %d", l.opts.URL, resp.StatusCode)}
		}
		if resp != nil {
			return outcome{err: fmt.Errorf("handshake with %s: HTTP %d: %w", l.opts.URL, resp.StatusCode, err)}
		}
		return outcome{err: fmt.Errorf("dial %s: %w", l.opts.URL, err)}
	}
	if p := conn.Subprotocol(); p != wire.Subprotocol {
		conn.Close()
		return outcome{err: fmt.Errorf("handshake with %s: the server chose subprotocol %q, not %q", l.opts.URL, p, wire.Subprotocol)}
	}
	// Past MaxFrameBytes, so a frame too large is answered, not a close.
	conn.SetReadLimit(wire.ReadLimit)
	s := newSession(l, conn)
	s.token = token
	out := s.run(ctx)
	out.lasted = l.clock.Now().Sub(start)
	return out
}

// inbound is what the reader hands the session loop: a message or the
// error that ended reading.
type inbound struct {
	msg wire.Message
	err error
}

// batch is an events frame sent and not yet acknowledged. Only its keys
// are kept (docs/DESIGN.md, invariant 4): a resend reads its events again.
type batch struct {
	id     string
	keys   [][]byte
	sentAt time.Time // first sent: LastSync waits for every batch sent before it
	due    time.Time // resent if still unacknowledged then
}

// session is one connection. run's goroutine owns the outbox pump state
// (inflight, sent, unacked); the reader, the worker and log tails are its
// goroutines, stopped before run returns.
type session struct {
	l     *Link
	conn  *websocket.Conn
	token string          // the device token the connection was opened with
	ctx   context.Context // canceled when the connection ends
	stop  context.CancelFunc
	wg    sync.WaitGroup

	heard atomic.Int64 // clock time (unix nanos) a frame, ping or pong last arrived

	in   chan inbound // reader → run
	work chan work    // reader → worker: jobs and commands, in order

	wmu       sync.Mutex // serializes writes
	closeOnce sync.Once

	tmu   sync.Mutex
	tails map[string]context.CancelFunc // running logs_tail by id

	// Pump state, run's goroutine only.
	ack      clock.Timer // the ack timeout, armed by armAck for the earliest due batch
	inflight []batch
	sent     map[string]struct{} // keys in flight or acknowledged but not yet deleted
	unacked  [][]byte            // acknowledged keys whose delete failed; retried
}

func newSession(l *Link, conn *websocket.Conn) *session {
	ctx, stop := context.WithCancel(context.Background())
	s := &session{
		l: l, conn: conn, ctx: ctx, stop: stop,
		in:    make(chan inbound, 16),
		work:  make(chan work, 64),
		tails: map[string]context.CancelFunc{},
		sent:  map[string]struct{}{},
	}
	s.markHeard()
	conn.SetPongHandler(func(string) error {
		s.markHeard()
		if testHookPong != nil {
			testHookPong()
		}
		return nil
	})
	conn.SetPingHandler(func(data string) error {
		s.markHeard()
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(l.opts.WriteTimeout))
		if err == websocket.ErrCloseSent {
			return nil
		}
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	})
	return s
}

func (s *session) markHeard() { s.heard.Store(s.l.clock.Now().UnixNano()) }

func (s *session) sinceHeard() time.Duration {
	return s.l.clock.Now().Sub(time.Unix(0, s.heard.Load()))
}

// close ends the connection once; the reader's blocked read returns.
func (s *session) close(code int, text string) {
	s.closeOnce.Do(func() {
		if code != 0 {
			_ = s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text),
				time.Now().Add(time.Second))
		}
		s.conn.Close()
	})
}

// send encodes m and writes it as one text frame. A failed write closes
// the connection, which ends the session.
func (s *session) send(m wire.Message) error {
	frame, err := wire.Encode(m)
	if err != nil {
		return fmt.Errorf("send %s: %w", m.Type(), err)
	}
	return s.write(m.Type(), frame)
}

func (s *session) write(typ string, frame []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(s.l.opts.WriteTimeout))
	if err := s.conn.WriteMessage(websocket.TextMessage, frame); err != nil {
		s.close(0, "")
		return fmt.Errorf("send %s: %w", typ, err)
	}
	return nil
}

// run says hello, waits for welcome and then serves the connection until
// it fails, the cloud revokes the token, or ctx is done.
func (s *session) run(ctx context.Context) (out outcome) {
	l := s.l
	s.wg.Add(2)
	go s.read()
	go s.worker()
	defer func() {
		s.stop()
		s.close(0, "")
		s.wg.Wait()
		if out.welcomed {
			l.setState(StateOffline)
		}
	}()

	// The printers sent in hello are current: a pending change is in them.
	select {
	case <-l.printers:
	default:
	}
	depth, err := l.opts.Outbox.OutboxDepth()
	if err != nil {
		l.log.Warn("cloud link: outbox depth unknown for hello", "err", err)
		depth = 0
	}
	if err := s.send(&wire.Hello{AgentID: l.opts.AgentID, Version: l.opts.Version, Printers: l.opts.Backend.Printers(), Outbox: depth}); err != nil {
		return outcome{err: err}
	}

	store := "" // the welcome's store_id
	welcome := l.clock.NewTimer(l.opts.WelcomeTimeout)
	defer welcome.Stop()
	for waiting := true; waiting; {
		select {
		case <-ctx.Done():
			s.close(websocket.CloseNormalClosure, "agent stopping")
			return outcome{err: ctx.Err()}
		case <-welcome.C():
			return outcome{err: fmt.Errorf("no welcome within %v of hello", l.opts.WelcomeTimeout)}
		case in := <-s.in:
			if in.err != nil {
				return outcome{err: in.err}
			}
			switch m := in.msg.(type) {
			case *wire.Welcome:
				waiting = false
				store = m.StoreID
				l.log.Info("cloud link online", "store_id", m.StoreID, "outbox", depth)
			case *wire.Revoke:
				return s.revoked(m)
			case *wire.Error:
				return outcome{err: fmt.Errorf("the cloud refused hello: %s: %s", m.Code, m.Message)}
			default:
				return outcome{err: fmt.Errorf("the cloud sent %s before welcome", m.Type())}
			}
		}
	}
	welcome.Stop()
	now := l.clock.Now()
	l.update(func(st *Stats) {
		st.State, st.Connects, st.OnlineSince, st.InFlight = StateOnline, st.Connects+1, now, 0
		st.Store = store
	})
	out.welcomed = true

	ping := l.clock.NewTimer(l.opts.PingInterval)
	defer ping.Stop()
	silence := l.clock.NewTimer(l.opts.SilenceTimeout - s.sinceHeard())
	defer silence.Stop()
	poll := l.clock.NewTimer(l.opts.PollInterval)
	defer poll.Stop()
	// ack fires when the earliest in-flight batch is due for a resend; it
	// is re-armed after every change of the window (armAck).
	s.ack = l.clock.NewTimer(l.opts.AckTimeout)
	defer s.ack.Stop()

	fail := func(err error) outcome { out.err = err; return out }
	if err := s.pump(); err != nil {
		return fail(err)
	}
	s.armAck()
	for {
		select {
		case <-ctx.Done():
			s.close(websocket.CloseNormalClosure, "agent stopping")
			return fail(ctx.Err())
		case in := <-s.in:
			if in.err != nil {
				return fail(in.err)
			}
			switch m := in.msg.(type) {
			case *wire.EventsAck:
				s.acked(m.Batch)
				if err := s.pump(); err != nil {
					return fail(err)
				}
				s.armAck()
			case *wire.Revoke:
				r := s.revoked(m)
				r.welcomed = true
				return r
			case *wire.Error:
				l.peerWarns.Warn(l.log, "cloud refused a frame", "code", m.Code, "message", m.Message, "frame_type", m.FrameType)
			case *wire.Welcome:
				// A repeated welcome changes nothing.
			default:
				l.peerWarns.Warn(l.log, "cloud sent a frame only the agent sends", "type", m.Type())
				_ = s.send(&wire.Error{Code: wire.CodeInvalid, FrameType: m.Type(),
					Message: fmt.Sprintf("%s frame: is sent by the agent, not the cloud", m.Type())})
			}
		case <-ping.C():
			ping.Reset(l.opts.PingInterval) // first: the interval runs from the tick, not from the write
			if err := s.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(l.opts.WriteTimeout)); err != nil {
				return fail(fmt.Errorf("ping: %w", err))
			}
		case <-silence.C():
			if left := l.opts.SilenceTimeout - s.sinceHeard(); left > 0 {
				silence.Reset(left)
				continue
			}
			s.close(websocket.CloseGoingAway, "silence timeout")
			return fail(errSilence)
		case <-poll.C():
			s.retryAcks()
			if err := s.pump(); err != nil {
				return fail(err)
			}
			s.armAck()
			poll.Reset(l.opts.PollInterval)
		case <-l.notify:
			if err := s.pump(); err != nil {
				return fail(err)
			}
			s.armAck()
		case <-s.ack.C():
			if err := s.resendDue(); err != nil {
				return fail(err)
			}
			// A batch whose events all left the outbox freed its slot.
			if err := s.pump(); err != nil {
				return fail(err)
			}
			s.armAck()
		case <-l.recheck:
			// A manager unpaired (the token file is gone) or paired again:
			// the connection must not go on with a token the agent no
			// longer holds.
			if tok, err := l.opts.Token(); err == nil && tok == s.token {
				continue
			}
			l.log.Info("cloud link: the device token was removed or replaced; closing the connection that used it")
			s.close(websocket.CloseNormalClosure, "device token changed")
			out.tokenChanged = true
			return fail(errTokenChanged)
		case <-l.printers:
			if err := s.send(&wire.Printers{Printers: l.opts.Backend.Printers()}); err != nil {
				return fail(err)
			}
		}
	}
}

// revoked handles a revoke: the link stops using the token.
func (s *session) revoked(m *wire.Revoke) outcome {
	s.close(websocket.CloseNormalClosure, "revoked")
	return outcome{unpaired: true, revoked: true, reason: m.Reason,
		err: fmt.Errorf("the cloud revoked the device token (reason %q)", m.Reason)}
}

// read reads frames until the connection fails. Jobs and commands go to
// the worker in order, and so does a job frame that does not decode but
// whose task_no could be read (the agent may know it); everything else
// goes to run. Any other frame that does not decode is answered here, and
// the connection stays up.
func (s *session) read() {
	defer s.wg.Done()
	for {
		_, data, err := s.conn.ReadMessage()
		if err != nil {
			s.post(inbound{err: fmt.Errorf("read: %w", err)})
			return
		}
		s.markHeard()
		m, err := wire.Decode(data)
		if err != nil {
			var fe *wire.FrameError
			if errors.As(err, &fe) && fe.Type == wire.TypeJob && fe.TaskNo != "" {
				// A job whose task_no could be read: the agent says
				// duplicate first, so it goes to the worker in order.
				s.l.peerWarns.Warn(s.l.log, "cloud frame refused", "code", fe.Code, "err", fe.Error())
				if !s.queue(work{refused: fe}) {
					return
				}
				continue
			}
			s.refuse(err)
			continue
		}
		switch m.(type) {
		case *wire.Job, *wire.Reprint, *wire.Cancel, *wire.LogsTail, *wire.LogsStop:
			if !s.queue(work{msg: m}) {
				return
			}
		default:
			if !s.post(inbound{msg: m}) {
				return
			}
		}
	}
}

// work is one item for the worker: a job or command, or a job frame
// Decode refused whose task_no could be read.
type work struct {
	msg     wire.Message
	refused *wire.FrameError
}

// queue hands w to the worker; false when the connection ended first.
func (s *session) queue(w work) bool {
	select {
	case s.work <- w:
		return true
	case <-s.ctx.Done():
		return false
	}
}

func (s *session) post(in inbound) bool {
	select {
	case s.in <- in:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// refuse answers a frame Decode refused with an error frame (a job whose
// task_no could be read goes to the worker instead: refusedJob). It logs
// one line.
func (s *session) refuse(err error) {
	var fe *wire.FrameError
	if !errors.As(err, &fe) {
		s.l.peerWarns.Warn(s.l.log, "cloud frame refused", "err", err)
		return
	}
	s.l.peerWarns.Warn(s.l.log, "cloud frame refused", "code", fe.Code, "err", fe.Error())
	if err := s.send(fe.Reply()); err != nil {
		s.l.log.Debug("cloud link: answer to a refused frame not sent", "err", err)
	}
}

// jobCode is the §3 intake code for a job frame Decode refused.
func jobCode(fe *wire.FrameError) string {
	switch {
	case fe.Code == wire.CodeBadJSON:
		return "bad_json"
	case fe.Code == wire.CodeUnknownField:
		return "unknown_field"
	case fe.Code == wire.CodeTooLarge:
		return "payload_too_large"
	case fe.Field == "payload":
		return "bad_payload"
	case fe.Field == "document":
		return "bad_document"
	}
	return "invalid_task"
}
