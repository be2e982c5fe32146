package printertest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// pconn is one host connection: a TCP connection or the pty master.
type pconn struct {
	p     *Printer
	rwc   io.ReadWriteCloser
	setWD func(time.Time) error
	pty   bool
	out   chan []byte // answers, written by writeLoop
	once  sync.Once

	// Guarded by p.mu.
	closed bool
	mute   bool   // FaultDropAfterCut: dropping, answers nothing more
	rt     byte   // real-time command scanner: 1 after DLE, 2 after DLE EOT
	held   []byte // bytes read after a stall tripped, received on resume
}

// addConn registers rwc and starts its reader and writer.
func (p *Printer) addConn(rwc io.ReadWriteCloser, setWD func(time.Time) error, pty bool) {
	c := &pconn{p: p, rwc: rwc, setWD: setWD, pty: pty, out: make(chan []byte, 64)}
	p.mu.Lock()
	if p.closed || (!pty && p.f.Offline) {
		p.mu.Unlock()
		rwc.Close()
		return
	}
	p.conns[c] = struct{}{}
	p.wg.Add(2)
	p.cond.Broadcast()
	p.mu.Unlock()
	go c.readLoop()
	go c.writeLoop()
}

// close ends the connection for good.
func (c *pconn) close() {
	c.once.Do(func() {
		p := c.p
		p.mu.Lock()
		c.closed = true
		delete(p.conns, c)
		if p.asb == c {
			p.asb = nil
		}
		close(c.out)
		p.cond.Broadcast()
		p.mu.Unlock()
		c.rwc.Close()
	})
}

// drop is a link failure: a TCP connection is closed; a serial line cannot
// be, so the pty only loses what was held.
func (c *pconn) drop() {
	if !c.pty {
		c.close()
		return
	}
	c.p.mu.Lock()
	c.held, c.rt = nil, 0
	c.p.mu.Unlock()
}

func (c *pconn) readLoop() {
	defer c.p.wg.Done()
	defer c.close()
	buf := make([]byte, 4096)
	for {
		limit, held, ok := c.p.gate(c, len(buf))
		if !ok {
			return
		}
		if held != nil {
			c.p.receive(c, held)
			continue
		}
		n, err := c.rwc.Read(buf[:limit])
		if n > 0 {
			c.p.receiveOrHold(c, buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (c *pconn) writeLoop() {
	defer c.p.wg.Done()
	for data := range c.out {
		if c.setWD != nil {
			_ = c.setWD(time.Now().Add(2 * time.Second))
		}
		if _, err := c.rwc.Write(data); err != nil && !c.pty {
			go c.close() // close waits for nothing we hold; the range ends when out closes
		}
	}
}

// receiveOrHold receives data, unless the printer turned slow while the
// read was waiting: then the bytes queue behind the token bucket.
func (p *Printer) receiveOrHold(c *pconn, data []byte) {
	p.mu.Lock()
	if p.f.SlowBPS > 0 && len(data) > int(max(p.tokens, 0)) {
		c.held = append(c.held, data...)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.receive(c, data)
}

// gate decides when the reader may read and how much: not while stalled or
// while the buffer is full, and no faster than SlowBPS. Bytes held back by a
// stall come first.
func (p *Printer) gate(c *pconn, room int) (limit int, held []byte, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.closed || c.closed {
			return 0, nil, false
		}
		if p.f.Stall || p.queued >= p.opts.BufferSize {
			p.cond.Wait()
			continue
		}
		bps := p.f.SlowBPS
		if len(c.held) > 0 && bps <= 0 {
			h := c.held
			c.held = nil
			return 0, h, true
		}
		if bps <= 0 {
			return room, nil, true
		}
		// Token bucket on real time with a 50 ms burst.
		now := time.Now()
		rate := float64(bps)
		burst := max(1, rate/20)
		if p.tokensAt.IsZero() {
			p.tokens = burst
		} else {
			p.tokens = min(burst, p.tokens+now.Sub(p.tokensAt).Seconds()*rate)
		}
		p.tokensAt = now
		if p.tokens >= 1 {
			n := min(room, int(p.tokens))
			if len(c.held) > 0 {
				// Bytes read before the limit was set still go through it.
				n = min(n, len(c.held))
				h := append([]byte(nil), c.held[:n]...)
				c.held = c.held[n:]
				return 0, h, true
			}
			return n, nil, true
		}
		wait := time.Duration((1 - p.tokens) / rate * float64(time.Second))
		p.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-p.done:
			t.Stop()
		}
		p.mu.Lock()
	}
}

// checkLoopback accepts only loopback listen addresses: the emulator is a
// test double and must never be reachable from the network.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("printertest: listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("printertest: listen address %q is not loopback", addr)
}

// ListenTCP makes the printer accept connections on Options.Addr (default
// 127.0.0.1:0); Addr tells where. Like an Epson network interface it accepts
// several connections and prints their bytes in arrival order.
func (p *Printer) ListenTCP() error {
	addr := p.opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if err := checkLoopback(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("printertest: listen: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		ln.Close()
		return errors.New("printertest: printer closed")
	}
	if p.ln != nil {
		ln.Close()
		return errors.New("printertest: already listening")
	}
	p.ln, p.addr = ln, ln.Addr().String()
	p.wg.Add(1)
	go p.accept(ln)
	return nil
}

// Addr returns the TCP address ListenTCP bound, or "".
func (p *Printer) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

func (p *Printer) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		p.addConn(conn, conn.SetWriteDeadline, false)
	}
}
