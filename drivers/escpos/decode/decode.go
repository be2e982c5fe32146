// Package decode reads an ESC/POS byte stream the way a printer prints it:
// the tickets between cuts, each with its text rows (and their print modes,
// in the code table of ESC t or the double-byte set of Kanji mode), QR codes
// and other 2D symbols, barcodes, images, beeps and drawer kicks in paper
// order.
//
// It is the decoder of the test emulator (drivers/printertest), moved here
// so that production code can use it too: the manager page previews tasks
// whose payload is raw ESC/POS (escpos.PreviewStreamHTML), and `printgate
// decode` draws a stream's tickets as text the way the emulator records
// them (Sheet), without linking the emulator into the release binary.
package decode

import (
	"strings"

	"golang.org/x/text/width"
)

// Ticket is one piece of paper: everything between two cuts.
type Ticket struct {
	// Lines holds the text lines as printed, decoded from the code page or
	// from GB18030 in CJK mode. Feeds give empty lines.
	Lines []string
	// Items is the paper in order: every text line (with its styles),
	// symbol, image, beep and drawer kick.
	Items []Item
	// QR and Barcodes hold the contents of each printed symbol, in order;
	// barcodes as a scanner reads them.
	QR       []string
	Barcodes []string
	// Images holds each printed raster or bit image.
	Images []Image
	// Drawer holds each cash drawer kick; Beeps counts buzzer sounds.
	Drawer []DrawerKick
	Beeps  int
	// Cut is "full" or "partial"; empty for a ticket still being printed.
	Cut string
	// Raw holds the bytes processed for this ticket, cut included.
	Raw []byte
	// Unknown lists the commands the decoder skipped without knowing them
	// (at most MaxUnknown).
	Unknown []Unknown
	// FeedsDropped counts the blank rows of ESC d feeds that Decode did not
	// keep because the stream fed more than its bound (see MaxFeedRows).
	FeedsDropped int
}

// MaxFeedRows bounds the blank rows Decode keeps from ESC d feeds, beyond
// one per byte of the stream. ESC d n feeds up to 255 rows for 3 bytes, so
// without a bound a 1 MiB payload of feeds would decode to some 90 million
// rows (tens of GB) in the manager page's preview; real tickets feed a few
// rows before a cut. Decoders made by New (the emulator's) keep them all.
const MaxFeedRows = 4096

// MaxUnknown bounds Ticket.Unknown.
const MaxUnknown = 64

// Unknown is a command the decoder did not know and skipped by guessing its
// length.
type Unknown struct {
	Offset int64 // bytes processed since power-on before it
	Len    int
}

// Kind is what an Item is.
type Kind int

// Item kinds.
const (
	KindText Kind = iota
	KindQR
	KindBarcode
	KindImage
	KindBeep
	KindDrawer
	// KindSymbol is a 2D symbol other than QR (PDF417, MaxiCode, Aztec,
	// DataMatrix): the preview draws it as a marker with its content.
	KindSymbol
)

// Item is one thing on the paper. Only the fields of its Kind are set.
type Item struct {
	Kind    Kind
	Line    Line       // KindText
	QR      QR         // KindQR
	Barcode Barcode    // KindBarcode
	Image   Image      // KindImage
	Beeps   int        // KindBeep
	Drawer  DrawerKick // KindDrawer
	Symbol  Symbol     // KindSymbol
}

// Symbol is a printed 2D symbol other than a QR code.
type Symbol struct {
	Type  string // "PDF417", "MaxiCode", "Aztec" or "DataMatrix"
	Data  string // the stored data, invalid UTF-8 replaced by U+FFFD
	Align byte
}

// Line is a printed text row.
type Line struct {
	Spans []Span
	Align byte // ESC a when the row began: 0 left, 1 centre, 2 right
}

// Text is the line's text.
func (l Line) Text() string {
	var sb strings.Builder
	for _, s := range l.Spans {
		sb.WriteString(s.Text)
	}
	return sb.String()
}

// Span is a run of text in one print mode.
type Span struct {
	Text  string
	Style Style
}

// Style is the print mode of a character.
type Style struct {
	W, H      int // magnification 1..8 (GS !, ESC ! bits 4 and 5, FS ! in CJK mode)
	Bold      bool
	Underline bool
	Inverted  bool // GS B: white on black
}

// QR is a printed QR code.
type QR struct {
	Data   string
	Module int  // dots per module (GS ( k fn 67)
	Align  byte // ESC a when printed
	Model  int  // 1 or 2 (GS ( k fn 65: 49, 50), 3 for Micro QR (51); 2 by default
}

// Barcode is a printed 1D barcode.
type Barcode struct {
	Sym     byte   // GS k m as sent (0..6 or 65..)
	Payload []byte // the data bytes as sent
	Text    string // what a scanner reads (CODE128 code set switches removed)
	Module  int    // GS w
	Height  int    // GS h
	HRI     byte   // GS H: 0 none, 1 above, 2 below, 3 both
	Align   byte
}

// Image is a printed image. Bits holds its dots (GS v 0, ESC * bit images
// turned into rows, GS ( L / GS 8 L monochrome): Stride bytes a row, MSB
// leftmost, 1 black; nil for formats whose dots are not kept (colour
// graphics). Width and Height are dots on paper: ESC * single-density
// columns are two dots wide and 8-dot-mode dots three tall.
type Image struct {
	Width, Height int
	Stride        int
	Bits          []byte
	Align         byte
}

// DrawerKick is one pulse on a cash drawer connector.
type DrawerKick struct {
	Pin   int // 2 or 5
	OnMS  int // pulse on time
	OffMS int // pulse off time
}

// Query is an in-order command that asks for an answer, raised when
// processing reaches it.
type Query struct {
	Cmd byte    // 'r' GS r, 'H' GS ( H fn48, 'I' GS I, 'a' GS a, '@' ESC @
	N   byte    // GS r n, GS I n, GS a n
	ID  [4]byte // GS ( H
}

// Decoder is the print mechanism of one printer: Step executes one command
// at a time. It keeps the modes and the unfinished ticket; whoever feeds it
// keeps the bytes not processed yet (a printer does not see connection
// boundaries, so neither does the Decoder).
type Decoder struct {
	powerOnCJK bool
	dbcs       DoubleByte
	// jis is FS C 0: a Japanese printer in Kanji mode reads JIS X 0208 as
	// pairs of 7-bit bytes instead of Shift JIS.
	jis       bool
	tables    CodeTables
	cjk       bool
	codePage  byte
	style     Style
	align     byte
	lineAlign byte
	spans     []Span
	// tail is the text of the last span, kept apart until the row is
	// read: appending to it is amortised O(1), where appending to the
	// span's string would copy the row so far for every character.
	tail     []byte
	lineLen  int // bytes of text in spans
	feedLeft int // ESC d rows still kept (Decode's bound); negative: no bound
	lineCols int
	cur      Ticket
	qr       string
	qrModule int
	qrModel  int
	stored   [len(symbolTypes)]string // GS ( k fn 80 data of each cn
	// graphic is the GS ( L / GS 8 L raster stored (fn 112) and not yet
	// printed (fn 50).
	graphic *Image
	// band is the index in cur.Items of the ESC * image being printed
	// band by band, or -1; bandFed says that the feed under its last band
	// came (the next band of the same width continues it).
	band    int
	bandFed bool
	// raster is the index in cur.Items of the last GS v 0 or graphics
	// image, or -1, and rasterSrc the command that printed it.
	raster    int
	rasterSrc byte
	bcModule  int
	bcHeight  int
	bcHRI     byte
	offset    int64

	// OnQuery, when set, is called for every in-order query reached.
	OnQuery func(Query)
}

// New returns a decoder in the power-on state; powerOnCJK is a Chinese
// printer's default GB18030 mode.
func New(powerOnCJK bool) *Decoder {
	return NewWith(Options{PowerOnCJK: powerOnCJK})
}

// Options describe the printer a stream is decoded for.
type Options struct {
	// PowerOnCJK is a Chinese printer's default: Kanji mode (FS &) on at
	// power-on and after ESC @.
	PowerOnCJK bool
	// DoubleByte is the encoding of Kanji mode; GB18030 unless the
	// printer's firmware is traditional Chinese or Japanese.
	DoubleByte DoubleByte
	// CodeTables is the maker's ESC t numbering; Epson's unless the
	// printer is an Xprinter or another maker with its own.
	CodeTables CodeTables
}

// NewWith returns a decoder in the power-on state for a printer described
// by o.
func NewWith(o Options) *Decoder {
	d := &Decoder{powerOnCJK: o.PowerOnCJK, dbcs: o.DoubleByte, tables: o.CodeTables, feedLeft: -1}
	d.Reset()
	return d
}

// Reset is power-on: modes and the unfinished ticket are lost.
func (d *Decoder) Reset() {
	d.cur = Ticket{}
	d.qr = ""
	d.stored = [len(symbolTypes)]string{}
	d.band, d.raster = -1, -1
	d.offset = 0
	d.init()
}

// init is ESC @ (and part of power-on): the print buffer (the text of the
// line not printed yet) is cleared and the modes go back to their power-on
// defaults. Lines already printed stay on the paper.
func (d *Decoder) init() {
	d.spans, d.tail, d.lineLen, d.lineCols = nil, nil, 0, 0
	d.graphic = nil // graphics stored in the print buffer are cleared too
	d.cjk = d.powerOnCJK
	d.jis = false
	d.codePage = 0
	d.style = Style{W: 1, H: 1}
	d.align, d.lineAlign = 0, 0
	d.qrModule, d.qrModel, d.bcModule, d.bcHeight, d.bcHRI = 3, 2, 3, 162, 0
}

// Cut returns the ticket just cut, and true, once a step has cut the paper;
// the next ticket starts empty.
func (d *Decoder) Cut() (Ticket, bool) {
	if d.cur.Cut == "" {
		return Ticket{}, false
	}
	t := d.cur
	d.cur = Ticket{}
	d.band, d.raster = -1, -1
	return t, true
}

// Pending is the unfinished ticket as it would look if cut now.
func (d *Decoder) Pending() Ticket {
	t := d.cur
	t.Lines = append([]string(nil), t.Lines...)
	t.Items = append([]Item(nil), t.Items...)
	if d.lineLen > 0 {
		l := d.lineNow()
		t.Lines = append(t.Lines, l.Text())
		t.Items = append(t.Items, Item{Kind: KindText, Line: l})
	}
	t.Raw = append([]byte(nil), t.Raw...)
	return t
}

// Step processes the command at the start of b and returns its length, or
// 0 when b holds only part of it (then nothing happened: call again with
// more bytes). b must not be empty.
func (d *Decoder) Step(b []byte) int {
	n := d.step(b)
	if n > 0 {
		d.cur.Raw = append(d.cur.Raw, b[:n]...)
		d.offset += int64(n)
	}
	return n
}

// Decode reads a whole stream: the tickets that were cut, what is left on
// the unfinished one, and how many bytes at the end form an incomplete
// command (the printer would wait for the rest).
func Decode(stream []byte, powerOnCJK bool) (tickets []Ticket, pending Ticket, incomplete int) {
	return DecodeWith(stream, Options{PowerOnCJK: powerOnCJK})
}

// DecodeWith is Decode for a printer described by o.
func DecodeWith(stream []byte, o Options) (tickets []Ticket, pending Ticket, incomplete int) {
	d := NewWith(o)
	d.feedLeft = MaxFeedRows + len(stream)
	for len(stream) > 0 {
		n := d.Step(stream)
		if n == 0 {
			break
		}
		stream = stream[n:]
		if t, ok := d.Cut(); ok {
			tickets = append(tickets, t)
		}
	}
	pending = d.Pending()
	pending.Raw = append(pending.Raw, stream...)
	return tickets, pending, len(stream)
}

func (d *Decoder) lineNow() Line {
	l := Line{Spans: append([]Span(nil), d.spans...), Align: d.lineAlign}
	if n := len(l.Spans); n > 0 {
		l.Spans[n-1].Text = string(d.tail)
	}
	return l
}

func (d *Decoder) endLine() {
	if d.lineLen == 0 && d.bandDone() {
		return // the feed under a band of a bit image, not a blank row
	}
	l := d.lineNow()
	if d.lineLen == 0 {
		l.Align = d.align
	}
	d.cur.Lines = append(d.cur.Lines, l.Text())
	d.cur.Items = append(d.cur.Items, Item{Kind: KindText, Line: l})
	d.spans, d.tail, d.lineLen, d.lineCols = nil, d.tail[:0], 0, 0
}

func (d *Decoder) flushLine() {
	if d.lineLen > 0 {
		d.endLine()
	}
}

func (d *Decoder) text(s string) {
	if d.lineLen == 0 {
		d.lineAlign = d.align
	}
	if n := len(d.spans); n > 0 && d.spans[n-1].Style == d.style {
		d.tail = append(d.tail, s...)
	} else {
		if n > 0 {
			d.spans[n-1].Text = string(d.tail)
		}
		d.spans = append(d.spans, Span{Style: d.style})
		d.tail = append(d.tail[:0], s...)
	}
	d.lineLen += len(s)
	d.lineCols += Columns(s)
}

func (d *Decoder) query(q Query) {
	if d.OnQuery != nil {
		d.OnQuery(q)
	}
}

func (d *Decoder) cut(kind string) {
	d.flushLine()
	d.cur.Cut = kind
}

func (d *Decoder) unknown(n int) int {
	if n > 0 && len(d.cur.Unknown) < MaxUnknown {
		d.cur.Unknown = append(d.cur.Unknown, Unknown{Offset: d.offset, Len: n})
	}
	return n
}

func le16(lo, hi byte) int { return int(lo) | int(hi)<<8 }

// Columns is the display width of s: East Asian wide and full-width
// characters take two columns, as they do on paper.
func Columns(s string) int {
	n := 0
	for _, r := range s {
		switch width.LookupRune(r).Kind() {
		case width.EastAsianWide, width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

func (d *Decoder) step(b []byte) int {
	c := b[0]
	switch {
	case c == 0x1B:
		return d.esc(b)
	case c == 0x1C:
		return d.fs(b)
	case c == 0x1D:
		return d.gs(b)
	case c == 0x10:
		return d.dle(b)
	case c == 0x0A:
		d.endLine()
		return 1
	case c == 0x09:
		d.text(strings.Repeat(" ", 8-d.lineCols%8))
		return 1
	case c < 0x20 || c == 0x7F:
		return 1 // CR, FF, CAN and other controls print nothing here
	case c < 0x80 && d.cjk && d.jis && d.dbcs == ShiftJIS:
		return d.jisChar(b)
	case c < 0x80:
		d.text(string(rune(c)))
		return 1
	case !d.cjk:
		d.text(string(singleByteRune(d.tables, d.codePage, c)))
		return 1
	}
	return d.doubleByte(b)
}

// alignOf reads ESC a n: 0/48 left, 1/49 centre, 2/50 right.
func alignOf(n byte) byte {
	switch n {
	case 1, '1':
		return 1
	case 2, '2':
		return 2
	}
	return 0
}

func (d *Decoder) esc(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '@':
		d.init()
		d.query(Query{Cmd: '@'})
		return 2
	case 't':
		if len(b) < 3 {
			return 0
		}
		d.codePage = b[2]
		return 3
	case '!': // print mode: bit 3 bold, 4 double height, 5 double width, 7 underline
		if len(b) < 3 {
			return 0
		}
		m := b[2]
		d.style.Bold = m&0x08 != 0
		d.style.H, d.style.W = 1, 1
		if m&0x10 != 0 {
			d.style.H = 2
		}
		if m&0x20 != 0 {
			d.style.W = 2
		}
		d.style.Underline = m&0x80 != 0
		return 3
	case 'E':
		if len(b) < 3 {
			return 0
		}
		d.style.Bold = b[2]&1 == 1
		return 3
	case '-':
		if len(b) < 3 {
			return 0
		}
		d.style.Underline = b[2] == 1 || b[2] == 2 || b[2] == '1' || b[2] == '2'
		return 3
	case 'a':
		if len(b) < 3 {
			return 0
		}
		d.align = alignOf(b[2])
		if d.lineLen == 0 {
			d.lineAlign = d.align
		}
		return 3
	case 'd':
		if len(b) < 3 {
			return 0
		}
		if b[2] == 0 {
			d.flushLine()
		}
		rows := int(b[2])
		if d.lineLen > 0 {
			d.endLine() // the row printed, not a blank feed
			rows--
		}
		if d.feedLeft >= 0 {
			kept := min(rows, d.feedLeft)
			d.feedLeft -= kept
			d.cur.FeedsDropped += rows - kept
			rows = kept
		}
		for range rows {
			d.endLine()
		}
		return 3
	case 'J':
		if len(b) < 3 {
			return 0
		}
		if d.lineLen == 0 {
			d.bandDone() // a feed under a band of a bit image
		}
		d.flushLine()
		return 3
	case 'p': // cash drawer: ESC p m t1 t2
		if len(b) < 5 {
			return 0
		}
		pin := 2
		if b[2]&1 == 1 {
			pin = 5
		}
		k := DrawerKick{Pin: pin, OnMS: int(b[3]) * 2, OffMS: int(b[4]) * 2}
		d.cur.Drawer = append(d.cur.Drawer, k)
		d.cur.Items = append(d.cur.Items, Item{Kind: KindDrawer, Drawer: k})
		return 5
	case 'B': // clone buzzer: ESC B n t
		if len(b) < 4 {
			return 0
		}
		d.beep(int(b[2]))
		return 4
	case 'i':
		d.cut("full")
		return 2
	case 'm':
		d.cut("partial")
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
			d.beep(int(b[7]))
		}
		return n
	case '*': // bit image: ESC * m nL nH data
		return d.bitImage(b)
	case 'D': // tab stops: the table knows where an Epson ends them
		return fixed(b, CommandLength(b))
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
	case 'G', 'M', 'R', '3', ' ', 'V', '{', 'r', '%', '?', 'U', 'T', 'C', 'e':
		// One parameter, nothing the paper shows: fonts, spacing, rotation...
		return fixed(b, 3)
	}
	return d.other(b)
}

// other frames an ESC, FS, GS or DLE DC4 command that changes nothing the decoder
// keeps by the command-length table, or, when the table does not know it,
// lists it as unknown and guesses 3 bytes, the length most have (such a
// command never reaches a printer through the agent: see Known).
func (d *Decoder) other(b []byte) int {
	if n := CommandLength(b); n != UnknownLength {
		return fixed(b, n)
	}
	return d.unknown(fixed(b, 3))
}

func (d *Decoder) beep(n int) {
	d.cur.Beeps += n
	d.cur.Items = append(d.cur.Items, Item{Kind: KindBeep, Beeps: n})
}

func (d *Decoder) fs(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '&':
		d.cjk = true
		return 2
	case '.':
		d.cjk = false
		return 2
	case '!': // Kanji print mode: bit 2 double width, 3 double height, 7 underline
		if len(b) < 3 {
			return 0
		}
		if d.cjk {
			m := b[2]
			d.style.W, d.style.H = 1, 1
			if m&0x04 != 0 {
				d.style.W = 2
			}
			if m&0x08 != 0 {
				d.style.H = 2
			}
			d.style.Underline = m&0x80 != 0
		}
		return 3
	case '-':
		if len(b) < 3 {
			return 0
		}
		if d.cjk {
			d.style.Underline = b[2] == 1 || b[2] == 2 || b[2] == '1' || b[2] == '2'
		}
		return 3
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
	case 'C': // Kanji character code system: 0/48 JIS, 1/49 and 2/50 Shift JIS
		if len(b) < 3 {
			return 0
		}
		d.jis = b[2] == 0 || b[2] == '0'
		return 3
	case 'W':
		return fixed(b, 3)
	}
	return d.other(b)
}

func (d *Decoder) gs(b []byte) int {
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
		d.cut(kind)
		return n
	case 'r', 'I', 'a':
		if len(b) < 3 {
			return 0
		}
		d.query(Query{Cmd: b[1], N: b[2]})
		return 3
	case '!': // character size: high nibble width-1, low nibble height-1
		if len(b) < 3 {
			return 0
		}
		d.style.W = int(b[2]>>4&7) + 1
		d.style.H = int(b[2]&7) + 1
		return 3
	case 'B':
		if len(b) < 3 {
			return 0
		}
		d.style.Inverted = b[2]&1 == 1
		return 3
	case 'w':
		if len(b) < 3 {
			return 0
		}
		d.bcModule = int(b[2])
		return 3
	case 'h':
		if len(b) < 3 {
			return 0
		}
		d.bcHeight = int(b[2])
		return 3
	case 'H':
		if len(b) < 3 {
			return 0
		}
		d.bcHRI = b[2] & 3
		return 3
	case 'k':
		return d.barcode(b)
	case 'v': // raster: GS v 0 m xL xH yL yH data
		if len(b) < 8 {
			return 0
		}
		x, y := le16(b[4], b[5]), le16(b[6], b[7])
		n := 8 + x*y
		if len(b) < n {
			return 0
		}
		d.flushLine()
		d.image(Image{Width: x * 8, Height: y, Stride: x, Bits: append([]byte(nil), b[8:n]...)}, 'v')
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
		if n < 0 || len(b)-7 < n {
			return 0
		}
		d.graphics(b[7 : 7+n])
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
			d.symbol(body)
		case 'H':
			if len(body) == 6 && body[0] == 0x30 && body[1] == 0x30 {
				var id [4]byte
				copy(id[:], body[2:])
				d.query(Query{Cmd: 'H', ID: id})
			}
		case 'L':
			d.graphics(body)
		}
		return n
	case 'L', 'W', 'P', '$', '\\':
		return fixed(b, 4)
	case '^':
		return fixed(b, 5)
	case ':':
		return 2
	case 'b', 'f', 'T', '/', 'j', 'E':
		return fixed(b, 3)
	}
	return d.other(b)
}

// image records an image printed by GS v 0 (src 'v') or GS ( L / GS 8 L
// ('L'). Both end the text line first.
func (d *Decoder) image(im Image, src byte) {
	im.Align = d.align
	d.cur.Images = append(d.cur.Images, Image{Width: im.Width, Height: im.Height})
	// A tall image comes as bands of rows (Render sends at most 255 a
	// command): a band of the same command right under a band of the same
	// width continues it.
	if n := len(d.cur.Items); n > 0 && im.Bits != nil && d.raster == n-1 && d.rasterSrc == src {
		if last := &d.cur.Items[n-1].Image; last.Bits != nil &&
			last.Width == im.Width && last.Stride == im.Stride && last.Align == im.Align {
			last.Bits = append(last.Bits, im.Bits...)
			last.Height += im.Height
			return
		}
	}
	d.cur.Items = append(d.cur.Items, Item{Kind: KindImage, Image: im})
	d.raster, d.rasterSrc = len(d.cur.Items)-1, src
}

// barcode prints GS k m: m 0..6 data NUL-terminated, m 65..79 with a length.
func (d *Decoder) barcode(b []byte) int {
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
		s = Code128Text(s)
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	d.flushLine()
	d.cur.Barcodes = append(d.cur.Barcodes, s)
	d.cur.Items = append(d.cur.Items, Item{Kind: KindBarcode, Barcode: Barcode{
		Sym: m, Payload: append([]byte(nil), data...), Text: s,
		Module: d.bcModule, Height: d.bcHeight, HRI: d.bcHRI, Align: d.align,
	}})
	return n
}

// symbolTypes names the 2D symbols of GS ( k by cn - 48, in Epson's
// numbering (ESC/POS GS ( k: cn 48 PDF417, 49 QR Code, 50 MaxiCode, 53
// Aztec Code, 54 DataMatrix). cn 51 (2D GS1 DataBar) and 52 (Composite)
// store and print in other ways and are not read.
var symbolTypes = [...]string{0: "PDF417", 1: "QR", 2: "MaxiCode", 5: "Aztec", 6: "DataMatrix"}

// symbol handles GS ( k for 2D symbols: store data (fn 80, "cn P 0 d..."),
// then print it (fn 81) as often as asked; for QR codes also the module
// size (fn 67) and the model (fn 65). Each symbol type has its own store.
func (d *Decoder) symbol(body []byte) {
	if len(body) < 2 || body[0] < 48 || int(body[0]-48) >= len(symbolTypes) || symbolTypes[body[0]-48] == "" {
		return
	}
	cn := int(body[0] - 48)
	qr := cn == 1
	switch body[1] {
	case 65:
		if qr && len(body) >= 3 && body[2] >= 49 && body[2] <= 51 {
			d.qrModel = int(body[2] - 48)
		}
	case 67:
		if qr && len(body) >= 3 {
			d.qrModule = int(body[2])
		}
	case 80:
		if len(body) >= 3 {
			d.stored[cn] = strings.ToValidUTF8(string(body[3:]), "\uFFFD")
			if qr {
				d.qr = d.stored[cn]
			}
		}
	case 81:
		d.flushLine()
		if qr {
			d.cur.QR = append(d.cur.QR, d.qr)
			d.cur.Items = append(d.cur.Items, Item{Kind: KindQR, QR: QR{Data: d.qr, Module: d.qrModule, Align: d.align, Model: d.qrModel}})
			return
		}
		d.cur.Items = append(d.cur.Items, Item{Kind: KindSymbol, Symbol: Symbol{Type: symbolTypes[cn], Data: d.stored[cn], Align: d.align}})
	}
}

// graphics handles GS ( L / GS 8 L: a raster store (fn 112) keeps the
// image in the print buffer, with its dots when they are monochrome; print
// (fn 50, or 2) prints it as one image of the stored size, and clears it.
func (d *Decoder) graphics(body []byte) {
	switch {
	case len(body) >= 10 && body[0] == 0x30 && body[1] == 112:
		w, h := le16(body[6], body[7]), le16(body[8], body[9])
		im := Image{Width: w, Height: h}
		stride := (w + 7) / 8
		if body[5] == 49 && len(body)-10 >= stride*h {
			im.Stride = stride
			im.Bits = append([]byte(nil), body[10:10+stride*h]...)
		}
		d.graphic = &im
	case len(body) == 2 && body[0] == 0x30 && (body[1] == 50 || body[1] == 2):
		if d.graphic != nil {
			d.flushLine()
			d.image(*d.graphic, 'L')
			d.graphic = nil
		}
	}
}

// bitImage prints ESC * m nL nH d...: a band of nL + nH*256 columns of 8
// dots (m 0, 1) or 24 dots (m 32, 33), a byte for each 8 dots of a column,
// top dot in the MSB. It prints inside the text line; the LF or ESC J under
// a band moves to the next band, and a next band of the same width
// continues the same image (software sends a logo as bands of 24 rows).
func (d *Decoder) bitImage(b []byte) int {
	if len(b) < 5 {
		return 0
	}
	m := b[2]
	k := le16(b[3], b[4])
	h := 8
	if m == 32 || m == 33 {
		h = 24
	}
	n := 5 + k*h/8
	if len(b) < n {
		return 0
	}
	// On paper, single density (m 0, 32) prints each column two dots wide
	// and the 8-dot modes (m 0, 1) each dot three dots tall (about 67 dpi
	// on a 203 dpi head): the image is drawn at its paper size.
	sx, sy := 1, 1
	if m == 0 || m == 32 {
		sx = 2
	}
	if m == 0 || m == 1 {
		sy = 3
	}
	per := h / 8
	w, ph := k*sx, h*sy
	stride := (w + 7) / 8
	bits := make([]byte, stride*ph)
	for x := range k {
		for y := range h {
			if b[5+x*per+y/8]&(0x80>>(y%8)) == 0 {
				continue
			}
			for dy := range sy {
				row := (y*sy + dy) * stride
				for dx := range sx {
					px := x*sx + dx
					bits[row+px/8] |= 0x80 >> (px % 8)
				}
			}
		}
	}
	k, h = w, ph
	d.cur.Images = append(d.cur.Images, Image{Width: k, Height: h})
	if last := len(d.cur.Items) - 1; d.band >= 0 && d.band == last && d.bandFed && d.lineLen == 0 {
		if im := &d.cur.Items[last].Image; im.Width == k {
			im.Bits = append(im.Bits, bits...)
			im.Height += h
			d.bandFed = false
			return n
		}
	}
	d.cur.Items = append(d.cur.Items, Item{Kind: KindImage, Image: Image{Width: k, Height: h, Stride: stride, Bits: bits, Align: d.align}})
	d.band, d.bandFed = len(d.cur.Items)-1, false
	return n
}

// bandDone reports whether the last item is a band of a bit image the
// paper has not yet been fed past, and notes that it now is.
func (d *Decoder) bandDone() bool {
	if d.band < 0 || d.band != len(d.cur.Items)-1 || d.bandFed {
		return false
	}
	d.bandFed = true
	return true
}

// dle skips real-time commands: they were acted on when received.
func (d *Decoder) dle(b []byte) int {
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
			k := DrawerKick{Pin: pin, OnMS: int(b[4]) * 100, OffMS: int(b[4]) * 100}
			d.cur.Drawer = append(d.cur.Drawer, k)
			d.cur.Items = append(d.cur.Items, Item{Kind: KindDrawer, Drawer: k})
			return 5
		}
		return d.other(b)
	}
	return 1
}

// Code128Text is what a CODE128 symbol encodes, as a scanner would read it:
// the code set switches in GS k data ("{A", "{B", "{C", with "{{" a brace)
// are not characters, and in code set C each byte is a pair of digits.
func Code128Text(s string) string {
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
// b does not hold all of it yet (the decoder waits for more bytes).
func fixed(b []byte, n int) int {
	if len(b) < n {
		return 0
	}
	return n
}
