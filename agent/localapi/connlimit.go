package localapi

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"printgate/agent/lockout"
	"printgate/internal/warnlimit"
)

// Connection limits of the agent's HTTP listener. Each kept-alive
// connection costs about 20 KiB (net/http's buffers and goroutine) and a
// file descriptor: 8,000 idle ones from 32 addresses once took 154 MiB and
// 8,015 descriptors. A POS needs a few connections, a browser six per tab
// and one per open event stream; a store's whole LAN stays far below.
const (
	// DefaultMaxConnsPerAddr bounds the connections one client (an IPv4
	// address, an IPv6 /64) has served at once.
	DefaultMaxConnsPerAddr = 64
	// DefaultMaxConns bounds the connections the listener holds at once,
	// served and waiting together.
	DefaultMaxConns = 512
	// DefaultMaxWaitingPerAddr bounds the connections of one client that
	// wait, unread, for one of its served ones to end.
	DefaultMaxWaitingPerAddr = 64
)

// ConnLimits shape LimitConns. A zero field takes its default.
type ConnLimits struct {
	// PerAddr is DefaultMaxConnsPerAddr, Total DefaultMaxConns and
	// WaitingPerAddr DefaultMaxWaitingPerAddr.
	PerAddr, Total, WaitingPerAddr int
	// Logger receives one rate-limited WARN when a connection is refused.
	// Nil discards.
	Logger *slog.Logger
}

// ConnLimiter is a net.Listener that bounds the HTTP connections it hands
// to an http.Server, per client address and in total, without ever closing
// a connection that may carry a request (docs/DESIGN.md, invariant 8): over a
// bound it first closes a connection net/http reports idle (a kept-alive
// one between requests), and when none is idle the new connection waits:
// unread in the listener while the total is reached (the kernel's listen
// backlog), held unread while its address is at its bound. Only past
// WaitingPerAddr held connections of one address is a further one closed,
// before anything is read from it, as a busy printer's port refuses one.
// Set the server's ConnState to the limiter's ConnState so it knows which
// connections are idle.
type ConnLimiter struct {
	inner net.Listener
	lim   ConnLimits
	log   *slog.Logger
	warns warnlimit.Limiter

	// ready holds connections for Accept; it has room for Total, so a
	// send never blocks.
	ready chan net.Conn
	// room is signalled when a connection ends.
	room chan struct{}
	done chan struct{}
	wg   sync.WaitGroup

	closeOnce sync.Once // Close's work
	doneOnce  sync.Once // closing done: by Close, or by a failed accept
	mu        sync.Mutex
	addrs     map[netip.Addr]*addrConns
	n         int   // connections counted: served and waiting
	err       error // why the accept loop ended
}

// addrConns are one client's connections.
type addrConns struct {
	served  map[*limitedConn]struct{}
	waiting []net.Conn // oldest first
}

// limitedConn is a served connection; closing it gives its place to the
// next waiting one.
type limitedConn struct {
	net.Conn
	l    *ConnLimiter
	key  netip.Addr
	once sync.Once
	// idleSince is when net/http last reported it idle; zero while it is
	// not (under l.mu).
	idleSince time.Time
}

// LimitConns wraps ln in a ConnLimiter with limits lim. Serve the HTTP
// server on it and set the server's ConnState to its ConnState. Closing it
// closes ln and every connection still waiting.
func LimitConns(ln net.Listener, lim ConnLimits) *ConnLimiter {
	if lim.PerAddr <= 0 {
		lim.PerAddr = DefaultMaxConnsPerAddr
	}
	if lim.Total <= 0 {
		lim.Total = DefaultMaxConns
	}
	if lim.WaitingPerAddr <= 0 {
		lim.WaitingPerAddr = DefaultMaxWaitingPerAddr
	}
	l := &ConnLimiter{
		inner: ln, lim: lim, log: lim.Logger,
		ready: make(chan net.Conn, lim.Total),
		room:  make(chan struct{}, 1),
		done:  make(chan struct{}),
		addrs: map[netip.Addr]*addrConns{},
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	l.warns.Now = time.Now
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

// Accept returns the next connection to serve.
func (l *ConnLimiter) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.err != nil {
			return nil, l.err
		}
		return nil, net.ErrClosed
	}
}

// Close stops accepting, closes the listener and the connections not
// served yet, and waits for the accept loop to end. Served connections are
// the server's to close (http.Server.Shutdown).
func (l *ConnLimiter) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.stop()
		err = l.inner.Close()
		l.wg.Wait()
		l.mu.Lock()
		var held []net.Conn
		for _, a := range l.addrs {
			held = append(held, a.waiting...)
			a.waiting = nil
		}
		l.mu.Unlock()
		for _, c := range held {
			c.Close()
		}
		for {
			select {
			case c := <-l.ready:
				c.Close()
			default:
				return
			}
		}
	})
	return err
}

// stop closes done: Accept then answers why.
func (l *ConnLimiter) stop() { l.doneOnce.Do(func() { close(l.done) }) }

// Addr is the listener's address.
func (l *ConnLimiter) Addr() net.Addr { return l.inner.Addr() }

// ConnState is the http.Server's ConnState hook: it tells the limiter
// which connections are idle, the only ones it may close.
func (l *ConnLimiter) ConnState(c net.Conn, s http.ConnState) {
	for {
		if lc, ok := c.(*limitedConn); ok {
			l.idle(lc, s == http.StateIdle)
			return
		}
		// A TLS connection wraps ours.
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return
		}
		c = u.NetConn()
	}
}

// idle records whether c is idle. A connection that goes idle while its
// client has one waiting gives it its place at once; otherwise the accept
// loop, if it waits for room, is told that an idle one may make some.
func (l *ConnLimiter) idle(c *limitedConn, idle bool) {
	l.mu.Lock()
	if !idle {
		c.idleSince = time.Time{}
		l.mu.Unlock()
		return
	}
	c.idleSince = time.Now()
	a := l.addrs[c.key]
	waiting := a != nil && len(a.waiting) > 0
	l.mu.Unlock()
	if waiting {
		c.Close()
		return
	}
	select {
	case l.room <- struct{}{}:
	default:
	}
}

// acceptLoop takes connections from the listener while there is room and
// admits each one.
func (l *ConnLimiter) acceptLoop() {
	defer l.wg.Done()
	var backoff time.Duration
	for {
		if !l.waitRoom() {
			return
		}
		c, err := l.inner.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of descriptors, say: wait as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				l.warns.Warn(l.log, "http listener: accept failed; retrying", "err", err, "retry_in", backoff)
				select {
				case <-time.After(backoff):
					continue
				case <-l.done:
					return
				}
			}
			l.mu.Lock()
			l.err = err
			l.mu.Unlock()
			l.stop()
			return
		}
		backoff = 0
		l.admit(c)
	}
}

// isTemporary reports an accept error net/http would retry.
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// waitRoom returns once the listener holds fewer than Total connections,
// closing the longest idle one when that makes room; false when closed.
func (l *ConnLimiter) waitRoom() bool {
	for {
		l.mu.Lock()
		if l.n < l.lim.Total {
			l.mu.Unlock()
			return true
		}
		idle := l.oldestIdle(nil)
		l.mu.Unlock()
		if idle != nil {
			idle.Close()
			continue
		}
		select {
		case <-l.room:
		case <-l.done:
			return false
		}
	}
}

// oldestIdle is the connection idle longest, of a when a is not nil, else
// of any client; nil when none is idle. l.mu is held.
func (l *ConnLimiter) oldestIdle(a *addrConns) *limitedConn {
	var best *limitedConn
	pick := func(a *addrConns) {
		for c := range a.served {
			if !c.idleSince.IsZero() && (best == nil || c.idleSince.Before(best.idleSince)) {
				best = c
			}
		}
	}
	if a != nil {
		pick(a)
		return best
	}
	for _, a := range l.addrs {
		pick(a)
	}
	return best
}

// admit serves c, holds it until its address has room, or closes it.
func (l *ConnLimiter) admit(c net.Conn) {
	key := clientKey(c.RemoteAddr())
	l.mu.Lock()
	a := l.addrs[key]
	if a == nil {
		a = &addrConns{served: map[*limitedConn]struct{}{}}
		l.addrs[key] = a
	}
	if len(a.served) < l.lim.PerAddr && len(a.waiting) == 0 {
		l.n++
		lc := l.serveLocked(a, key, c)
		l.mu.Unlock()
		l.ready <- lc
		return
	}
	if len(a.waiting) < l.lim.WaitingPerAddr {
		// It waits for a place of its address; an idle one gives it up.
		l.n++
		a.waiting = append(a.waiting, c)
		idle := l.oldestIdle(a)
		l.mu.Unlock()
		if idle != nil {
			idle.Close()
		}
		return
	}
	l.mu.Unlock()
	l.warns.Warn(l.log, "http listener: one client has too many connections open and waiting; a further one was closed before anything was read from it",
		"client", key.String(), "open", l.lim.PerAddr, "waiting", l.lim.WaitingPerAddr)
	c.Close()
}

// serveLocked counts c as served for a and returns it wrapped; l.mu is
// held, and l.n already counts it.
func (l *ConnLimiter) serveLocked(a *addrConns, key netip.Addr, c net.Conn) *limitedConn {
	lc := &limitedConn{Conn: c, l: l, key: key}
	a.served[lc] = struct{}{}
	return lc
}

// Close closes the connection and gives its place to its address's next
// waiting connection, if any.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}

// release forgets c and serves the next waiting connection of its client.
func (l *ConnLimiter) release(c *limitedConn) {
	l.mu.Lock()
	a := l.addrs[c.key]
	if a == nil {
		l.mu.Unlock()
		return
	}
	delete(a.served, c)
	l.n--
	var next *limitedConn
	if len(a.waiting) > 0 {
		w := a.waiting[0]
		a.waiting[0] = nil
		a.waiting = a.waiting[1:]
		next = l.serveLocked(a, c.key, w)
	}
	if len(a.served) == 0 && len(a.waiting) == 0 {
		delete(l.addrs, c.key)
	}
	l.mu.Unlock()
	if next != nil {
		select {
		case <-l.done:
			next.Close() // nobody accepts any more
		default:
			l.ready <- next
		}
	}
	select {
	case l.room <- struct{}{}:
	default:
	}
}

// clientKey is the client a connection is counted against: its address,
// an IPv6 one by its /64.
func clientKey(a net.Addr) netip.Addr {
	if t, ok := a.(*net.TCPAddr); ok {
		return lockout.Key(t.AddrPort().Addr())
	}
	return netip.Addr{}
}
