package rawport

import (
	"net"
	"slices"
	"sync"
	"time"
)

// A reload that changes a port's settings on the same address replaces the
// Port (CloseKeep, then Serve on the listener it returns). The connections
// the old Port had accepted but not read yet (behind their address's
// bound, waiting for a slot shared by all ports, or for the spool) carry
// what their POS sent, often a whole job from a POS that wrote it and
// closed: resetting them, as closing the listener resets its backlog, lost
// those tickets without a word. They go to the new Port instead, ahead of
// the listener's backlog and in the order they came.

// handed is a connection accepted and not read, and its place in the order
// of arrival.
type handed struct {
	c   net.Conn
	seq uint64
}

// handoffListener is a listener handed to a new Port with the connections
// the old one accepted and did not read: Accept returns those first.
type handoffListener struct {
	net.Listener
	dl deadliner

	mu      sync.Mutex
	pending []net.Conn
	// stopped is set by a SetDeadline in the past (CloseKeep stopping the
	// accept loop): Accept then leaves the pending connections for the
	// next Port.
	stopped bool
}

// Accept returns the next connection handed over, else the listener's.
func (l *handoffListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if !l.stopped && len(l.pending) > 0 {
		c := l.pending[0]
		l.pending = l.pending[1:]
		l.mu.Unlock()
		return c, nil
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// SetDeadline sets the listener's accept deadline (see deadliner).
func (l *handoffListener) SetDeadline(t time.Time) error {
	l.mu.Lock()
	l.stopped = !t.IsZero() && !t.After(time.Now())
	l.mu.Unlock()
	return l.dl.SetDeadline(t)
}

// Close closes the listener and resets the connections still pending, as
// closing a listener resets its backlog.
func (l *handoffListener) Close() error {
	l.mu.Lock()
	pending := l.pending
	l.pending = nil
	l.mu.Unlock()
	for _, c := range pending {
		resetClose(c)
	}
	return l.Listener.Close()
}

// giveUp is the end of a connection c, numbered seq in the order of
// arrival, that the port accepted and will not read because it is
// closing: kept for the next Port when CloseKeep keeps the listener, else
// reset, as closing the listener resets its backlog.
func (p *Port) giveUp(c net.Conn, seq uint64) {
	p.mu.Lock()
	if p.keeping && !p.dropping {
		// Close set a read deadline on every connection to end its drain;
		// the next Port sets its own.
		_ = c.SetReadDeadline(time.Time{})
		p.handed = append(p.handed, handed{c: c, seq: seq})
		delete(p.conns, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	resetClose(c)
}

// handOver returns the listener for the next Port with the connections
// given up (giveUp) pending on it, oldest first, behind those a previous
// Port handed over and this one did not take.
func (p *Port) handOver(dl deadliner) net.Listener {
	p.mu.Lock()
	hs := p.handed
	p.handed = nil
	p.mu.Unlock()
	slices.SortFunc(hs, func(a, b handed) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	l, ok := p.ln.(*handoffListener)
	if !ok {
		if len(hs) == 0 {
			return p.ln
		}
		l = &handoffListener{Listener: p.ln, dl: dl}
	}
	l.mu.Lock()
	for _, h := range hs {
		l.pending = append(l.pending, h.c)
	}
	l.stopped = false
	l.mu.Unlock()
	return l
}
