// Package paper draws a printed ticket as an HTML fragment that looks like
// receipt paper: the manager page's preview of a task, from a document's
// layout (escpos.PreviewHTML) or from a decoded ESC/POS stream
// (escpos.PreviewStreamHTML). Both draw through the same Writer, so both
// previews use the same classes (see CSS).
//
// The fragment carries classes only, never style attributes, and images are
// data: URLs, so the page can keep a Content-Security-Policy without
// 'unsafe-inline' (img-src must allow data:).
package paper

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"html/template"
	"image"
	"image/color"
	"image/png"
	"strconv"
	"strings"

	qrcode "github.com/skip2/go-qrcode"
)

// Align is the position of a row or symbol on the paper, as ESC a numbers it.
type Align byte

// Alignments.
const (
	Left   Align = 0
	Center Align = 1
	Right  Align = 2
)

// Span is a run of text in one style.
type Span struct {
	Text                      string
	Bold, Underline, Inverted bool
}

// Row is one printed text row. W and H are the character magnification
// (0 means 1). Spaces are kept as printed.
type Row struct {
	Spans []Span
	W, H  int
	Align Align
}

// Barcode is a 1D barcode as the printer receives it.
type Barcode struct {
	Sym     byte   // GS k m, function B numbering (SymCODE128 ...)
	Payload []byte // the bytes after GS k m n
	Module  int    // narrow bar width in dots (GS w)
	Height  int    // bar height in dots (GS h)
	HRI     bool   // text printed under the bars (GS H 2 or 3)
	Align   Align
}

// Limits keep a preview of any stream small enough for a page.
const (
	// MaxRows is the most rows (text rows, blank rows, symbols, markers) a
	// fragment shows; the rest is counted in a closing "… N more rows".
	MaxRows = 2000
	// MaxPixels is the most image pixels (dots, margins included) drawn as
	// PNGs; images past it become markers, which bounds the fragment's size.
	MaxPixels = 4 << 20
	// MaxQR is the most distinct QR codes drawn: making one takes
	// milliseconds, and a small hostile payload can print thousands.
	MaxQR = 32
)

// Writer builds one paper fragment. The zero value is not usable: call New.
type Writer struct {
	cols, dots int
	rows       int
	dropped    int
	pixels     int
	qr         map[string]string // drawn QR elements by content and module
	sb         strings.Builder
}

// New starts a paper cols characters (font A, single width) and dots dots
// wide.
func New(cols, dots int) *Writer {
	w := &Writer{cols: max(1, cols), dots: max(8, dots)}
	fmt.Fprintf(&w.sb, `<div class="paper %s" data-columns="%d" data-dots="%d">`+"\n", WidthClass(cols), cols, dots)
	return w
}

// WidthClass is the paper-N class for a paper of cols columns: the
// narrowest class at least that wide, or paper-wide (as wide as the rows)
// beyond the widest.
func WidthClass(cols int) string {
	for _, n := range widths {
		if cols <= n {
			return "paper-" + strconv.Itoa(n)
		}
	}
	return "paper-wide"
}

// room reports whether n more rows fit under MaxRows, counting them as
// dropped when they do not.
func (w *Writer) room(n int) bool {
	if w.rows+n > MaxRows || w.dropped > 0 {
		w.dropped += n
		return false
	}
	w.rows += n
	return true
}

// Text adds a text row.
func (w *Writer) Text(r Row) {
	if !w.room(1) {
		return
	}
	cls := []string{"row"}
	if r.W > 1 || r.H > 1 {
		cls = append(cls, "w"+strconv.Itoa(clamp(r.W)), "h"+strconv.Itoa(clamp(r.H)))
	}
	switch r.Align {
	case Center:
		cls = append(cls, "al-c")
	case Right:
		cls = append(cls, "al-r")
	}
	w.sb.WriteString(`<div class="` + strings.Join(cls, " ") + `">`)
	for _, s := range r.Spans {
		writeSpan(&w.sb, s)
	}
	w.sb.WriteString("</div>\n")
}

func clamp(n int) int { return min(8, max(1, n)) }

func writeSpan(sb *strings.Builder, s Span) {
	if s.Text == "" {
		return
	}
	var cls []string
	if s.Bold {
		cls = append(cls, "b")
	}
	if s.Underline {
		cls = append(cls, "u")
	}
	if s.Inverted {
		cls = append(cls, "inv")
	}
	t := html.EscapeString(strings.ToValidUTF8(s.Text, "\uFFFD"))
	if len(cls) == 0 {
		sb.WriteString(t)
		return
	}
	sb.WriteString(`<span class="` + strings.Join(cls, " ") + `">` + t + "</span>")
}

// Blank adds n empty rows (a paper feed).
func (w *Writer) Blank(n int) {
	for range n {
		if !w.room(1) {
			continue
		}
		w.sb.WriteString(`<div class="row"></div>` + "\n")
	}
}

// Marker adds a small centred note for something that is not printed ink:
// a beep, a drawer kick, a symbol that cannot be drawn. kind becomes a
// class next to "mark" (beep, drawer, symbol, image).
func (w *Writer) Marker(kind, text string) {
	if !w.room(1) {
		return
	}
	w.sb.WriteString(`<div class="mark ` + html.EscapeString(kind) + `">` + html.EscapeString(strings.ToValidUTF8(text, "\uFFFD")) + "</div>\n")
}

// Cut adds the cut: a dashed line with ✂ and label (e.g. "partial cut").
func (w *Writer) Cut(label string) {
	if !w.room(1) {
		return
	}
	w.sb.WriteString(`<div class="cut" role="separator" aria-label="` + html.EscapeString(label) + `"><span>✂ ` + html.EscapeString(label) + "</span></div>\n")
}

// Note adds a remark about the preview itself (bytes not understood,
// rows left out), which is not on the paper.
func (w *Writer) Note(text string) {
	w.sb.WriteString(`<div class="note">` + html.EscapeString(strings.ToValidUTF8(text, "\uFFFD")) + "</div>\n")
}

// QR adds a QR code of data with module dots per module, as go-qrcode
// draws it at error correction level M (the level Render uses). A printer
// may pick another mask, so the picture scans to the same content without
// being the identical symbol. Data a QR code cannot hold becomes a marker.
func (w *Writer) QR(data []byte, module int, align Align) {
	key := fmt.Sprintf("%d %d %s", module, align, data)
	if el, ok := w.qr[key]; ok {
		if w.room(1) {
			w.sb.WriteString(el)
		}
		return
	}
	if len(w.qr) >= MaxQR {
		w.Marker("symbol", fmt.Sprintf("[QR: %s] (not drawn: the preview has too many QR codes)", data))
		return
	}
	q, err := qrcode.New(string(data), qrcode.Medium)
	if err != nil {
		w.Marker("symbol", fmt.Sprintf("[QR: %s] (%v)", data, err))
		return
	}
	q.DisableBorder = true
	bm := q.Bitmap()
	module = min(16, max(1, module))
	for len(bm)*module > w.dots && module > 1 {
		module--
	}
	side := len(bm) * module
	if !w.room(1) {
		return
	}
	img := w.canvas(side)
	left := offset(w.dots, side, align)
	for y, row := range bm {
		for x, black := range row {
			if black {
				fill(img, left+x*module, y*module, module, module)
			}
		}
	}
	start := w.sb.Len()
	w.image("sym qr", img, string(data))
	if w.qr == nil {
		w.qr = map[string]string{}
	}
	w.qr[key] = w.sb.String()[start:]
}

// BarcodeBars adds a barcode drawn from its modules, with the text a scanner
// reads under it when b.HRI is set. A barcode whose bars cannot be drawn
// becomes a marker with its content.
func (w *Writer) BarcodeBars(b Barcode) {
	name := SymbologyName(b.Sym)
	mods, text, err := Bars(b.Sym, b.Payload)
	if err != nil {
		w.Marker("symbol", fmt.Sprintf("[BARCODE %s: %s]", name, printableASCII(b.Payload)))
		return
	}
	module := min(6, max(1, b.Module))
	for len(mods)*module > w.dots && module > 1 {
		module--
	}
	h := b.Height
	if h <= 0 {
		h = 162 // GS h power-on default
	}
	if !w.room(1) {
		return
	}
	width := min(w.dots, len(mods)*module)
	img := w.canvas(h)
	left := offset(w.dots, width, b.Align)
	for i, black := range mods {
		if black && i*module < w.dots {
			fill(img, left+i*module, 0, module, h)
		}
	}
	w.image("sym barcode", img, name+" "+text)
	if b.HRI && text != "" {
		if w.room(1) {
			w.sb.WriteString(`<div class="row hri">` + html.EscapeString(text) + "</div>\n")
		}
	}
}

func printableASCII(p []byte) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7E {
			return '?'
		}
		return r
	}, string(p))
}

// Bitmap adds a raster image: width x height dots, stride bytes a row, MSB
// the leftmost dot, 1 black, placed at left dots from the paper's edge.
// bits nil draws a grey box of the image's size (an image whose pixels the
// decoder did not keep).
func (w *Writer) Bitmap(left, width, height, stride int, bits []byte, alt string) {
	if width <= 0 || height <= 0 {
		return
	}
	if !w.room(1) {
		return
	}
	if w.pixels+w.dots*height > MaxPixels {
		w.rows--
		w.Marker("image", fmt.Sprintf("[%s] (not drawn: the preview has too many images)", alt))
		return
	}
	w.pixels += w.dots * height
	img := w.canvas(height)
	if bits == nil {
		for y := 0; y < height; y++ {
			for x := max(0, left); x < min(w.dots, left+width); x++ {
				img.SetColorIndex(x, y, 2)
			}
		}
		w.image("sym image placeholder", img, alt)
		return
	}
	for y := 0; y < height && (y+1)*stride <= len(bits); y++ {
		row := bits[y*stride : (y+1)*stride]
		for x := 0; x < width && x/8 < stride; x++ {
			if row[x/8]&(0x80>>(x%8)) != 0 && left+x >= 0 && left+x < w.dots {
				img.SetColorIndex(left+x, y, 1)
			}
		}
	}
	w.image("sym image", img, alt)
}

// palette: paper, ink, and the grey of images whose pixels are unknown.
var palette = color.Palette{color.White, color.Black, color.Gray{Y: 0xB0}}

func (w *Writer) canvas(h int) *image.Paletted {
	return image.NewPaletted(image.Rect(0, 0, w.dots, max(1, h)), palette)
}

func fill(img *image.Paletted, x0, y0, dx, dy int) {
	for y := y0; y < y0+dy; y++ {
		for x := x0; x < x0+dx; x++ {
			img.SetColorIndex(x, y, 1)
		}
	}
}

// offset is the left margin, in dots, of something width dots wide.
func offset(dots, width int, a Align) int {
	switch a {
	case Center:
		return max(0, (dots-width)/2)
	case Right:
		return max(0, dots-width)
	}
	return 0
}

func (w *Writer) image(class string, img *image.Paletted, alt string) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.DefaultCompression}
	if err := enc.Encode(&buf, img); err != nil {
		// Encoding an in-memory paletted image does not fail; if it ever
		// did, the alt text still tells what was there.
		w.sb.WriteString(`<div class="mark symbol">` + html.EscapeString(alt) + "</div>\n")
		return
	}
	b := img.Bounds()
	fmt.Fprintf(&w.sb, `<div class="%s"><img src="data:image/png;base64,%s" width="%d" height="%d" alt="%s"></div>`+"\n",
		class, base64.StdEncoding.EncodeToString(buf.Bytes()), b.Dx(), b.Dy(), html.EscapeString(strings.ToValidUTF8(alt, "\uFFFD")))
}

// HTML closes the paper and returns the fragment. The Writer must not be
// used after it.
func (w *Writer) HTML() template.HTML {
	if w.dropped > 0 {
		w.sb.WriteString(`<div class="note more">` + html.EscapeString(fmt.Sprintf("… %d more rows", w.dropped)) + "</div>\n")
	}
	w.sb.WriteString("</div>\n")
	// Every piece of text went through html.EscapeString above.
	return template.HTML(w.sb.String()) //nolint:gosec // built from escaped parts only
}
