package printertest

import (
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// codePages maps ESC t n (Epson numbering, ESCPOS.md §3) to a decoder;
// other numbers print as PC437.
var codePages = map[byte]*charmap.Charmap{
	0:  charmap.CodePage437,
	16: charmap.Windows1252,
	17: charmap.CodePage866,
	19: charmap.CodePage858,
}

// inOrderQuery is an in-order command that asks for an answer, raised when
// processing reaches it.
type inOrderQuery struct {
	cmd byte    // 'r' GS r, 'H' GS ( H fn48, 'I' GS I, 'a' GS a, '@' ESC @
	n   byte    // GS r n, GS I n, GS a n
	id  [4]byte // GS ( H
}

// parser turns an ESC/POS byte stream into tickets. It works on whatever
// prefix of the stream has arrived: step consumes one command, or nothing
// when the command is not complete yet, so it can stop at any command
// boundary (paper out) and resume with more bytes.
//
// There is one parser per printer, not per connection: like a real printer
// it does not see connection boundaries, so a command cut off by a dropped
// connection takes its missing arguments from the next connection's bytes.
// Only a power cycle (reset) starts it afresh. NUL and the other control
// bytes print nothing in text mode.
type parser struct {
	buf      []byte
	needMore bool // buf holds an incomplete command

	powerOnCJK bool
	cjk        bool
	codePage   byte
	line       strings.Builder
	lineCols   int
	cur        Ticket
	seq        int
	qr         string

	onQuery  func(inOrderQuery)
	onTicket func(Ticket)
	now      func() time.Time
}

func newParser(powerOnCJK bool) *parser {
	p := &parser{powerOnCJK: powerOnCJK}
	p.reset()
	return p
}

// reset is power-on: buffer, modes and the unfinished ticket are lost.
func (p *parser) reset() {
	p.buf, p.needMore = nil, false
	p.cur = Ticket{}
	p.qr = ""
	p.init()
}

// init is ESC @ (and part of power-on): the print buffer (the text of the
// line not printed yet) is cleared and the modes go back to their power-on
// defaults. Lines already printed stay on the paper; bytes received after
// ESC @ are not touched.
func (p *parser) init() {
	p.line.Reset()
	p.lineCols = 0
	p.cjk = p.powerOnCJK
	p.codePage = 0
}

// run processes commands while ok allows, and reports whether it consumed
// anything.
func (p *parser) run(ok func() bool) bool {
	progressed := false
	for len(p.buf) > 0 && ok() {
		n := p.step(p.buf)
		if n == 0 {
			p.needMore = true
			break
		}
		p.cur.Raw = append(p.cur.Raw, p.buf[:n]...)
		p.buf = p.buf[n:]
		progressed = true
		p.needMore = false
		if p.cur.Cut != "" {
			p.finishTicket()
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

func (p *parser) finishTicket() {
	p.seq++
	t := p.cur
	t.Seq = p.seq
	if p.now != nil {
		t.At = p.now()
	}
	p.cur = Ticket{}
	if p.onTicket != nil {
		p.onTicket(t)
	}
}

func (p *parser) endLine() {
	p.cur.Lines = append(p.cur.Lines, p.line.String())
	p.line.Reset()
	p.lineCols = 0
}

func (p *parser) flushLine() {
	if p.line.Len() > 0 {
		p.endLine()
	}
}

func (p *parser) text(s string) {
	p.line.WriteString(s)
	p.lineCols += columns(s)
}

func (p *parser) query(q inOrderQuery) {
	if p.onQuery != nil {
		p.onQuery(q)
	}
}

func (p *parser) cut(kind string) {
	p.flushLine()
	p.cur.Cut = kind
}

func le16(lo, hi byte) int { return int(lo) | int(hi)<<8 }

// step processes the command at the start of b and returns its length, or
// 0 when b holds only part of it.
func (p *parser) step(b []byte) int {
	c := b[0]
	switch {
	case c == 0x1B:
		return p.esc(b)
	case c == 0x1C:
		return p.fs(b)
	case c == 0x1D:
		return p.gs(b)
	case c == 0x10:
		return p.dle(b)
	case c == 0x0A:
		p.endLine()
		return 1
	case c == 0x09:
		p.text(strings.Repeat(" ", 8-p.lineCols%8))
		return 1
	case c < 0x20 || c == 0x7F:
		return 1 // CR, FF, CAN and other controls print nothing here
	case c < 0x80:
		p.text(string(rune(c)))
		return 1
	case !p.cjk:
		cm := codePages[p.codePage]
		if cm == nil {
			cm = charmap.CodePage437
		}
		p.text(string(cm.DecodeByte(c)))
		return 1
	}
	return p.gb18030(b)
}

// gb18030 prints one GB18030 character of 2 or 4 bytes.
func (p *parser) gb18030(b []byte) int {
	if b[0] == 0x80 || b[0] == 0xFF {
		p.text("\uFFFD")
		return 1
	}
	if len(b) < 2 {
		return 0
	}
	n := 2
	if b[1] >= 0x30 && b[1] <= 0x39 {
		n = 4
	}
	if len(b) < n {
		return 0
	}
	s, err := simplifiedchinese.GB18030.NewDecoder().Bytes(b[:n])
	if err != nil || !utf8.Valid(s) {
		p.text("\uFFFD")
		return n
	}
	p.text(string(s))
	return n
}

func (p *parser) esc(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '@':
		p.init()
		p.query(inOrderQuery{cmd: '@'})
		return 2
	case 't':
		if len(b) < 3 {
			return 0
		}
		p.codePage = b[2]
		return 3
	case 'd':
		if len(b) < 3 {
			return 0
		}
		if b[2] == 0 {
			p.flushLine()
		}
		for range int(b[2]) {
			p.endLine()
		}
		return 3
	case 'J':
		if len(b) < 3 {
			return 0
		}
		p.flushLine()
		return 3
	case 'p': // cash drawer: ESC p m t1 t2
		if len(b) < 5 {
			return 0
		}
		pin := 2
		if b[2]&1 == 1 {
			pin = 5
		}
		p.cur.Drawer = append(p.cur.Drawer, DrawerKick{Pin: pin, OnMS: int(b[3]) * 2, OffMS: int(b[4]) * 2})
		return 5
	case 'B': // clone buzzer: ESC B n t
		if len(b) < 4 {
			return 0
		}
		p.cur.Beeps += int(b[2])
		return 4
	case 'i':
		p.cut("full")
		return 2
	case 'm':
		p.cut("partial")
		return 2
	case '(': // ESC ( fn pL pH data; fn 'A' with 30 n c t is the Epson buzzer
		if len(b) < 5 {
			return 0
		}
		n := 5 + le16(b[3], b[4])
		if len(b) < n {
			return 0
		}
		if b[2] == 'A' && n == 9 && b[5] == 0x30 {
			p.cur.Beeps += int(b[7])
		}
		return n
	case '*': // bit image: ESC * m nL nH data
		if len(b) < 5 {
			return 0
		}
		k := le16(b[3], b[4])
		h, n := 8, 5+k
		if b[2] == 32 || b[2] == 33 {
			h, n = 24, 5+3*k
		}
		if len(b) < n {
			return 0
		}
		p.cur.Images = append(p.cur.Images, Image{Width: k, Height: h})
		return n
	case 'D': // tab stops, NUL-terminated, at most 32
		for i := 2; i < len(b) && i < 35; i++ {
			if b[i] == 0 {
				return i + 1
			}
		}
		if len(b) >= 35 {
			return 35
		}
		return 0
	case '&': // user-defined characters: ESC & y c1 c2 {x d[y*x]}...
		if len(b) < 5 {
			return 0
		}
		y, c1, c2 := int(b[2]), int(b[3]), int(b[4])
		i := 5
		for ch := c1; ch <= c2 && ch <= 126; ch++ {
			if len(b) <= i {
				return 0
			}
			i += 1 + y*int(b[i])
		}
		if len(b) < i {
			return 0
		}
		return i
	case '$', '\\':
		return fixed(b, 4)
	case 'W':
		return fixed(b, 10)
	case 'c':
		return fixed(b, 4)
	case '2', '<', 'L', 'S', 0x0C:
		return 2
	}
	return fixed(b, 3) // ESC ! E G - a e M R 3 SP V { r % ? U T C and others with one parameter
}

func (p *parser) fs(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '&':
		p.cjk = true
		return 2
	case '.':
		p.cjk = false
		return 2
	case 'S', 'p':
		return fixed(b, 4)
	case '2': // user-defined Kanji: FS 2 c1 c2 d1..d72
		return fixed(b, 76)
	case '(':
		if len(b) < 5 {
			return 0
		}
		return fixed(b, 5+le16(b[3], b[4]))
	case 'q': // define NV images: FS q n {xL xH yL yH d[x*y*8]}...
		if len(b) < 3 {
			return 0
		}
		i := 3
		for range int(b[2]) {
			if len(b) < i+4 {
				return 0
			}
			i += 4 + le16(b[i], b[i+1])*le16(b[i+2], b[i+3])*8
		}
		return fixed(b, i)
	}
	return fixed(b, 3) // FS ! - W C and others with one parameter
}

func (p *parser) gs(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case 'V':
		if len(b) < 3 {
			return 0
		}
		m := b[2]
		n := 3
		if m >= 65 {
			n = 4
		}
		if len(b) < n {
			return 0
		}
		kind := "full"
		if m == 1 || m == 49 || m == 66 || m == 98 || m == 104 {
			kind = "partial"
		}
		p.cut(kind)
		return n
	case 'r', 'I', 'a':
		if len(b) < 3 {
			return 0
		}
		p.query(inOrderQuery{cmd: b[1], n: b[2]})
		return 3
	case 'k':
		return p.barcode(b)
	case 'v': // raster: GS v 0 m xL xH yL yH data
		if len(b) < 8 {
			return 0
		}
		x, y := le16(b[4], b[5]), le16(b[6], b[7])
		n := 8 + x*y
		if len(b) < n {
			return 0
		}
		p.flushLine()
		p.cur.Images = append(p.cur.Images, Image{Width: x * 8, Height: y})
		return n
	case '*': // download bit image: GS * x y data[x*y*8]
		if len(b) < 4 {
			return 0
		}
		return fixed(b, 4+int(b[2])*int(b[3])*8)
	case '8': // GS 8 L p1 p2 p3 p4 m fn data: graphics with a 4-byte length
		if len(b) < 7 {
			return 0
		}
		n := int(b[3]) | int(b[4])<<8 | int(b[5])<<16 | int(b[6])<<24
		if len(b) < 7+n {
			return 0
		}
		p.graphics(b[7 : 7+n])
		return 7 + n
	case '(':
		if len(b) < 5 {
			return 0
		}
		n := 5 + le16(b[3], b[4])
		if len(b) < n {
			return 0
		}
		body := b[5:n]
		switch b[2] {
		case 'k':
			p.symbol(body)
		case 'H':
			if len(body) == 6 && body[0] == 0x30 && body[1] == 0x30 {
				var id [4]byte
				copy(id[:], body[2:])
				p.query(inOrderQuery{cmd: 'H', id: id})
			}
		case 'L':
			p.graphics(body)
		}
		return n
	case 'L', 'W', 'P', '$', '\\':
		return fixed(b, 4)
	case '^':
		return fixed(b, 5)
	case ':':
		return 2
	}
	return fixed(b, 3) // GS ! B H h w f b T / j and others with one parameter
}

// barcode prints GS k m: m 0..6 data NUL-terminated, m 65..79 with a length.
func (p *parser) barcode(b []byte) int {
	if len(b) < 3 {
		return 0
	}
	m := b[2]
	var data []byte
	var n int
	if m <= 6 {
		i := 3
		for i < len(b) && b[i] != 0 && i < 3+255 {
			i++
		}
		if i >= len(b) {
			return 0
		}
		data, n = b[3:i], i+1
		if b[i] != 0 {
			n = i
		}
	} else {
		if len(b) < 4 {
			return 0
		}
		n = 4 + int(b[3])
		if len(b) < n {
			return 0
		}
		data = b[4:n]
	}
	s := string(data)
	if m == 73 {
		s = code128Text(s)
	}
	p.flushLine()
	p.cur.Barcodes = append(p.cur.Barcodes, strings.ToValidUTF8(s, "\uFFFD"))
	return n
}

// symbol handles GS ( k for QR codes (cn 49): store data (fn 80), print (fn 81).
func (p *parser) symbol(body []byte) {
	if len(body) < 2 || body[0] != 49 {
		return
	}
	switch body[1] {
	case 80:
		if len(body) >= 3 {
			p.qr = strings.ToValidUTF8(string(body[3:]), "\uFFFD")
		}
	case 81:
		p.flushLine()
		p.cur.QR = append(p.cur.QR, p.qr)
	}
}

// graphics handles GS ( L / GS 8 L: a raster store (fn 112) or print (fn 50)
// is recorded as one image of the stored size.
func (p *parser) graphics(body []byte) {
	if len(body) >= 10 && body[0] == 0x30 && body[1] == 112 {
		w, h := le16(body[6], body[7]), le16(body[8], body[9])
		p.flushLine()
		p.cur.Images = append(p.cur.Images, Image{Width: w, Height: h})
	}
}

// dle skips real-time commands: they were acted on when received.
func (p *parser) dle(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case 0x04:
		if len(b) < 3 {
			return 0
		}
		if b[2] == 7 || b[2] == 8 {
			return fixed(b, 4)
		}
		return 3
	case 0x05:
		return fixed(b, 3)
	case 0x14:
		if len(b) < 3 {
			return 0
		}
		switch b[2] {
		case 1:
			if len(b) < 5 {
				return 0
			}
			pin := 2
			if b[3]&1 == 1 {
				pin = 5
			}
			p.cur.Drawer = append(p.cur.Drawer, DrawerKick{Pin: pin, OnMS: int(b[4]) * 100, OffMS: int(b[4]) * 100})
			return 5
		case 8:
			return fixed(b, 10)
		}
		return fixed(b, 5)
	}
	return 1
}

// Parse decodes a complete ESC/POS stream the way the emulator would print
// it: the tickets that were cut, and what is left on the unfinished one.
// Tests of the encoder use it to read back what they produced.
func Parse(stream []byte, powerOnCJK bool) (tickets []Ticket, pending Ticket) {
	p := newParser(powerOnCJK)
	p.onTicket = func(t Ticket) { tickets = append(tickets, t) }
	p.feed(stream)
	p.run(func() bool { return true })
	pending = p.pendingTicket()
	return tickets, pending
}

// pendingTicket is the unfinished ticket as it would look if cut now.
func (p *parser) pendingTicket() Ticket {
	t := p.cur
	t.Lines = append([]string(nil), t.Lines...)
	if p.line.Len() > 0 {
		t.Lines = append(t.Lines, p.line.String())
	}
	t.Raw = append(append([]byte(nil), t.Raw...), p.buf...)
	return t
}

// code128Text is what a CODE128 symbol encodes, as a scanner would read it:
// the code set switches in GS k data ("{A", "{B", "{C", with "{{" a brace)
// are not characters, and in code set C each byte is a pair of digits.
func code128Text(s string) string {
	var b strings.Builder
	setC := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '{' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'A', 'B':
				setC = false
			case 'C':
				setC = true
			case '{':
				b.WriteByte('{')
			}
			continue
		}
		if setC && c < 100 {
			b.WriteByte('0' + c/10)
			b.WriteByte('0' + c%10)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// fixed is the length of a command of n bytes at the start of b, or 0 when
// b does not hold all of it yet (the parser waits for more bytes).
func fixed(b []byte, n int) int {
	if len(b) < n {
		return 0
	}
	return n
}
