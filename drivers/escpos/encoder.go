package escpos

import (
	"errors"
	"fmt"
)

// Leading bytes of ESC/POS commands. Prefixed so they cannot clash with names
// other files of this package might want.
const (
	cDLE = 0x10
	cESC = 0x1B
	cFS  = 0x1C
	cGS  = 0x1D
)

// Encoder builds an ESC/POS byte stream by appending commands. Methods return
// the Encoder so calls chain. A method given an invalid argument appends
// nothing and records the error; from then on every method is a no-op, so
// Bytes is always a well-formed prefix and Err says what went wrong. This
// keeps call sites short without ever emitting a half-valid command.
// The zero value is ready to use.
type Encoder struct {
	buf []byte
	err error
}

// Bytes returns the commands appended so far (up to the first error). The
// slice aliases the Encoder's buffer.
func (e *Encoder) Bytes() []byte { return e.buf }

// Err returns the first invalid argument met, or nil.
func (e *Encoder) Err() error { return e.err }

// Len returns the number of bytes appended so far.
func (e *Encoder) Len() int { return len(e.buf) }

// Reset empties the buffer and clears the error so the Encoder can be reused.
func (e *Encoder) Reset() { e.buf, e.err = e.buf[:0], nil }

func (e *Encoder) put(b ...byte) *Encoder {
	if e.err == nil {
		e.buf = append(e.buf, b...)
	}
	return e
}

func (e *Encoder) fail(err error) *Encoder {
	if e.err == nil {
		e.err = err
	}
	return e
}

// Raw appends b unchanged. It exists for callers that already hold encoded
// text or commands; it performs no sanitising, so never pass it document text.
func (e *Encoder) Raw(b []byte) *Encoder { return e.put(b...) }

// LF appends a line feed, which prints the line buffer and advances one line.
func (e *Encoder) LF() *Encoder { return e.put('\n') }

// Init appends ESC @, which clears the print buffer and resets every mode to
// the power-on defaults (it also turns automatic status back off).
func (e *Encoder) Init() *Encoder { return e.put(cESC, '@') }

// CJKOn appends FS &: Chinese clones then read text as GB18030 double-byte
// characters.
func (e *Encoder) CJKOn() *Encoder { return e.put(cFS, '&') }

// KanjiShiftJIS appends FS C 1: a Japanese printer then reads Kanji mode
// text as Shift JIS rather than JIS (FS C 0).
func (e *Encoder) KanjiShiftJIS() *Encoder { return e.put(cFS, 'C', 1) }

// CJKOff appends FS .: Chinese clones then read text as single bytes of the
// selected code page. Clones power on in CJK mode, so send it before any
// single-byte text.
func (e *Encoder) CJKOff() *Encoder { return e.put(cFS, '.') }

// CodePage appends ESC t n, selecting the single-byte character table. The
// numbering is the printer's, not a standard: take it from the Profile.
func (e *Encoder) CodePage(n int) *Encoder {
	if n < 0 || n > 255 {
		return e.fail(fmt.Errorf("code page %d out of range 0..255", n))
	}
	return e.put(cESC, 't', byte(n))
}

// PrintMode is the bit set of ESC !.
type PrintMode byte

// Bits of ESC !.
const (
	ModeFontB        PrintMode = 1 << 0
	ModeBold         PrintMode = 1 << 3
	ModeDoubleHeight PrintMode = 1 << 4
	ModeDoubleWidth  PrintMode = 1 << 5
	ModeUnderline    PrintMode = 1 << 7
)

// PrintMode appends ESC ! n, setting font, bold, double size and underline at
// once (and clearing whichever bits are not set).
func (e *Encoder) PrintMode(m PrintMode) *Encoder { return e.put(cESC, '!', byte(m)) }

// Size appends GS ! n: character magnification, w and h in 1..8.
func (e *Encoder) Size(w, h int) *Encoder {
	if w < 1 || w > 8 || h < 1 || h > 8 {
		return e.fail(fmt.Errorf("character size %dx%d out of range 1..8", w, h))
	}
	return e.put(cGS, '!', byte((w-1)<<4|(h-1)))
}

// Bold appends ESC E 1 or ESC E 0.
func (e *Encoder) Bold(on bool) *Encoder { return e.put(cESC, 'E', boolByte(on)) }

// Underline appends ESC - 1 (one-dot underline) or ESC - 0.
func (e *Encoder) Underline(on bool) *Encoder { return e.put(cESC, '-', boolByte(on)) }

// CJKUnderline appends FS - 1 or FS - 0, the underline of double-byte
// characters: ESC - only underlines single-byte ones on Chinese printers.
func (e *Encoder) CJKUnderline(on bool) *Encoder { return e.put(cFS, '-', boolByte(on)) }

// Reverse appends GS B 1 or GS B 0: white text on black, used for banners
// that must stand out from a ticket's own bold headings.
func (e *Encoder) Reverse(on bool) *Encoder { return e.put(cGS, 'B', boolByte(on)) }

// Align says where a line sits across the paper.
type Align byte

// Alignments, numbered as ESC a expects.
const (
	AlignLeft   Align = 0
	AlignCenter Align = 1
	AlignRight  Align = 2
)

// String returns the document spelling: left, center or right.
func (a Align) String() string {
	switch a {
	case AlignLeft:
		return "left"
	case AlignCenter:
		return "center"
	case AlignRight:
		return "right"
	}
	return fmt.Sprintf("Align(%d)", byte(a))
}

// Align appends ESC a n. It affects text, barcodes and QR codes that start
// after it at the beginning of a line.
func (e *Encoder) Align(a Align) *Encoder {
	if a > AlignRight {
		return e.fail(fmt.Errorf("alignment %d out of range 0..2", a))
	}
	return e.put(cESC, 'a', byte(a))
}

// Feed appends ESC d n: print the buffer and feed n lines (0..255).
func (e *Encoder) Feed(n int) *Encoder {
	if n < 0 || n > 255 {
		return e.fail(fmt.Errorf("feed %d lines out of range 0..255", n))
	}
	return e.put(cESC, 'd', byte(n))
}

// CutKind is the kind of paper cut.
type CutKind byte

// Cut kinds. A partial cut leaves a tab of paper so the ticket does not fall.
const (
	CutFull    CutKind = 0
	CutPartial CutKind = 1
)

// String returns the document spelling: full or partial.
func (c CutKind) String() string {
	switch c {
	case CutFull:
		return "full"
	case CutPartial:
		return "partial"
	}
	return fmt.Sprintf("CutKind(%d)", byte(c))
}

// Cut appends GS V 0 (full) or GS V 1 (partial): cut where the paper is now,
// which is through whatever was printed last unless the paper was fed first.
func (e *Encoder) Cut(k CutKind) *Encoder {
	if k > CutPartial {
		return e.fail(fmt.Errorf("unknown cut kind %d", k))
	}
	return e.put(cGS, 'V', byte(k))
}

// FeedCut appends GS V 65 n (full) or GS V 66 n (partial): feed the paper to
// the cutter plus n motion units, then cut. This is the cut that does not
// slice through the last printed lines.
func (e *Encoder) FeedCut(k CutKind, n int) *Encoder {
	if k > CutPartial {
		return e.fail(fmt.Errorf("unknown cut kind %d", k))
	}
	if n < 0 || n > 255 {
		return e.fail(fmt.Errorf("cut feed %d out of range 0..255", n))
	}
	return e.put(cGS, 'V', 0x41+byte(k), byte(n))
}

// DrawerPin selects the connector pin ESC p pulses.
type DrawerPin byte

// Drawer pins.
const (
	DrawerPin2 DrawerPin = 0
	DrawerPin5 DrawerPin = 1
)

// Drawer appends ESC p m t1 t2: pulse pin for on×2 ms, then off×2 ms. It is
// the only way this package opens a cash drawer; document text can never
// produce it.
func (e *Encoder) Drawer(pin DrawerPin, on, off byte) *Encoder {
	if pin > DrawerPin5 {
		return e.fail(fmt.Errorf("drawer pin selector %d out of range 0..1", pin))
	}
	return e.put(cESC, 'p', byte(pin), on, off)
}

// OpenDrawer appends the common kick pulse ESC p 0 25 120 (50 ms on, 240 ms
// off on pin 2), which opens most drawers.
func (e *Encoder) OpenDrawer() *Encoder { return e.Drawer(DrawerPin2, 25, 120) }

// BeepEpson appends ESC ( A fn48: sound the buzzer times (1..63) times with
// pattern 1 and a one-second interval. Printers without a buzzer ignore it.
func (e *Encoder) BeepEpson(times int) *Encoder {
	if times < 1 || times > 63 {
		return e.fail(fmt.Errorf("beep count %d out of range 1..63", times))
	}
	return e.put(cESC, '(', 'A', 4, 0, 0x30, 0x31, byte(times), 10)
}

// BeepClone appends ESC B n t, the buzzer command of Chinese clones: n beeps
// (1..9) of t×50 ms (1..9).
func (e *Encoder) BeepClone(times, duration int) *Encoder {
	if times < 1 || times > 9 {
		return e.fail(fmt.Errorf("beep count %d out of range 1..9", times))
	}
	if duration < 1 || duration > 9 {
		return e.fail(fmt.Errorf("beep duration %d out of range 1..9", duration))
	}
	return e.put(cESC, 'B', byte(times), byte(duration))
}

// HRIPosition says where a barcode's human-readable text goes.
type HRIPosition byte

// HRI positions for GS H.
const (
	HRINone  HRIPosition = 0
	HRIAbove HRIPosition = 1
	HRIBelow HRIPosition = 2
	HRIBoth  HRIPosition = 3
)

// BarcodeHeight appends GS h n: bar height in dots, 1..255.
func (e *Encoder) BarcodeHeight(dots int) *Encoder {
	if dots < 1 || dots > 255 {
		return e.fail(fmt.Errorf("barcode height %d out of range 1..255", dots))
	}
	return e.put(cGS, 'h', byte(dots))
}

// BarcodeWidth appends GS w n: module width, 2..6.
func (e *Encoder) BarcodeWidth(n int) *Encoder {
	if n < 2 || n > 6 {
		return e.fail(fmt.Errorf("barcode module width %d out of range 2..6", n))
	}
	return e.put(cGS, 'w', byte(n))
}

// BarcodeHRI appends GS H n.
func (e *Encoder) BarcodeHRI(p HRIPosition) *Encoder {
	if p > HRIBoth {
		return e.fail(fmt.Errorf("barcode text position %d out of range 0..3", p))
	}
	return e.put(cGS, 'H', byte(p))
}

// Barcode appends GS k m n data (function B) for sym, after checking data
// against the symbology's character set and length. CODE128 is sent in code
// set B ("{B" prefix, "{" doubled).
func (e *Encoder) Barcode(sym Symbology, data string) *Encoder {
	if e.err != nil {
		return e
	}
	payload, err := barcodePayload(sym, data)
	if err != nil {
		return e.fail(err)
	}
	e.put(cGS, 'k', byte(sym), byte(len(payload)))
	return e.put(payload...)
}

// QRLevel is a QR code's error correction level.
type QRLevel byte

// QR error correction levels, as GS ( k fn69 numbers them.
const (
	QRLevelL QRLevel = 0x30
	QRLevelM QRLevel = 0x31
	QRLevelQ QRLevel = 0x32
	QRLevelH QRLevel = 0x33
)

// qrCapacity is the most bytes a version-40 QR code holds in byte mode at
// each level; more would make the printer print nothing.
var qrCapacity = map[QRLevel]int{QRLevelL: 2953, QRLevelM: 2331, QRLevelQ: 1663, QRLevelH: 1273}

// QRModel appends GS ( k fn65: select QR model 2.
func (e *Encoder) QRModel() *Encoder {
	return e.put(cGS, '(', 'k', 4, 0, 0x31, 0x41, 0x32, 0x00)
}

// QRSize appends GS ( k fn67: module size in dots, 1..16.
func (e *Encoder) QRSize(n int) *Encoder {
	if n < 1 || n > 16 {
		return e.fail(fmt.Errorf("qr size %d out of range 1..16", n))
	}
	return e.put(cGS, '(', 'k', 3, 0, 0x31, 0x43, byte(n))
}

// QRErrorLevel appends GS ( k fn69.
func (e *Encoder) QRErrorLevel(l QRLevel) *Encoder {
	if l < QRLevelL || l > QRLevelH {
		return e.fail(fmt.Errorf("qr error level %#x out of range 0x30..0x33", byte(l)))
	}
	return e.put(cGS, '(', 'k', 3, 0, 0x31, 0x45, byte(l))
}

// QRStore appends GS ( k fn80: store data in the symbol buffer. The
// capacity check uses level L; QR checks the level actually selected.
func (e *Encoder) QRStore(data []byte) *Encoder {
	return e.qrStore(data, QRLevelL)
}

func (e *Encoder) qrStore(data []byte, l QRLevel) *Encoder {
	if len(data) == 0 {
		return e.fail(errors.New("qr data is empty"))
	}
	if max := qrCapacity[l]; len(data) > max {
		return e.fail(fmt.Errorf("qr data is %d bytes, more than the %d a QR code holds", len(data), max))
	}
	n := len(data) + 3
	if err := qrLengthSafe(n); err != nil {
		return e.fail(err)
	}
	e.put(cGS, '(', 'k', byte(n), byte(n>>8), 0x31, 0x50, 0x30)
	return e.put(data...)
}

// qrLengthSafe rejects the store lengths whose header bytes pL pH would read
// as DLE EOT or DLE ENQ, real-time commands a printer obeys even inside
// command data.
func qrLengthSafe(n int) error {
	if byte(n) == cDLE && (n>>8 == 0x04 || n>>8 == 0x05 || n>>8 == 0x14) {
		return fmt.Errorf("qr data of exactly %d bytes cannot be sent safely (its length header reads as a real-time command); add or remove a character", n-3)
	}
	return nil
}

// QRPrint appends GS ( k fn81: print the stored symbol.
func (e *Encoder) QRPrint() *Encoder {
	return e.put(cGS, '(', 'k', 3, 0, 0x31, 0x51, 0x30)
}

// QR appends the whole QR sequence: model 2, module size, error level, store
// data, print. Nothing is appended unless every argument is valid.
func (e *Encoder) QR(data []byte, size int, level QRLevel) *Encoder {
	if e.err != nil {
		return e
	}
	var q Encoder
	q.QRModel().QRSize(size).QRErrorLevel(level).qrStore(data, level).QRPrint()
	if q.err != nil {
		return e.fail(q.err)
	}
	return e.put(q.buf...)
}

// Raster appends GS v 0 0 xL xH yL yH data: a 1-bit image widthBytes bytes
// (8 dots each) wide and height dot rows high, MSB the leftmost dot, 1 black.
// The data must hold exactly widthBytes×height bytes.
func (e *Encoder) Raster(widthBytes, height int, data []byte) *Encoder {
	if widthBytes < 1 || widthBytes > 0xFFFF {
		return e.fail(fmt.Errorf("raster width %d bytes out of range 1..65535", widthBytes))
	}
	if height < 1 || height > 0xFFFF {
		return e.fail(fmt.Errorf("raster height %d rows out of range 1..65535", height))
	}
	if len(data) != widthBytes*height {
		return e.fail(fmt.Errorf("raster data is %d bytes, want %d×%d", len(data), widthBytes, height))
	}
	e.put(cGS, 'v', '0', 0, byte(widthBytes), byte(widthBytes>>8), byte(height), byte(height>>8))
	return e.put(data...)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// Status queries. They are plain byte builders rather than Encoder methods
// because they are sent on their own by the session, outside any ticket.

// StatusQuery selects which status byte DLE EOT asks for.
type StatusQuery byte

// DLE EOT n selectors (docs/ESCPOS.md §1).
const (
	QueryPrinter StatusQuery = 1 // online/offline, drawer pin, feed button
	QueryOffline StatusQuery = 2 // cover open, paper end stop, error
	QueryError   StatusQuery = 3 // autocutter, unrecoverable, head hot
	QueryPaper   StatusQuery = 4 // roll near end, paper end
)

// RealTimeStatus returns DLE EOT n. The printer answers one byte at once,
// even while offline or in the middle of other data.
func RealTimeStatus(n StatusQuery) []byte { return []byte{cDLE, 0x04, byte(n)} }

// TransmitQuery selects what GS r reports.
type TransmitQuery byte

// GS r n selectors.
const (
	TransmitPaper  TransmitQuery = 1
	TransmitDrawer TransmitQuery = 2
)

// TransmitStatus returns GS r n. It is processed in order, after everything
// sent before it, and not at all while the printer is offline: an answer
// proves the job before it was consumed.
func TransmitStatus(n TransmitQuery) []byte { return []byte{cGS, 'r', byte(n)} }

// AutoStatusBack returns GS a n, enabling automatic status back for the bits
// in n (0x0F enables all four). ESC @ turns it off again.
func AutoStatusBack(n byte) []byte { return []byte{cGS, 'a', n} }

// PrinterInfo selects what GS I reports.
type PrinterInfo byte

// GS I n selectors; each answer is 5F, text, 00.
const (
	InfoFirmware PrinterInfo = 65
	InfoMaker    PrinterInfo = 66
	InfoModel    PrinterInfo = 67
	InfoSerial   PrinterInfo = 68
	InfoFont     PrinterInfo = 69
)

// PrinterID returns GS I n.
func PrinterID(n PrinterInfo) []byte { return []byte{cGS, 'I', byte(n)} }

// ProcessID returns GS ( H fn48 with the 4-byte id. The printer answers
// 37 22 id 00 only after everything before it has been printed. Each id byte
// must be in 0x20..0x7E.
func ProcessID(id [4]byte) ([]byte, error) {
	for i, b := range id {
		if b < 0x20 || b > 0x7E {
			return nil, fmt.Errorf("process id byte %d is %#02x, want 0x20..0x7e", i, b)
		}
	}
	return []byte{cGS, '(', 'H', 6, 0, 0x30, 0x30, id[0], id[1], id[2], id[3]}, nil
}
