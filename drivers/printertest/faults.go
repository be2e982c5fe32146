package printertest

import (
	"fmt"
	"net"
	"time"
)

// Faults returns the current fault state.
func (p *Printer) Faults() Faults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.f
}

// SetFault switches a fault on or off. FaultDrop and FaultPowerCycle happen
// once when on is true. Switching FaultOffline on a TCP printer closes its
// listener (connects are refused) and its connections; off listens again on
// the same address.
func (p *Printer) SetFault(kind FaultKind, on bool) error {
	switch kind {
	case FaultOffline:
		return p.setOffline(on)
	case FaultDrop:
		if on {
			p.mu.Lock()
			conns := p.connsLocked()
			p.mu.Unlock()
			for _, c := range conns {
				c.drop()
			}
		}
		return nil
	case FaultPowerCycle:
		if on {
			p.PowerCycle()
		}
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.setLocked(kind, on)
}

func (p *Printer) setLocked(kind FaultKind, on bool) error {
	switch kind {
	case FaultPaperOut:
		p.f.PaperOut = on
	case FaultPaperNearEnd:
		p.f.PaperNearEnd = on
	case FaultCoverOpen:
		p.f.CoverOpen = on
	case FaultCutterError:
		p.f.CutterError = on
	case FaultStall:
		p.f.Stall = on
	case FaultDrawerOpen:
		p.f.DrawerOpen = on
	case FaultDropAfterCut:
		p.f.DropAfterCut = on
	default:
		return fmt.Errorf("printertest: fault %q cannot be set here", kind)
	}
	p.changedLocked()
	return nil
}

// FaultAfter arms a fault that switches on once n more bytes have been
// received (from any connection): FaultDrop closes the connection right
// after the n-th byte and discards the rest of what was read, FaultStall
// stops reading there, FaultPowerCycle loses everything buffered, and the
// status faults (paper out, cover open, cutter error) stop the mechanism
// part-way through a job.
func (p *Printer) FaultAfter(kind FaultKind, n int) error {
	switch kind {
	case FaultDrop, FaultStall, FaultPowerCycle, FaultPaperOut, FaultCoverOpen, FaultCutterError:
	default:
		return fmt.Errorf("printertest: fault %q cannot be armed", kind)
	}
	if n < 0 {
		return fmt.Errorf("printertest: fault after %d bytes: want n >= 0", n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = append(p.armed, armed{kind: kind, left: n})
	return nil
}

// SetSlow limits reading to bps bytes per second (0 lifts the limit), so
// the host sees a printer that takes real time to print.
func (p *Printer) SetSlow(bps int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.f.SlowBPS = max(0, bps)
	p.tokensAt = time.Time{}
	p.cond.Broadcast()
}

// HoldProcessID holds back the answers to the next n GS ( H fn48 commands
// the printer processes (an Epson model only), as a printer busy with a long
// job or a slow network interface answers late: the host waiting for them
// times out. ReleaseProcessID sends them. n replaces any count still
// pending; 0 stops holding (answers already held stay held).
func (p *Printer) HoldProcessID(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdPID = max(0, n)
}

// HeldProcessIDs reports how many GS ( H answers are being held: a test
// waits on it to know the job whose proof it holds has reached the printer.
func (p *Printer) HeldProcessIDs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.heldPID)
}

// ReleaseProcessID stops holding GS ( H answers and sends the held ones,
// late and in order, to the connections they were owed to if still open.
// It returns how many it had held.
func (p *Printer) ReleaseProcessID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	held := p.heldPID
	p.holdPID, p.heldPID = 0, nil
	for _, h := range held {
		p.answerLocked(h.to, h.answer)
	}
	return len(held)
}

// PowerCycle switches the printer off and on: the receive buffer and the
// unfinished ticket are lost, TCP connections drop, modes reset, and stall
// and cutter faults clear. Paper and cover stay as they are.
func (p *Printer) PowerCycle() {
	p.mu.Lock()
	conns := p.powerCycleLocked()
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

func (p *Printer) powerCycleLocked() []*pconn {
	p.queue, p.queued = nil, 0
	p.ps.reset()
	p.asb = nil
	p.armed = nil
	p.heldPID = nil // answers not sent before power went are never sent
	p.f.Stall, p.f.CutterError = false, false
	var tcp []*pconn
	for c := range p.conns {
		c.held, c.rt = nil, 0
		if !c.pty {
			tcp = append(tcp, c)
		}
	}
	p.changedLocked()
	return tcp
}

func (p *Printer) setOffline(on bool) error {
	p.mu.Lock()
	if p.f.Offline == on || p.closed {
		p.mu.Unlock()
		return nil
	}
	p.f.Offline = on
	p.changedLocked()
	if on {
		ln := p.ln
		p.ln = nil
		var tcp []*pconn
		for c := range p.conns {
			if !c.pty {
				tcp = append(tcp, c)
			}
		}
		p.mu.Unlock()
		if ln != nil {
			ln.Close()
		}
		for _, c := range tcp {
			c.close()
		}
		return nil
	}
	addr := p.addr
	p.mu.Unlock()
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("printertest: back online: listen again on %s: %w", addr, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.f.Offline || p.ln != nil {
		ln.Close()
		return nil
	}
	p.ln = ln
	p.wg.Add(1)
	go p.accept(ln)
	return nil
}
