package escpos

import (
	"fmt"
	"strings"
)

// RenderOptions are the banners the agent puts above a ticket. A banner is a
// centred line in bold, double size and reverse (white on black) so that it
// cannot be mistaken for the ticket's own headings.
type RenderOptions struct {
	// PossibleDuplicate marks a ticket printed again because nobody knows
	// whether the first attempt came out: "POSSIBLE DUPLICATE", with
	// "可能重复" on a second row for Chinese profiles.
	PossibleDuplicate bool
	// Reprint marks a manager's reprint: "REPRINT" (and "补打" for Chinese
	// profiles).
	Reprint bool
	// FailoverFrom and FailoverTo, when both set, mark a ticket moved to a
	// backup printer: "FAILOVER kitchen → bar".
	FailoverFrom, FailoverTo string
	// Incomplete marks a raw job whose connection ended mid-stream:
	// "INCOMPLETE JOB" (and "接收不完整" for Chinese profiles) above what
	// arrived.
	Incomplete bool
}

// Layout constants shared by Render and Preview.
const (
	barcodeHeight = 80 // dots, 10 mm: scans reliably, does not waste paper
	maxModule     = 3  // widest barcode module used, in dots
	cutFeed       = 3  // motion units fed past the cutting position
	tearFeed      = 4  // lines fed instead of a cut on printers without a cutter
	beepLength    = 3  // ESC B duration, ×50 ms
)

type blockKind int

const (
	blockText blockKind = iota
	blockQR
	blockBarcode
	blockImage
	blockFeed
	blockBeep
	blockDrawer
	blockCut
)

// block is one laid-out piece of the ticket. Render turns blocks into bytes
// and Preview into text; both read the same blocks, so the preview cannot
// disagree with the paper about wrapping, alignment or scaling.
type block struct {
	kind blockKind
	line int // 1-based document line, 0 for banners and the final cut

	// text
	size           TextSize
	bold, ul, rev  bool
	eff            int // columns available at this size
	rows           []textRow
	qrData         []byte
	qrSize         int
	sym            Symbology
	barcode        string
	module         int
	img            *raster
	n              int // feed lines, beep times
	cut            CutKind
	autoCut, noCut bool
}

// textRow is one printed row, in columns of the row's character size:
// lead spaces, left text, gap spaces, right text, trail spaces (the trail is
// only used by reversed banners, whose padding is printed black).
type textRow struct {
	lead  int
	left  string
	gap   int
	right string
	trail int
}

// layout is a document laid out for one profile.
type layout struct {
	p      Profile
	c      *codec
	blocks []block
}

// buildLayout lays doc out for p. finalCut adds the closing cut when the
// document does not end with one.
func buildLayout(doc *Document, p Profile, opts RenderOptions, finalCut bool) (*layout, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if doc == nil {
		doc = &Document{}
	}
	if err := doc.validateLines(); err != nil {
		return nil, err
	}
	l := &layout{p: p, c: newCodec(p)}
	for _, b := range bannerTexts(p, opts) {
		l.blocks = append(l.blocks, l.text(0, TextLine{Text: b, Align: AlignCenter, Size: TextSize{2, 2}, Bold: true}, true))
	}
	for i, line := range doc.Lines {
		n := i + 1
		var b block
		switch line := line.(type) {
		case TextLine:
			b = l.text(n, line, false)
		case RuleLine:
			b = l.rule(n, line)
		case QRLine:
			var err error
			if b, err = l.qr(n, line); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
		case BarcodeLine:
			var err error
			if b, err = l.barcodeBlock(n, line); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
		case ImageLine:
			img, err := decodeImage(line.PNG)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			r, err := rasterize(img, p.Dots)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			b = block{kind: blockImage, line: n, img: r}
		case FeedLine:
			b = block{kind: blockFeed, line: n, n: line.Lines}
		case BeepLine:
			b = block{kind: blockBeep, line: n, n: line.Times}
		case DrawerLine:
			b = block{kind: blockDrawer, line: n}
		case CutLine:
			b = l.cutBlock(n, line.Kind, false)
		}
		l.blocks = append(l.blocks, b)
	}
	// A kitchen ticket left hanging in the printer gets torn crooked or
	// printed over by the next one: finish with a partial cut unless the
	// document's last line is its own cut.
	if n := len(doc.Lines); finalCut && (n == 0 || !isCut(doc.Lines[n-1])) {
		l.blocks = append(l.blocks, l.cutBlock(0, CutPartial, true))
	}
	return l, nil
}

func isCut(l Line) bool {
	_, ok := l.(CutLine)
	return ok
}

func bannerTexts(p Profile, o RenderOptions) []string {
	var out []string
	db, local := doubleByte[p.Encoding]
	add := func(en string, i int) {
		if local {
			en += "\n" + db.banners[i]
		}
		out = append(out, en)
	}
	if o.PossibleDuplicate {
		add("POSSIBLE DUPLICATE", 0)
	}
	if o.Reprint {
		add("REPRINT", 1)
	}
	if o.FailoverFrom != "" && o.FailoverTo != "" {
		out = append(out, "FAILOVER "+o.FailoverFrom+" → "+o.FailoverTo)
	}
	if o.Incomplete {
		add("INCOMPLETE JOB", 2)
	}
	return out
}

// RenderIncompleteEnd is what follows the bytes of an incomplete raw job
// (RenderOptions.Incomplete): a reset, so that a mode the cut-off job left
// on does not carry over, a line saying the job ends here, and a cut, so the
// next ticket does not print onto the torn one.
func RenderIncompleteEnd(p Profile) ([]byte, error) {
	doc := &Document{Lines: []Line{
		FeedLine{Lines: 1},
		TextLine{Text: "--- END OF INCOMPLETE JOB ---", Align: AlignCenter},
		CutLine{Kind: CutPartial},
	}}
	b, err := Render(doc, p, RenderOptions{})
	if err != nil {
		return nil, err
	}
	return append(new(Encoder).Init().Bytes(), b...), nil
}

func (l *layout) text(n int, t TextLine, banner bool) block {
	size := t.Size.norm()
	eff := max(1, l.p.Columns/size.W)
	c := l.c
	left := c.printable(cleanText(t.Text))
	right := strings.Trim(strings.ReplaceAll(c.printable(cleanText(t.Right)), "\n", " "), " ")
	b := block{kind: blockText, line: n, size: size, bold: t.Bold, ul: t.Underline, rev: banner, eff: eff}
	place := func(s string, a Align) textRow {
		w := c.strWidth(s)
		r := textRow{left: s}
		switch a {
		case AlignCenter:
			r.lead = max(0, (eff-w)/2)
		case AlignRight:
			r.lead = max(0, eff-w)
		}
		if banner {
			r.trail = max(0, eff-w-r.lead)
		}
		return r
	}
	if right == "" {
		for _, s := range wrap(left, eff, c.runeWidth) {
			b.rows = append(b.rows, place(s, t.Align))
		}
		return b
	}
	rw := c.strWidth(right)
	if avail := eff - rw - 1; rw <= eff/2 && avail >= 1 {
		for i, s := range wrap(left, avail, c.runeWidth) {
			if i == 0 {
				b.rows = append(b.rows, textRow{left: s, gap: max(1, eff-c.strWidth(s)-rw), right: right})
				continue
			}
			b.rows = append(b.rows, textRow{left: s})
		}
		return b
	}
	// The right part is too wide to share a row: left text first, then the
	// right part right-aligned below it.
	if left != "" {
		for _, s := range wrap(left, eff, c.runeWidth) {
			b.rows = append(b.rows, place(s, AlignLeft))
		}
	}
	for _, s := range wrap(right, eff, c.runeWidth) {
		b.rows = append(b.rows, place(s, AlignRight))
	}
	return b
}

func (l *layout) rule(n int, r RuleLine) block {
	unit := strings.ReplaceAll(l.c.printable(cleanText(r.Char)), "\n", "")
	w := max(1, l.c.strWidth(unit))
	row := strings.Repeat(unit, l.p.Columns/w)
	return block{kind: blockText, line: n, size: TextSize{1, 1}, eff: l.p.Columns, rows: []textRow{{left: row}}}
}

// qrCapacityM is how many bytes a QR code of each version (1..40) holds in
// byte mode at level M. The printer picks the version; this table predicts
// it so the module size can be reduced until the symbol fits the paper.
var qrCapacityM = [...]int{14, 26, 42, 62, 84, 106, 122, 152, 180, 213, 251, 287, 331, 362, 412,
	450, 504, 560, 624, 666, 711, 779, 857, 911, 997, 1059, 1125, 1190, 1264, 1370,
	1452, 1538, 1628, 1722, 1809, 1911, 1989, 2099, 2213, 2331}

// qrModules is the side of the QR symbol for n data bytes, in modules.
func qrModules(n int) int {
	for v, c := range qrCapacityM {
		if n <= c {
			return 17 + 4*(v+1)
		}
	}
	return 17 + 4*40
}

// qr lays out a QR code. Size is an upper bound: a symbol wider than the
// paper prints as nothing at all, so the module size shrinks to fit, which
// is what lets a ticket made for 80 mm fail over to a 58 mm printer.
func (l *layout) qr(n int, q QRLine) (block, error) {
	data := []byte(cleanQR(q.Data))
	size := q.Size
	if size == 0 {
		size = DefaultQRSize
	}
	fit := l.p.Dots / qrModules(len(data))
	if fit < 1 {
		return block{}, fmt.Errorf("qr data (%d bytes) makes a symbol too wide for %d-dot paper", len(data), l.p.Dots)
	}
	return block{kind: blockQR, line: n, qrData: data, qrSize: min(size, fit)}, nil
}

// barcodeBlock picks the widest module (up to maxModule dots) with which the
// barcode still fits the paper; printers print nothing for a barcode wider
// than the paper.
func (l *layout) barcodeBlock(n int, bc BarcodeLine) (block, error) {
	sym := bc.Type
	if sym == 0 {
		sym = CODE128
	}
	payload, err := barcodePayload(sym, bc.Data)
	if err != nil {
		return block{}, err
	}
	m := min(maxModule, l.p.Dots/barcodeModules(sym, payload))
	if m < 2 {
		return block{}, fmt.Errorf("%v barcode %q is too long for %d-dot paper", sym, bc.Data, l.p.Dots)
	}
	return block{kind: blockBarcode, line: n, sym: sym, barcode: bc.Data, module: m}, nil
}

// cutBlock maps a cut to what the profile's cutter can do.
func (l *layout) cutBlock(n int, k CutKind, auto bool) block {
	b := block{kind: blockCut, line: n, cut: k, autoCut: auto}
	switch l.p.Cutter {
	case CutterPartialOnly:
		b.cut = CutPartial
	case CutterNone:
		b.noCut = true
	}
	return b
}

// Render turns doc into the ESC/POS bytes for a printer of profile p:
// ESC @, the character mode (FS & for GB18030, else FS . and ESC t), the
// banners of opts, every line in order, and a final partial cut unless the
// document ends with a cut. A document that cannot be printed on this profile
// returns an error naming the line, e.g. "line 4: CODE128 barcode ... is too
// long for 384-dot paper"; the agent then fails the task with reason RENDER.
// An empty document renders the banners alone, then the cut.
func Render(doc *Document, p Profile, opts RenderOptions) ([]byte, error) {
	lay, err := buildLayout(doc, p, opts, true)
	if err != nil {
		return nil, err
	}
	return lay.encode()
}

// RenderBanner returns the banners of opts alone, for a task whose payload is
// raw ESC/POS: ESC @, the character mode, the banner rows, and a closing ESC @
// so that the payload after it starts from the printer's power-on state (a
// Chinese clone back in GB18030 mode). There is no cut. It returns nil when
// opts asks for no banner.
func RenderBanner(p Profile, opts RenderOptions) ([]byte, error) {
	if len(bannerTexts(p, opts)) == 0 {
		return nil, p.Validate()
	}
	lay, err := buildLayout(nil, p, opts, false)
	if err != nil {
		return nil, err
	}
	b, err := lay.encode()
	if err != nil {
		return nil, err
	}
	return new(Encoder).Raw(b).Init().Bytes(), nil
}

func (lay *layout) encode() ([]byte, error) {
	p := lay.p
	w := &writer{c: lay.c, cjk: p.CJK()}
	e := &w.e
	e.Init()
	if p.CJK() {
		e.CJKOn()
		if p.Encoding == EncodingShiftJIS {
			// Japanese firmware reads Kanji as JIS or Shift JIS by a
			// memory switch; say which.
			e.KanjiShiftJIS()
		}
	} else {
		e.CJKOff()
		if p.CodePage >= 0 {
			e.CodePage(p.CodePage)
		}
	}
	w.cur = defaultStyle
	for _, b := range lay.blocks {
		w.block(b, p)
		if err := e.Err(); err != nil {
			if b.line > 0 {
				return nil, fmt.Errorf("line %d: %w", b.line, err)
			}
			return nil, fmt.Errorf("render: %w", err)
		}
	}
	return e.Bytes(), nil
}

// style is the printer state Render tracks so it sends a mode command only
// when the mode changes.
type style struct {
	size     TextSize
	bold, ul bool
	rev      bool
	align    Align
}

// defaultStyle is the state after ESC @.
var defaultStyle = style{size: TextSize{1, 1}}

type writer struct {
	e   Encoder
	c   *codec
	cjk bool
	cur style
	tmp []byte
}

func (w *writer) set(s style) {
	if s.size != w.cur.size {
		w.e.Size(s.size.W, s.size.H)
	}
	if s.bold != w.cur.bold {
		w.e.Bold(s.bold)
	}
	if s.rev != w.cur.rev {
		w.e.Reverse(s.rev)
	}
	if s.align != w.cur.align {
		w.e.Align(s.align)
	}
	w.underline(s.ul)
	w.cur = s
}

func (w *writer) underline(on bool) {
	if on == w.cur.ul {
		return
	}
	w.e.Underline(on)
	if w.cjk {
		w.e.CJKUnderline(on)
	}
	w.cur.ul = on
}

func (w *writer) spaces(n int) {
	for range n {
		w.e.Raw([]byte{' '})
	}
}

func (w *writer) text(s string) {
	w.tmp = w.c.encode(w.tmp[:0], s)
	w.e.Raw(w.tmp)
}

func (w *writer) block(b block, p Profile) {
	e := &w.e
	switch b.kind {
	case blockText:
		w.set(style{size: b.size, bold: b.bold, rev: b.rev})
		for _, r := range b.rows {
			// Padding is never underlined: only the words are.
			w.underline(false)
			w.spaces(r.lead)
			if r.left != "" {
				w.underline(b.ul)
				w.text(r.left)
			}
			if r.right != "" {
				w.underline(false)
				w.spaces(r.gap)
				w.underline(b.ul)
				w.text(r.right)
			}
			w.underline(false)
			w.spaces(r.trail)
			e.LF()
		}
	case blockQR:
		w.set(style{size: TextSize{1, 1}, align: AlignCenter})
		e.QR(b.qrData, b.qrSize, qrLevel)
	case blockBarcode:
		w.set(style{size: TextSize{1, 1}, align: AlignCenter})
		e.BarcodeHeight(barcodeHeight).BarcodeWidth(b.module).BarcodeHRI(HRIBelow).Barcode(b.sym, b.barcode)
	case blockImage:
		w.set(style{size: TextSize{1, 1}})
		b.img.encode(e)
	case blockFeed:
		e.Feed(b.n)
	case blockBeep:
		switch p.Beep {
		case BeepEpson:
			e.BeepEpson(b.n)
		case BeepClone:
			e.BeepClone(b.n, beepLength)
		}
	case blockDrawer:
		e.OpenDrawer()
	case blockCut:
		if b.noCut {
			e.Feed(tearFeed)
			return
		}
		e.FeedCut(b.cut, cutFeed)
	}
}
