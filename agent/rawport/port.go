package rawport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Port is one printer's raw listener. Its methods are safe for concurrent
// use.
type Port struct {
	printer string
	sink    Sink
	o       Options
	ln      net.Listener
	dups    dupMemory

	ctx    context.Context // cancelled by Close: Accept calls in flight may stop
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool // Close began: no new connection is taken
	// drainUntil is when Close stops waiting for the jobs already sent to
	// end; dropping is set then, after which a partial job is dropped.
	drainUntil time.Time
	dropping   bool
	conns      map[net.Conn]struct{}
	wg         sync.WaitGroup
	// notReady is the Sink's last Ready error while the port waits for
	// the spool (ready.go); nil while it accepts.
	notReady error

	// slots bounds the connections served at once (Options.MaxConns): over
	// it the port stops accepting and the kernel's listen backlog holds the
	// rest. lnClosed is closed with the listener, to stop waiting for one.
	slots    chan struct{}
	lnClosed chan struct{}
	// drainRead is closed when a stop's drain begins (Close, not
	// CloseKeep): the connections held behind their address's bound are
	// read then (hold.go), as a stop would otherwise reset them with the
	// job their POS already wrote. CloseKeep hands them to the next Port
	// instead (handoff.go).
	drainRead chan struct{}
	// stopAccept ends acceptLoop at CloseKeep, which stops its Accept
	// with a deadline instead of closing the listener.
	stopAccept atomic.Bool
	// keeping is set by CloseKeep: the connections accepted and not read
	// are handed (handoff.go) to the next Port instead of reset.
	keeping bool
	handed  []handed
	// arrivals numbers the accepted connections in their order.
	arrivals uint64
	line     *turns
	// addrs counts connections by client address (Options.MaxPerAddress);
	// lines rate-limits the log lines a client can provoke.
	addrs addrs
	lines lineLimit

	jobs, refused, duplicates, truncated, rejected, turnedAway, idleClosed atomic.Uint64
}

// Listen opens addr (host:port) for printer and serves it until Close.
func Listen(addr, printer string, sink Sink, o Options) (*Port, error) {
	if _, err := o.withDefaults(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rawport: printer %s: listen on %s: %w", printer, addr, err)
	}
	return Serve(ln, printer, sink, o)
}

// Serve serves printer on ln, which the Port owns from now on (Close
// closes it); Listen is Serve on a new TCP listener.
func Serve(ln net.Listener, printer string, sink Sink, o Options) (*Port, error) {
	o, err := o.withDefaults()
	if err != nil {
		ln.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Port{
		printer: printer, sink: sink, o: o, ln: ln,
		dups: dupMemory{window: o.DupWindow},
		ctx:  ctx, cancel: cancel,
		conns: map[net.Conn]struct{}{},
		slots: make(chan struct{}, o.MaxConns), lnClosed: make(chan struct{}), drainRead: make(chan struct{}),
		line:  newTurns(),
		addrs: newAddrs(o),
		lines: lineLimit{now: o.Now},
	}
	p.dups.seed(o.Recent)
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address the port listens on.
func (p *Port) Addr() net.Addr { return p.ln.Addr() }

// acceptGrace is how long Close, after its drain (Options.DrainTime: the
// time open connections get to finish the jobs their clients have already
// sent, a half close as CUPS does when it has written everything), waits
// for those jobs to be stored. CUPS 2.4's socket backend takes a reset after it has
// written the whole job for success, so a job dropped there would be lost
// without anyone hearing; draining keeps a graceful stop (a service
// restart, an upgrade) from losing it.
const acceptGrace = 5 * time.Second

// Close drains the port, then closes it. For Options.DrainTime it still takes
// connections (a POS may have connected, sent and half-closed while its
// connection waited in the listen queue, which closing the listener would
// reset) and lets each one finish: a job whose client has finished sending
// (EOF) is accepted as usual, and so is one the port took and held
// unread behind its address's bound (hold.go). When the drain ends, every job that ends on a
// command boundary is accepted, whole if nothing printed after its last
// cut (a drawer kick or beep may follow it), else marked truncated, and its
// connection closed in order; a job that ends inside a command cannot go
// to a printer: it is dropped and reported (Sink.Refused, ErrClosing), and
// its client sees a reset and resends. Then it closes the listener and
// waits for the port's goroutines; what is still unaccepted after
// acceptGrace is dropped and reported the same way.
func (p *Port) Close() error {
	_, err := p.close(false)
	return err
}

// CloseKeep is Close for a port about to be replaced on the same address
// (a reload that changed its settings): its listener is not closed but
// returned, still open, for the Port that replaces it (Serve). A
// connection that arrives meanwhile waits in the listen backlog, with what
// its POS sent, for the new Port, where closing the listener would reset
// it; a write-and-close POS has already taken that job for printed. A
// listener that cannot stop an Accept without closing (one without
// SetDeadline) is closed as Close does, and nil returned.
func (p *Port) CloseKeep() (net.Listener, error) {
	return p.close(true)
}

// deadliner is a listener whose Accept can be stopped without closing it.
type deadliner interface {
	SetDeadline(time.Time) error
}

func (p *Port) close(keep bool) (net.Listener, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil
	}
	p.closed = true
	p.drainUntil = time.Now().Add(p.o.DrainTime)
	conns := p.connList()
	p.mu.Unlock()
	dl, canKeep := p.ln.(deadliner)
	keep = keep && canKeep
	p.mu.Lock()
	p.keeping = keep
	p.mu.Unlock()
	if !keep {
		close(p.drainRead)
	}
	var err error
	if keep {
		// The next port takes the new connections: this one stops
		// accepting now, before its drain, so that none is accepted as
		// the drain ends and reset unread. Accept returns at once, the
		// listener stays open, and acceptLoop sees stopAccept and ends.
		p.stopAccept.Store(true)
		err = dl.SetDeadline(time.Now())
	}
	for _, c := range conns {
		_ = c.SetReadDeadline(p.drainUntil) // wake readers waiting longer
	}
	drain := time.NewTimer(time.Until(p.drainUntil))
	<-drain.C
	if !keep {
		err = p.ln.Close()
	}
	close(p.lnClosed)
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	grace := time.NewTimer(acceptGrace)
	select {
	case <-done:
		grace.Stop()
	case <-grace.C:
	}
	// What is still open now is dropped: Accept calls in flight are
	// cancelled and the clients reset.
	p.mu.Lock()
	p.dropping = true
	conns = p.connList()
	p.mu.Unlock()
	p.cancel()
	for _, c := range conns {
		resetClose(c)
	}
	<-done
	p.setNotReady(nil) // a closed port waits for nothing
	if keep {
		if err == nil {
			err = dl.SetDeadline(time.Time{})
		}
		ln := p.handOver(dl)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("rawport: printer %s: keep the listener for the port's next settings: %w", p.printer, err)
		}
		return ln, nil
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return nil, fmt.Errorf("rawport: printer %s: close listener: %w", p.printer, err)
	}
	return nil, nil
}

// connList returns the open connections; p.mu is held.
func (p *Port) connList() []net.Conn {
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	return conns
}

// draining reports whether Close is draining, and until when.
func (p *Port) draining() (bool, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed, p.drainUntil
}

// isDropping reports whether Close has stopped draining: a job not accepted
// by now is dropped.
func (p *Port) isDropping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropping
}

// Stats returns the port's counters.
func (p *Port) Stats() Stats {
	p.mu.Lock()
	n := len(p.conns)
	p.mu.Unlock()
	return Stats{
		Conns:      n,
		Jobs:       p.jobs.Load(),
		Refused:    p.refused.Load(),
		Duplicates: p.duplicates.Load(),
		Truncated:  p.truncated.Load(),
		Rejected:   p.rejected.Load(),
		TurnedAway: p.turnedAway.Load(),
		IdleClosed: p.idleClosed.Load(),
	}
}

func (p *Port) acceptLoop() {
	defer p.wg.Done()
	var backoff time.Duration
	for {
		// The port's slot first, then Accept: over MaxConns the
		// connection waits in the listen backlog (its bytes, and a
		// client's close, with it) instead of being accepted and reset.
		if !p.acquire() {
			return
		}
		c, err := p.ln.Accept()
		if err != nil {
			<-p.slots
			if errors.Is(err, net.ErrClosed) || p.stopAccept.Load() {
				return
			}
			// Out of file descriptors and the like: wait, as net/http does,
			// instead of spinning.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			p.o.Logger.Warn("rawport: accept failed", "printer", p.printer, "err", err, "retry_in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-p.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		p.arrivals++
		seq := p.arrivals
		// Then who it comes from: an address off the allow-list, or one
		// over its bound, is turned away unread before it takes anything
		// more (see hold.go).
		ip := addrOf(c.RemoteAddr())
		if !allowed(p.o.Allow, ip) {
			<-p.slots
			p.turnAway(c, ip, "raw_allow", "rawport: connection refused: its address is not in raw_allow; add the POS's address to raw_allow if it should print here")
			continue
		}
		how := p.addrs.reserve(ip)
		switch how {
		case admitRefuse:
			<-p.slots
			p.turnAway(c, ip, "raw_max_per_address", "rawport: connection refused: this address already has raw_max_per_address connections without a job and the most allowed waiting behind them; raise raw_max_per_address if one POS really opens that many at once")
			continue
		case admitWait:
			// It waits for its address's room without a slot: the slots
			// bound the connections being read, and one address's
			// waiting ones must not keep the others' out.
			<-p.slots
			p.admit(c, ip, how, false, seq)
			continue
		}
		shared, ok := p.takeShared()
		if !ok {
			// The port closed meanwhile, as the listener closing resets
			// the connections still in its backlog.
			<-p.slots
			p.addrs.unreserve(ip, how)
			p.giveUp(c, seq)
			return
		}
		p.admit(c, ip, how, shared, seq)
	}
}

// takeShared takes the agent-wide slot for a connection about to be read,
// and reports whether it holds one (held) and false ok when the port
// closed meanwhile. It is taken only for a connection that came (a port
// waiting for one must not hold a slot other ports need), so over the
// shared bound the accepting goroutine holds the connection, unread, and
// the port accepts no other until a slot frees: at most one connection per
// port waits this way, the rest in the backlog. A port with an allow-list
// takes a free one and goes on without when there is none: its POS are
// never starved by the clients of ports without one, and its own bound
// (MaxConns) still holds.
func (p *Port) takeShared() (held, ok bool) {
	if len(p.o.Allow) > 0 {
		return p.o.Limit.tryAcquire(), true
	}
	if !p.o.Limit.acquire(p.ctx, p.lnClosed) {
		return false, false
	}
	return true, true
}

// turnAway resets c, which came from ip, unread, for the bound named by
// key, with a rate-limited WARN.
func (p *Port) turnAway(c net.Conn, ip netip.Addr, key, msg string) {
	p.turnedAway.Add(1)
	p.lines.log(p.o.Logger, slog.LevelWarn, msg, "printer", p.printer, "remote", c.RemoteAddr().String(), "address", ip.String(), "key", key)
	resetClose(c)
}

// acquire waits for a slot on the port, and reports false when the port
// is closing instead.
func (p *Port) acquire() bool {
	select {
	case p.slots <- struct{}{}:
		return true
	case <-p.ctx.Done():
		return false
	case <-p.lnClosed:
		return false
	}
}

// releaseSlots gives back the port's slot and, if shared, the agent-wide
// one.
func (p *Port) releaseSlots(shared bool) {
	if shared {
		p.o.Limit.release()
	}
	<-p.slots
}

// admit starts serving c, from ip and admitted as how, or resets it when
// the spool cannot take a job: the POS then shows its own error. A
// connection to be read holds the slots acceptLoop took (the agent-wide
// one if shared); one that waits for its address's room takes them when
// it gets it (await). The slot limits never reset a connection (acquire
// leaves it in the backlog); see acceptLoop for the per-address ones.
func (p *Port) admit(c net.Conn, ip netip.Addr, how admission, shared bool, seq uint64) {
	remote := c.RemoteAddr().String()
	release := func() {
		p.addrs.unreserve(ip, how)
		if how == admitRead {
			p.releaseSlots(shared)
		}
	}
	// While the spool cannot take a job the port accepts nothing more:
	// this connection waits here unread, the next ones in the listen
	// backlog, as at a printer that is busy (ready.go).
	if !p.awaitReady(p.ctx, p.lnClosed) {
		release()
		p.rejected.Add(1)
		p.o.Logger.Debug("rawport: connection not read: the port closed while the spool could not take a job", "printer", p.printer, "remote", remote)
		p.giveUp(c, seq) // as the listener's close resets its backlog
		return
	}
	p.mu.Lock()
	if p.dropping {
		p.mu.Unlock()
		release()
		p.giveUp(c, seq)
		return
	}
	// Abortive close by default: if the agent dies (SIGKILL, crash, power)
	// the kernel then resets the connection instead of ending it in order,
	// which a POS that has sent everything would take for "stored". Only
	// the deliberate close after a job was accepted is orderly
	// (orderlyClose).
	setLinger(c, 0)
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	// The place in line is taken here, on the accepting goroutine, so that
	// it follows the order of arrival; a connection that waits for its
	// address takes it when it is read, and takes its number in its
	// address's line here instead.
	var turn, waitNo uint64
	if how == admitRead {
		turn = p.line.take()
	} else {
		waitNo = p.addrs.queue(ip)
	}
	go func() {
		defer p.wg.Done()
		defer func() {
			p.mu.Lock()
			delete(p.conns, c)
			p.mu.Unlock()
		}()
		if how == admitWait {
			if !p.addrs.wait(p.ctx, p.drainRead, p.lnClosed, ip, waitNo) {
				p.giveUp(c, seq) // the port closed: as its backlog is
				return
			}
			var ok bool
			shared, ok = p.waitSlots(ip)
			if ok {
				turn = p.line.take()
			}
			p.addrs.next(ip) // after the place in line: ip's keep their order
			if !ok {
				p.giveUp(c, seq)
				return
			}
		}
		// The slots are free before Stats stops counting the connection.
		defer p.releaseSlots(shared)
		cn := newConn(p, c, remote, ip, turn)
		defer cn.leave()
		cn.serve()
	}()
}

// waitSlots takes the slots of a connection from ip that waited for its
// address's room, as acceptLoop does, waiting for them too. It reports
// false, having taken nothing and uncounted the connection, when the port
// closes first (or closed while it waited and its drain is over).
func (p *Port) waitSlots(ip netip.Addr) (shared, ok bool) {
	if !p.acquire() {
		p.addrs.unreserve(ip, admitRead)
		return false, false
	}
	if shared, ok = p.takeShared(); !ok {
		<-p.slots
		p.addrs.unreserve(ip, admitRead)
		return false, false
	}
	if closing, until := p.draining(); closing && !time.Now().Before(until) {
		p.releaseSlots(shared)
		p.addrs.unreserve(ip, admitRead)
		return false, false
	}
	return shared, true
}

// resetClose closes c so that the peer sees a reset (RST) rather than an
// orderly end: a POS must not take a refused or cut-off job for printed.
func resetClose(c net.Conn) {
	setLinger(c, 0)
	_ = c.Close()
}

// orderlyClose ends c in order (FIN): the one close a POS may take for
// "the job is stored", made only after the Sink accepted it.
func orderlyClose(c net.Conn) {
	setLinger(c, -1)
	_ = c.Close()
}

// setLinger sets SO_LINGER where the connection has it: 0 makes every close,
// the kernel's at process exit included, a reset; -1 is the default
// orderly close.
func setLinger(c net.Conn, sec int) {
	if l, ok := c.(interface{ SetLinger(int) error }); ok {
		_ = l.SetLinger(sec)
	}
}
