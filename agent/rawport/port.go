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
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup

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
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address the port listens on.
func (p *Port) Addr() net.Addr { return p.ln.Addr() }

// Close stops accepting, resets the open connections (a job being read is
// dropped, not accepted: its client sees a reset and will resend) and waits
// for the port's goroutines.
func (p *Port) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	p.cancel()
	err := p.ln.Close()
	for _, c := range conns {
		resetClose(c)
	}
	p.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("rawport: printer %s: close listener: %w", p.printer, err)
	}
	return nil
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

func (p *Port) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *Port) acceptLoop() {
	defer p.wg.Done()
	var backoff time.Duration
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.isClosed() || errors.Is(err, net.ErrClosed) {
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
		p.admit(c)
	}
}

// admit starts serving c, or resets it when the spool cannot take a job or
// too many connections are open: the POS then shows its own error.
func (p *Port) admit(c net.Conn) {
	remote := c.RemoteAddr().String()
	reject := func(why string, err error) {
		p.rejected.Add(1)
		p.o.Logger.Warn("rawport: connection refused", "printer", p.printer, "remote", remote, "reason", why, "err", err)
		resetClose(c)
	}
	if err := p.sink.Ready(p.printer); err != nil {
		reject("spool not ready", err)
		return
	}
	if !p.o.Limit.tryAcquire() {
		reject("agent connection limit", nil)
		return
	}
	p.mu.Lock()
	if p.closed || len(p.conns) >= p.o.MaxConns {
		closed := p.closed
		p.mu.Unlock()
		p.o.Limit.release()
		if closed {
			resetClose(c)
			return
		}
		reject(fmt.Sprintf("over %d connections on this port", p.o.MaxConns), nil)
		return
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		defer func() {
			// The slot is free in the limiter before Stats stops counting
			// the connection.
			p.o.Limit.release()
			p.mu.Lock()
			delete(p.conns, c)
			p.mu.Unlock()
		}()
		newConn(p, c, remote).serve()
	}()
}

// resetClose closes c so that the peer sees a reset (RST) rather than an
// orderly end: a POS must not take a refused or cut-off job for printed.
func resetClose(c net.Conn) {
	if l, ok := c.(interface{ SetLinger(int) error }); ok {
		_ = l.SetLinger(0)
	}
	_ = c.Close()
}
