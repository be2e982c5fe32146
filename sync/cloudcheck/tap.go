package cloudcheck

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"printgate/internal/clock"
	"printgate/sync/wire"
)

// The directions of a frame on a tapped connection.
const (
	toCloud   = "agent→cloud"
	fromCloud = "cloud→agent"
)

// Websocket opcodes (RFC 6455 §5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// maxTapMessage bounds a message the tap reassembles to read it: past the
// contract's read limit the link drops the connection anyway.
const maxTapMessage = wire.ReadLimit

// errCut is what the link reads or writes after the tap cut its connection
// on purpose (a lost ack).
var errCut = errors.New("cloudcheck: connection cut on purpose, as a network failure would")

// seen is one thing the tap saw on a connection: a websocket message
// (msg, or raw and decodeErr when it did not decode), a control frame
// (ping, pong, close) or the HTTP answer to the handshake (status).
type seen struct {
	conn      int // the connection's number, from 1, per agent
	dir       string
	at        time.Time
	kind      string // "message", "ping", "pong", "close", "handshake", "cut"
	msg       wire.Message
	raw       []byte
	decodeErr error
	status    int    // handshake: the HTTP status
	protocol  string // handshake: Sec-WebSocket-Protocol of the answer
}

// recorder keeps what the taps of one agent saw, in order, and lets the
// checks wait for something to be seen.
type recorder struct {
	clock clock.Clock

	mu      sync.Mutex
	changed chan struct{}
	list    []seen
	conns   int
	live    map[int]*tapConn
	// cut, when set, is asked about every message before it is delivered;
	// true cuts the connection instead, as a network failure would, so
	// the message is lost.
	cut func(s seen) bool
}

func newRecorder(c clock.Clock) *recorder {
	return &recorder{clock: c, changed: make(chan struct{}), live: map[int]*tapConn{}}
}

func (r *recorder) add(s seen) {
	r.mu.Lock()
	r.list = append(r.list, s)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// snapshot returns everything seen so far.
func (r *recorder) snapshot() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.list...)
}

// wake returns a channel closed at the next thing seen.
func (r *recorder) wake() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// setCut sets (or, with nil, clears) the cut rule.
func (r *recorder) setCut(f func(s seen) bool) {
	r.mu.Lock()
	r.cut = f
	r.mu.Unlock()
}

func (r *recorder) shouldCut(s seen) bool {
	r.mu.Lock()
	f := r.cut
	r.mu.Unlock()
	return f != nil && f(s)
}

// dropAll cuts every live connection, as a WAN outage would.
func (r *recorder) dropAll() {
	r.mu.Lock()
	var list []*tapConn
	for _, t := range r.live {
		list = append(list, t)
	}
	r.mu.Unlock()
	for _, t := range list {
		t.cutNow()
	}
}

// tap wraps the link's connection so the recorder sees every frame both
// ways and can cut the connection before a chosen message is delivered.
func (r *recorder) tap(c net.Conn) net.Conn {
	r.mu.Lock()
	r.conns++
	t := &tapConn{Conn: c, rec: r, id: r.conns}
	r.live[t.id] = t
	r.mu.Unlock()
	return t
}

// tapConn is one tapped connection. It forwards bytes unchanged, but only
// whole websocket frames, so that a frame can be held back and the
// connection cut before it.
type tapConn struct {
	net.Conn
	rec *recorder
	id  int

	rmu     sync.Mutex
	rhead   bool   // the HTTP answer has been read
	rraw    bool   // not a websocket after the answer: pass bytes through
	rbuf    []byte // read, not yet parsed
	ready   []byte // whole frames to hand to the reader
	rerr    error
	rstream stream
	tmp     []byte // Read's buffer

	wmu     sync.Mutex
	whead   bool
	wbuf    []byte
	wstream stream

	cutOnce sync.Once
}

// stream reassembles a fragmented message in one direction.
type stream struct {
	op      byte
	payload []byte
	over    bool
}

func (t *tapConn) cutNow() {
	t.cutOnce.Do(func() {
		t.rec.add(seen{conn: t.id, at: t.rec.clock.Now(), kind: "cut"})
		if tc, ok := t.Conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		t.Conn.Close()
	})
}

func (t *tapConn) Close() error {
	t.rec.mu.Lock()
	delete(t.rec.live, t.id)
	t.rec.mu.Unlock()
	return t.Conn.Close()
}

func (t *tapConn) Read(p []byte) (int, error) {
	t.rmu.Lock()
	defer t.rmu.Unlock()
	if t.tmp == nil {
		t.tmp = make([]byte, 32<<10)
	}
	for len(t.ready) == 0 {
		if t.rerr != nil {
			return 0, t.rerr
		}
		n, err := t.Conn.Read(t.tmp)
		t.rbuf = append(t.rbuf, t.tmp[:n]...)
		if perr := t.parseRead(); perr != nil {
			t.rerr = perr
		} else if err != nil {
			t.rerr = err
		}
	}
	n := copy(p, t.ready)
	t.ready = t.ready[n:]
	return n, nil
}

// parseRead moves whole frames (or, before them, the HTTP answer) from
// rbuf to ready.
func (t *tapConn) parseRead() error {
	if !t.rhead {
		end := bytes.Index(t.rbuf, []byte("\r\n\r\n"))
		if end < 0 {
			return nil
		}
		head := t.rbuf[:end+4]
		s := seen{conn: t.id, dir: fromCloud, at: t.rec.clock.Now(), kind: "handshake"}
		if resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(head)), nil); err == nil {
			s.status = resp.StatusCode
			s.protocol = resp.Header.Get("Sec-WebSocket-Protocol")
			resp.Body.Close()
		}
		t.rec.add(s)
		t.rhead, t.rraw = true, s.status != http.StatusSwitchingProtocols
		t.ready = append(t.ready, head...)
		t.rbuf = t.rbuf[end+4:]
	}
	if t.rraw {
		t.ready = append(t.ready, t.rbuf...)
		t.rbuf = nil
		return nil
	}
	for {
		f, n := nextFrame(t.rbuf)
		if n == 0 {
			return nil
		}
		if !t.rec.frame(t.id, fromCloud, f, &t.rstream) {
			t.cutNow()
			return errCut
		}
		t.ready = append(t.ready, t.rbuf[:n]...)
		t.rbuf = t.rbuf[n:]
	}
}

func (t *tapConn) Write(p []byte) (int, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.wbuf = append(t.wbuf, p...)
	if !t.whead {
		end := bytes.Index(t.wbuf, []byte("\r\n\r\n"))
		if end < 0 {
			return len(p), nil
		}
		t.whead = true
		if _, err := t.Conn.Write(t.wbuf[:end+4]); err != nil {
			return 0, err
		}
		t.wbuf = t.wbuf[end+4:]
	}
	for {
		f, n := nextFrame(t.wbuf)
		if n == 0 {
			return len(p), nil
		}
		if !t.rec.frame(t.id, toCloud, f, &t.wstream) {
			t.cutNow()
			return 0, errCut
		}
		if _, err := t.Conn.Write(t.wbuf[:n]); err != nil {
			return 0, err
		}
		t.wbuf = t.wbuf[n:]
	}
}

// frame is one websocket frame, its payload unmasked.
type frame struct {
	fin     bool
	op      byte
	payload []byte
}

// nextFrame parses the first frame of b; n is 0 when b does not hold a
// whole one yet.
func nextFrame(b []byte) (f frame, n int) {
	if len(b) < 2 {
		return f, 0
	}
	f.fin = b[0]&0x80 != 0
	f.op = b[0] & 0x0F
	masked := b[1]&0x80 != 0
	size := uint64(b[1] & 0x7F)
	pos := 2
	switch size {
	case 126:
		if len(b) < 4 {
			return f, 0
		}
		size, pos = uint64(binary.BigEndian.Uint16(b[2:4])), 4
	case 127:
		if len(b) < 10 {
			return f, 0
		}
		size, pos = binary.BigEndian.Uint64(b[2:10]), 10
	}
	var key []byte
	if masked {
		if len(b) < pos+4 {
			return f, 0
		}
		key, pos = b[pos:pos+4], pos+4
	}
	if uint64(len(b)-pos) < size {
		return f, 0
	}
	end := pos + int(size)
	f.payload = append([]byte(nil), b[pos:end]...)
	for i := range f.payload {
		if key != nil {
			f.payload[i] ^= key[i%4]
		}
	}
	return f, end
}

// frame records one frame and reports whether to deliver it.
func (r *recorder) frame(conn int, dir string, f frame, st *stream) bool {
	now := r.clock.Now()
	switch f.op {
	case opPing, opPong, opClose:
		kind := map[byte]string{opPing: "ping", opPong: "pong", opClose: "close"}[f.op]
		r.add(seen{conn: conn, dir: dir, at: now, kind: kind, raw: f.payload})
		return true
	case opText, opBinary:
		st.op, st.payload, st.over = f.op, nil, false
	case opContinuation:
	default:
		return true
	}
	if len(st.payload)+len(f.payload) > maxTapMessage {
		st.over = true
	}
	if !st.over {
		st.payload = append(st.payload, f.payload...)
	}
	if !f.fin {
		return true
	}
	s := seen{conn: conn, dir: dir, at: now, kind: "message", raw: st.payload}
	switch {
	case st.over:
		s.decodeErr = errors.New("message over the read limit")
	case st.op == opBinary:
		s.decodeErr = errors.New("binary message; the contract sends text")
	default:
		s.msg, s.decodeErr = wire.Decode(st.payload)
	}
	st.payload = nil
	if r.shouldCut(s) {
		s.kind = "message (cut before delivery)"
		r.add(s)
		return false
	}
	r.add(s)
	return true
}
