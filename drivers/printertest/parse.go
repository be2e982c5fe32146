package printertest

import (
	"time"

	"printgate/drivers/escpos/decode"
)

// inOrderQuery is an in-order command that asks for an answer, raised when
// processing reaches it.
type inOrderQuery struct {
	cmd byte    // 'r' GS r, 'H' GS ( H fn48, 'I' GS I, 'a' GS a, '@' ESC @
	n   byte    // GS r n, GS I n, GS a n
	id  [4]byte // GS ( H
}

// parser turns an ESC/POS byte stream into tickets. It works on whatever
// prefix of the stream has arrived: each step consumes one command, or
// nothing when the command is not complete yet, so it can stop at any
// command boundary (paper out) and resume with more bytes. What a command
// does to the paper is the production decoder's (drivers/escpos/decode);
// the parser adds the emulator's buffering, numbering and timestamps.
//
// There is one parser per printer, not per connection: like a real printer
// it does not see connection boundaries, so a command cut off by a dropped
// connection takes its missing arguments from the next connection's bytes.
// Only a power cycle (reset) starts it afresh. NUL and the other control
// bytes print nothing in text mode.
type parser struct {
	buf      []byte
	needMore bool // buf holds an incomplete command

	d   *decode.Decoder
	o   decode.Options
	seq int

	// off frames commands while ESC = n (bit 0 clear) has disabled the
	// printer: an Epson then ignores all it receives but real-time commands
	// (answered on arrival, see acceptLocked) until ESC = n with bit 0 set.
	// It is a scratch decoder, so nothing it reads reaches the paper, the
	// tickets or the in-order answers. nil while the printer is enabled.
	off *decode.Decoder
	// ignored holds the bytes ignored while disabled, up to maxIgnored;
	// offRead is how many off has read since it was new.
	ignored []byte
	offRead int

	onQuery  func(inOrderQuery)
	onTicket func(Ticket)
	now      func() time.Time
}

func newParser(o decode.Options) *parser {
	p := &parser{d: decode.NewWith(o), o: o}
	p.d.OnQuery = func(q decode.Query) {
		if p.onQuery != nil {
			p.onQuery(inOrderQuery{cmd: q.Cmd, n: q.N, id: q.ID})
		}
	}
	return p
}

// reset is power-on: buffer, modes and the unfinished ticket are lost.
func (p *parser) reset() {
	p.buf, p.needMore = nil, false
	p.d.Reset()
	p.off = nil
}

// maxIgnored bounds the bytes a disabled printer keeps for Ignored.
const maxIgnored = 1 << 20

// peripheral reads ESC = n (select peripheral device): whether cmd is one,
// and whether it enables the printer (bit 0 of n).
func peripheral(cmd []byte) (enable, ok bool) {
	if len(cmd) == 3 && cmd[0] == 0x1B && cmd[1] == '=' {
		return cmd[2]&1 == 1, true
	}
	return false, false
}

// run processes commands while ok allows, and reports whether it consumed
// anything.
func (p *parser) run(ok func() bool) bool {
	progressed := false
	for len(p.buf) > 0 && ok() {
		d := p.d
		if p.off != nil {
			d = p.off
		}
		n := d.Step(p.buf)
		if n == 0 {
			p.needMore = true
			break
		}
		cmd := p.buf[:n]
		p.buf = p.buf[n:]
		progressed = true
		p.needMore = false
		enable, sel := peripheral(cmd)
		switch {
		case p.off != nil:
			if len(p.ignored) < maxIgnored {
				p.ignored = append(p.ignored, cmd[:min(len(cmd), maxIgnored-len(p.ignored))]...)
			}
			p.off.Cut() // a cut while disabled cuts nothing; drop what it read
			if p.offRead += n; p.offRead > maxIgnored {
				// What it keeps of an uncut stream is dropped with it.
				p.off, p.offRead = decode.NewWith(p.o), 0
			}
			if sel && enable {
				p.off = nil
			}
		case sel && !enable:
			p.off, p.offRead = decode.NewWith(p.o), 0
		}
		if t, cut := p.d.Cut(); cut {
			p.finishTicket(t)
		}
	}
	if len(p.buf) == 0 {
		p.buf = nil
		p.needMore = false
	}
	return progressed
}

func (p *parser) feed(b []byte) {
	p.buf = append(p.buf, b...)
	p.needMore = false
}

func (p *parser) finishTicket(dt decode.Ticket) {
	p.seq++
	t := dt.Sheet()
	t.Seq = p.seq
	if p.now != nil {
		t.At = p.now()
	}
	if p.onTicket != nil {
		p.onTicket(t)
	}
}

// Parse decodes a complete ESC/POS stream the way the emulator would print
// it: the tickets that were cut, and what is left on the unfinished one.
// Tests of the encoder use it to read back what they produced.
func Parse(stream []byte, powerOnCJK bool) (tickets []Ticket, pending Ticket) {
	return ParseWith(stream, decode.Options{PowerOnCJK: powerOnCJK})
}

// ParseWith is Parse for a printer described by o: its power-on mode, its
// double-byte encoding and its maker's ESC t numbering.
func ParseWith(stream []byte, o decode.Options) (tickets []Ticket, pending Ticket) {
	p := newParser(o)
	p.onTicket = func(t Ticket) { tickets = append(tickets, t) }
	p.feed(stream)
	p.run(func() bool { return true })
	pending = p.pendingTicket()
	return tickets, pending
}

// pendingTicket is the unfinished ticket as it would look if cut now.
func (p *parser) pendingTicket() Ticket {
	t := p.d.Pending().Sheet()
	t.Raw = append(t.Raw, p.buf...)
	return t
}

// code128Text is what a CODE128 symbol encodes, as a scanner would read it.
func code128Text(s string) string { return decode.Code128Text(s) }
