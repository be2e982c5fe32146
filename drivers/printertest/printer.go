package printertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"printgate/drivers/escpos/decode"
)

// Model chooses which queries the emulated printer answers.
type Model string

// The emulated printer models.
const (
	// ModelEpson answers DLE EOT, GS r, GS ( H fn48, GS I 65..69 and sends
	// ASB packets after GS a: a current Epson TM.
	ModelEpson Model = "epson"
	// ModelClone answers DLE EOT and GS r, GS I 67 only, and ignores GS ( H,
	// like most Chinese clones.
	ModelClone Model = "clone"
	// ModelStatusOnly answers DLE EOT and nothing in order.
	ModelStatusOnly Model = "status-only"
	// ModelOneWay answers nothing (a one-way interface).
	ModelOneWay Model = "oneway"
)

// ParseModel checks a model name.
func ParseModel(s string) (Model, error) {
	switch m := Model(s); m {
	case ModelEpson, ModelClone, ModelStatusOnly, ModelOneWay:
		return m, nil
	}
	return "", fmt.Errorf("printertest: unknown model %q (want epson, clone, status-only or oneway)", s)
}

func (m Model) realTime() bool { return m != ModelOneWay }
func (m Model) inOrder() bool  { return m == ModelEpson || m == ModelClone }

// Options configure a Printer. The zero value is an Epson on 127.0.0.1:0.
type Options struct {
	// Name labels the printer in logs and rendered tickets.
	Name string
	// Model chooses what the printer answers; default ModelEpson.
	Model Model
	// PowerOnCJK starts in double-byte (Kanji) mode after power-on and
	// ESC @, as Chinese clones do (FS . leaves it, FS & enters it).
	PowerOnCJK bool
	// DoubleByte is the set Kanji mode reads, the firmware's font:
	// GB18030 (the default), Big5 or Shift JIS.
	DoubleByte decode.DoubleByte
	// CodeTables is the maker's ESC t numbering the printer reads text
	// with; default Epson's.
	CodeTables decode.CodeTables
	// XonXoff puts an XON byte before every answer, as a serial printer with
	// software flow control does, to test the filtering.
	XonXoff bool
	// BufferSize is the receive buffer; when it is full the printer stops
	// reading, which backs up the sender. Default 1 MiB.
	BufferSize int
	// Addr is the ListenTCP address, default "127.0.0.1:0". Only loopback
	// addresses are accepted.
	Addr string
	// OnTicket, if set, is called with each ticket as it is cut, in order,
	// from the printer's processing goroutine (so it must not block long).
	OnTicket func(Ticket)
}

// FaultKind names a fault for SetFault and FaultAfter.
type FaultKind string

// The injectable faults.
const (
	FaultOffline      FaultKind = "offline"        // TCP: listener closed, connections dropped; pty: silent
	FaultPaperOut     FaultKind = "paper_out"      // paper end: status says so, processing stops
	FaultPaperNearEnd FaultKind = "paper_near_end" // status only
	FaultCoverOpen    FaultKind = "cover_open"     // status says so, processing stops
	FaultCutterError  FaultKind = "cutter_error"   // autocutter error: offline with error
	FaultStall        FaultKind = "stall"          // stops reading and processing, answers nothing
	FaultDrawerOpen   FaultKind = "drawer_open"    // drawer pin 3 low
	FaultDrop         FaultKind = "drop"           // drop the connections (one-shot)
	FaultPowerCycle   FaultKind = "power_cycle"    // lose the buffer and the connections (one-shot)
	// FaultDropAfterCut is a flaky link that fails at the worst moment:
	// every ticket with text prints, then the TCP connection that sent it drops
	// before the printer answers anything after the cut (the host's
	// completion probe), so the host never learns that it printed.
	FaultDropAfterCut FaultKind = "drop_after_cut"
)

// Faults is the printer's current fault state.
type Faults struct {
	Offline      bool `json:"offline"`
	PaperOut     bool `json:"paper_out"`
	PaperNearEnd bool `json:"paper_near_end"`
	CoverOpen    bool `json:"cover_open"`
	CutterError  bool `json:"cutter_error"`
	Stall        bool `json:"stall"`
	DrawerOpen   bool `json:"drawer_open"`
	DropAfterCut bool `json:"drop_after_cut"`
	// SlowBPS limits how fast the printer reads, in bytes per second; 0 is
	// unlimited.
	SlowBPS int `json:"slow_bps"`
}

// chunk is a piece of the byte stream as received, with who sent it (for
// in-order answers).
type chunk struct {
	from *pconn
	data []byte
}

// heldPID is a GS ( H answer held back by HoldProcessID, with the
// connection it is owed to.
type heldPID struct {
	to     *pconn
	answer []byte
}

// armed is a fault that switches on after some more bytes are received.
type armed struct {
	kind FaultKind
	left int
}

// Printer is one emulated ESC/POS printer. All methods are safe for
// concurrent use.
type Printer struct {
	opts Options

	mu       sync.Mutex
	cond     *sync.Cond // state changed: faults, buffer, connections, close
	f        Faults
	armed    []armed
	queue    []chunk
	queued   int
	received int64
	ps       *parser
	src      *pconn // sender of the bytes being processed
	tickets  []Ticket
	ticketCh chan struct{} // closed and replaced when a ticket is cut
	cutNow   []Ticket      // tickets cut while processing, for OnTicket
	dropNow  []*pconn      // connections FaultDropAfterCut drops after a cut
	conns    map[*pconn]struct{}
	ln       net.Listener
	addr     string
	asb      *pconn // connection that enabled automatic status back
	lastASB  [4]byte
	holdPID  int       // GS ( H answers still to hold back (HoldProcessID)
	heldPID  []heldPID // answers held back, in order
	tokens   float64
	tokensAt time.Time
	closed   bool
	done     chan struct{}
	closers  []io.Closer // pty files
	wg       sync.WaitGroup
}

// New returns a running printer with paper, no faults and no connections.
// Connect it with ListenTCP or OpenPTY, or feed it directly with Write.
// Close stops it.
func New(opts Options) *Printer {
	if opts.Model == "" {
		opts.Model = ModelEpson
	}
	if opts.BufferSize <= 0 {
		opts.BufferSize = 1 << 20
	}
	if opts.Name == "" {
		opts.Name = string(opts.Model)
	}
	p := &Printer{
		opts:     opts,
		ps:       newParser(decode.Options{PowerOnCJK: opts.PowerOnCJK, DoubleByte: opts.DoubleByte, CodeTables: opts.CodeTables}),
		ticketCh: make(chan struct{}),
		conns:    map[*pconn]struct{}{},
		done:     make(chan struct{}),
	}
	p.cond = sync.NewCond(&p.mu)
	p.ps.onQuery = p.inOrderLocked
	p.ps.onTicket = p.ticketLocked
	p.ps.now = time.Now
	p.wg.Add(1)
	go p.process()
	return p
}

// Name returns the printer's name.
func (p *Printer) Name() string { return p.opts.Name }

// Model returns the printer's model.
func (p *Printer) Model() Model { return p.opts.Model }

// Close disconnects everything and stops the printer's goroutines.
func (p *Printer) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	ln := p.ln
	p.ln = nil
	conns := p.connsLocked()
	closers := p.closers
	p.cond.Broadcast()
	p.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	for _, c := range conns {
		c.close()
	}
	for _, c := range closers {
		c.Close()
	}
	p.wg.Wait()
	return nil
}

func (p *Printer) connsLocked() []*pconn {
	out := make([]*pconn, 0, len(p.conns))
	for c := range p.conns {
		out = append(out, c)
	}
	return out
}

// running reports whether in-order processing may go on.
func (p *Printer) runningLocked() bool {
	return !p.f.PaperOut && !p.f.CoverOpen && !p.f.Offline && !p.f.Stall && !p.f.CutterError
}

// process is the print mechanism: it takes received bytes in order and
// prints them while the printer is running.
func (p *Printer) process() {
	defer p.wg.Done()
	const slice = 64 // commands per lock hold, so faults can land mid-job
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for !p.closed && !(p.runningLocked() && (len(p.queue) > 0 || (len(p.ps.buf) > 0 && !p.ps.needMore))) {
			p.cond.Wait()
		}
		if p.closed {
			return
		}
		if len(p.ps.buf) == 0 || p.ps.needMore {
			c := p.queue[0]
			p.queue[0] = chunk{}
			p.queue = p.queue[1:]
			p.queued -= len(c.data)
			p.src = c.from
			p.ps.feed(c.data)
			p.cond.Broadcast() // room in the buffer
		}
		steps := 0
		if p.ps.run(func() bool { steps++; return steps <= slice && p.runningLocked() }) {
			p.cond.Broadcast() // for waitFor: what the printer did so far
		}
		if len(p.cutNow) > 0 {
			cut := p.cutNow
			p.cutNow = nil
			if p.opts.OnTicket != nil {
				p.mu.Unlock()
				for _, t := range cut {
					p.opts.OnTicket(t)
				}
				p.mu.Lock()
			}
			// Published after OnTicket, so whoever waits for a ticket also
			// sees what OnTicket did with it.
			p.tickets = append(p.tickets, cut...)
			close(p.ticketCh)
			p.ticketCh = make(chan struct{})
		}
		if len(p.dropNow) > 0 {
			drop := p.dropNow
			p.dropNow = nil
			p.mu.Unlock()
			for _, c := range drop {
				c.drop()
			}
			p.mu.Lock()
		}
		if steps > slice {
			// Let fault switches and readers in between slices.
			p.mu.Unlock()
			p.mu.Lock()
		}
	}
}

func (p *Printer) ticketLocked(t Ticket) {
	p.cutNow = append(p.cutNow, t)
	if c := p.src; p.f.DropAfterCut && printedText(t) && c != nil && !c.closed && !c.pty && !c.mute {
		// Silent from the cut on: the drop itself happens outside the
		// lock, and nothing processed meanwhile is answered.
		c.mute = true
		p.dropNow = append(p.dropNow, c)
	}
}

// printedText reports whether t has a line of text: a ticket, not the
// blank cut a host sends to clear a half-printed job.
func printedText(t Ticket) bool {
	for _, l := range t.Lines {
		if strings.TrimSpace(l) != "" {
			return true
		}
	}
	return false
}

// inOrderLocked answers an in-order query reached by processing.
func (p *Printer) inOrderLocked(q inOrderQuery) {
	m := p.opts.Model
	switch q.cmd {
	case '@':
		if p.asb == p.src {
			p.asb = nil
		}
	case 'a':
		if m != ModelEpson {
			return
		}
		if q.n == 0 {
			p.asb = nil
			return
		}
		p.asb = p.src
		p.lastASB = p.asbPacketLocked()
		p.answerLocked(p.src, p.lastASB[:])
	case 'r':
		if !m.inOrder() {
			return
		}
		var b byte
		switch q.n {
		case 1, 49:
			if p.f.PaperNearEnd {
				b = 0x03
			}
		case 2, 50:
			if p.f.DrawerOpen {
				b = 0x01
			}
		default:
			return
		}
		p.answerLocked(p.src, []byte{b})
	case 'H':
		if m != ModelEpson {
			return
		}
		answer := []byte{0x37, 0x22, q.id[0], q.id[1], q.id[2], q.id[3], 0x00}
		if p.holdPID > 0 {
			p.holdPID--
			p.heldPID = append(p.heldPID, heldPID{to: p.src, answer: answer})
			return
		}
		p.answerLocked(p.src, answer)
	case 'I':
		var s string
		switch {
		case m == ModelEpson:
			s = map[byte]string{65: "1.01 ESC/POS", 66: "EPSON", 67: "TM-T88VI", 68: "X5SD000123", 69: p.opts.DoubleByte.FontName()}[q.n]
		case m == ModelClone && q.n == 67:
			s = "POS-80C"
		}
		if s != "" {
			p.answerLocked(p.src, append(append([]byte{0x5F}, s...), 0x00))
		}
	}
}

// statusLocked encodes the answer to DLE EOT n, bit by bit from docs/ESCPOS.md §1
// (kept independent of the escpos decoder so each checks the other).
func (p *Printer) statusLocked(n byte) byte {
	b := byte(0x12)
	set := func(mask byte, on bool) {
		if on {
			b |= mask
		}
	}
	f := p.f
	switch n {
	case 1:
		set(0x04, !f.DrawerOpen)
		set(0x08, !p.runningLocked())
		set(0x20, f.CutterError)
	case 2:
		set(0x04, f.CoverOpen)
		set(0x20, f.PaperOut)
		set(0x40, f.CutterError)
	case 3:
		set(0x08, f.CutterError)
	case 4:
		set(0x0C, f.PaperNearEnd)
		set(0x60, f.PaperOut)
	}
	return b
}

// asbPacketLocked is the 4-byte automatic status back packet.
func (p *Printer) asbPacketLocked() [4]byte {
	f := p.f
	var a [4]byte
	a[0] = 0x10
	if !f.DrawerOpen {
		a[0] |= 0x04
	}
	if !p.runningLocked() {
		a[0] |= 0x08
	}
	if f.CoverOpen {
		a[0] |= 0x20
	}
	if f.CutterError {
		a[1] |= 0x08
	}
	if f.PaperNearEnd {
		a[2] |= 0x03
	}
	if f.PaperOut {
		a[2] |= 0x0C
	}
	return a
}

// changedLocked sends an ASB packet when the status changed and wakes the
// mechanism.
func (p *Printer) changedLocked() {
	if p.asb != nil {
		if a := p.asbPacketLocked(); a != p.lastASB {
			p.lastASB = a
			p.answerLocked(p.asb, a[:])
		}
	}
	p.cond.Broadcast()
}

// answerLocked queues data to be sent to c without blocking the printer.
func (p *Printer) answerLocked(c *pconn, data []byte) {
	if c == nil || c.closed || c.mute || p.f.Offline {
		return
	}
	if p.opts.XonXoff {
		data = append([]byte{0x11}, data...)
	} else {
		data = append([]byte(nil), data...)
	}
	select {
	case c.out <- data:
	default: // the host is not reading its answers; a real printer drops them too
	}
}

// receive takes bytes read from c: real-time commands are answered at once,
// the rest goes to the receive buffer.
func (p *Printer) receive(c *pconn, data []byte) {
	p.mu.Lock()
	drop, cycled := p.receiveLocked(c, data)
	p.mu.Unlock()
	for _, d := range cycled {
		d.close()
	}
	if drop {
		c.drop()
	}
}

// receiveLocked accepts data, tripping armed faults at their byte. It
// reports whether c must be dropped and which connections a power cycle
// cut, for the caller to close outside the lock.
func (p *Printer) receiveLocked(c *pconn, data []byte) (drop bool, cycled []*pconn) {
	if c.closed || p.closed || p.f.Offline {
		return false, nil
	}
	if p.f.SlowBPS > 0 {
		p.tokens -= float64(len(data))
	}
	for len(data) > 0 || len(p.armed) > 0 {
		// Cut at the earliest armed fault.
		k, at := -1, len(data)
		for i, a := range p.armed {
			if a.left <= at {
				k, at = i, a.left
			}
		}
		part := data[:at]
		data = data[at:]
		for i := range p.armed {
			p.armed[i].left -= at
		}
		p.acceptLocked(c, part)
		if k < 0 {
			break
		}
		kind := p.armed[k].kind
		p.armed = append(p.armed[:k], p.armed[k+1:]...)
		switch kind {
		case FaultDrop:
			return true, nil
		case FaultStall:
			p.f.Stall = true
			c.held = append(c.held, data...)
			p.changedLocked()
			return false, nil
		case FaultPowerCycle:
			cycled = p.powerCycleLocked()
			if !c.pty {
				return false, cycled // the connection died with the power
			}
		default:
			_ = p.setLocked(kind, true)
		}
	}
	return false, cycled
}

func (p *Printer) acceptLocked(c *pconn, data []byte) {
	if len(data) == 0 {
		return
	}
	p.received += int64(len(data))
	if p.opts.Model.realTime() {
		for _, b := range data {
			switch {
			case c.rt == 2 && b >= 1 && b <= 4:
				p.answerLocked(c, []byte{p.statusLocked(b)})
				c.rt = 0
			case b == 0x10:
				c.rt = 1
			case c.rt == 1 && b == 0x04:
				c.rt = 2
			default:
				c.rt = 0
			}
		}
	}
	p.queue = append(p.queue, chunk{from: c, data: append([]byte(nil), data...)})
	p.queued += len(data)
	p.cond.Broadcast()
}

// Write feeds bytes to the printer as if received on a connection that
// cannot read answers, and returns once they are buffered.
func (p *Printer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, errors.New("printertest: printer closed")
	}
	p.acceptLocked(&pconn{closed: true}, b)
	return len(b), nil
}

// Tickets returns the tickets cut so far.
func (p *Printer) Tickets() []Ticket {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Ticket(nil), p.tickets...)
}

// Pending returns the ticket being printed: what has come out since the last
// cut, plus bytes still waiting in the buffer (in Raw only).
func (p *Printer) Pending() Ticket {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.ps.pendingTicket()
	for _, c := range p.queue {
		t.Raw = append(t.Raw, c.data...)
	}
	return t
}

// Disabled reports whether ESC = n with bit 0 clear has disabled the
// printer: it then ignores everything it receives (no paper, no cut, no
// in-order answer) but real-time commands, until ESC = n with bit 0 set.
func (p *Printer) Disabled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ps.off != nil
}

// Ignored returns the commands the printer ignored while disabled (the
// first MiB), for tests that check nothing was lost that way.
func (p *Printer) Ignored() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]byte(nil), p.ps.ignored...)
}

// Received returns how many bytes the printer has read in total.
func (p *Printer) Received() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.received
}

// WaitTickets waits until at least n tickets were cut and returns them all,
// or returns what there is with ctx's error.
func (p *Printer) WaitTickets(ctx context.Context, n int) ([]Ticket, error) {
	for {
		p.mu.Lock()
		if len(p.tickets) >= n {
			t := append([]Ticket(nil), p.tickets...)
			p.mu.Unlock()
			return t, nil
		}
		ch := p.ticketCh
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return p.Tickets(), fmt.Errorf("printertest: waiting for %d tickets: %w", n, ctx.Err())
		}
	}
}

// WaitConnections waits until exactly n connections are open (0 to see the
// host close its connection).
func (p *Printer) WaitConnections(ctx context.Context, n int) error {
	return p.waitFor(ctx, func() bool { return len(p.conns) == n },
		func() string { return fmt.Sprintf("%d connections (have %d)", n, len(p.conns)) })
}

// WaitReceived waits until the printer has read at least n bytes in total.
func (p *Printer) WaitReceived(ctx context.Context, n int64) error {
	return p.waitFor(ctx, func() bool { return p.received >= n },
		func() string { return fmt.Sprintf("%d bytes received (have %d)", n, p.received) })
}

// waitFor waits on the printer's condition until done holds (checked under
// the lock) or ctx ends.
func (p *Printer) waitFor(ctx context.Context, done func() bool, what func() string) error {
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for !done() {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("printertest: waiting for %s: %w", what(), err)
		}
		if p.closed {
			return fmt.Errorf("printertest: waiting for %s: printer closed", what())
		}
		p.cond.Wait()
	}
	return nil
}

// Inject sends raw bytes to every connected host, as if the printer had
// sent them: stale answers, garbage, ASB packets.
func (p *Printer) Inject(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		p.answerLocked(c, b)
	}
}
