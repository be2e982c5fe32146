package rawport

import (
	"context"
	"errors"
	"fmt"
	"net"
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

	// slots bounds the connections served at once (Options.MaxConns): over
	// it the port stops accepting and the kernel's listen backlog holds the
	// rest. lnClosed is closed with the listener, to stop waiting for one.
	slots    chan struct{}
	lnClosed chan struct{}
	line     *turns

	jobs, refused, duplicates, truncated, rejected atomic.Uint64
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
		slots: make(chan struct{}, o.MaxConns), lnClosed: make(chan struct{}),
		line: newTurns(),
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
// (EOF) is accepted as usual. When the drain ends, every job that ends on a
// command boundary is accepted, whole if nothing printed after its last
// cut (a drawer kick or beep may follow it), else marked truncated, and its
// connection closed in order; a job that ends inside a command cannot go
// to a printer: it is dropped and reported (Sink.Refused, ErrClosing), and
// its client sees a reset and resends. Then it closes the listener and
// waits for the port's goroutines; what is still unaccepted after
// acceptGrace is dropped and reported the same way.
func (p *Port) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.drainUntil = time.Now().Add(p.o.DrainTime)
	conns := p.connList()
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.SetReadDeadline(p.drainUntil) // wake readers waiting longer
	}
	drain := time.NewTimer(time.Until(p.drainUntil))
	<-drain.C
	err := p.ln.Close()
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
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("rawport: printer %s: close listener: %w", p.printer, err)
	}
	return nil
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
			if errors.Is(err, net.ErrClosed) {
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
		// Then the agent-wide slot. It is taken only for a connection that
		// came (a port waiting for one must not hold a slot other ports
		// need), so over the shared bound the connection is held, unread,
		// and the port accepts no other until a slot frees: at most one
		// connection per port waits this way, the rest in the backlog.
		if !p.o.Limit.acquire(p.ctx, p.lnClosed) {
			// The port closed meanwhile, as the listener closing resets
			// the connections still in its backlog.
			<-p.slots
			resetClose(c)
			return
		}
		p.admit(c)
	}
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

// releaseSlots gives back the port's slot and the agent-wide one.
func (p *Port) releaseSlots() {
	p.o.Limit.release()
	<-p.slots
}

// admit starts serving c, holding the slots acquire took, or resets it
// when the spool cannot take a job: the POS then shows its own error.
// Limits never reset a connection (acquire leaves it in the backlog).
func (p *Port) admit(c net.Conn) {
	remote := c.RemoteAddr().String()
	if err := p.sink.Ready(p.printer); err != nil {
		p.releaseSlots()
		p.rejected.Add(1)
		// The Sink says why, rate-limited: a flood of connections must
		// not become a flood of log lines.
		p.o.Logger.Debug("rawport: connection refused", "printer", p.printer, "remote", remote, "reason", "spool not ready", "err", err)
		resetClose(c)
		return
	}
	p.mu.Lock()
	if p.dropping {
		p.mu.Unlock()
		p.releaseSlots()
		resetClose(c)
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
	// it follows the order of arrival.
	turn := p.line.take()
	go func() {
		defer p.wg.Done()
		defer func() {
			// The slots are free before Stats stops counting the
			// connection.
			p.releaseSlots()
			p.mu.Lock()
			delete(p.conns, c)
			p.mu.Unlock()
		}()
		newConn(p, c, remote, turn).serve()
	}()
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
