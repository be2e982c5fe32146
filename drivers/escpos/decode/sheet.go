package decode

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Sheet is a ticket reduced to what a person reads off the paper: its text
// lines and the contents of its symbols, images, drawer kicks and beeps.
// It is what the test printer (drivers/printertest) records of each ticket
// and what it and `printgate decode` draw in a terminal (Draw), so the two
// cannot draw one stream two ways.
type Sheet struct {
	// Seq numbers a printer's tickets from 1; Ticket.Sheet leaves it 0
	// for whoever counts the tickets to set.
	Seq int
	// Lines holds the text lines as printed, decoded from the code page or
	// from GB18030 in CJK mode. Feeds give empty lines.
	Lines []string
	// QR and Barcodes hold the contents of each printed symbol, in order.
	QR       []string
	Barcodes []string
	// Symbols holds the other 2D symbols (PDF417, DataMatrix, Aztec,
	// MaxiCode) as "TYPE data", in order.
	Symbols []string
	// Images holds the size of each printed raster or bit image.
	Images []ImageSize
	// Drawer holds each cash drawer kick; Beeps counts buzzer sounds.
	Drawer []DrawerKick
	Beeps  int
	// Cut is "full" or "partial"; empty for a ticket still being printed.
	Cut string
	// Raw holds the bytes processed for this ticket, cut included.
	Raw []byte
	// At is when the cut happened, set by a recorder with a clock (the
	// emulator); Ticket.Sheet leaves it zero.
	At time.Time
	// Items is the paper in order with each row's alignment, for Draw to
	// lay it out as printed (images without their dots). A Sheet without
	// Items is drawn from the lists above: text, then the rest.
	Items []Item
}

// ImageSize is the size of a printed image in dots.
type ImageSize struct {
	Width, Height int
}

// Sheet returns what a person reads off t (Seq and At left zero).
func (t Ticket) Sheet() Sheet {
	s := Sheet{
		Lines:    t.Lines,
		QR:       t.QR,
		Barcodes: t.Barcodes,
		Beeps:    t.Beeps,
		Cut:      t.Cut,
		Raw:      t.Raw,
	}
	for _, im := range t.Images {
		s.Images = append(s.Images, ImageSize{Width: im.Width, Height: im.Height})
	}
	s.Drawer = append(s.Drawer, t.Drawer...)
	for _, it := range t.Items {
		if it.Kind == KindSymbol {
			s.Symbols = append(s.Symbols, it.Symbol.Type+" "+it.Symbol.Data)
		}
		if it.Kind == KindImage {
			it.Image.Bits = nil // Draw shows an image's size only
		}
		s.Items = append(s.Items, it)
	}
	return s
}

// Text returns the lines joined by newlines.
func (s Sheet) Text() string { return strings.Join(s.Lines, "\n") }

// Contains reports whether any line contains sub.
func (s Sheet) Contains(sub string) bool {
	for _, l := range s.Lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// Draw draws the sheet as it looks on paper: a box with its rows in paper
// order and alignment (rows), and the cut. name labels the box (the
// printer's name).
func (s Sheet) Draw(w io.Writer, name string) error {
	body, align := s.rows()
	wide := Columns(name) + 12
	for _, l := range body {
		wide = max(wide, Columns(l))
	}
	var b strings.Builder
	title := fmt.Sprintf(" %s #%d ", name, s.Seq)
	fmt.Fprintf(&b, "┌%s%s┐\n", title, strings.Repeat("─", max(0, wide+2-Columns(title))))
	for i, l := range body {
		if !utf8.ValidString(l) {
			l = strings.ToValidUTF8(l, "\uFFFD")
		}
		// The paper's alignment (ESC a) within the box, as the HTML
		// preview lays it out: centred rows centred, right ones right.
		left := 0
		switch align[i] {
		case 1:
			left = (wide - Columns(l)) / 2
		case 2:
			left = wide - Columns(l)
		}
		fmt.Fprintf(&b, "│ %s%s%s │\n", strings.Repeat(" ", left), l, strings.Repeat(" ", wide-left-Columns(l)))
	}
	cut := "[CUT]"
	if s.Cut == "partial" {
		cut = "[PARTIAL CUT]"
	}
	fmt.Fprintf(&b, "└%s%s┘\n", strings.Repeat("─", max(0, wide+2-len(cut))), cut)
	_, err := io.WriteString(w, b.String())
	return err
}

// rows is the sheet's rows as Draw shows them, with each one's alignment
// (0 left, 1 centre, 2 right): from Items in paper order when the sheet has
// them, so a QR code printed mid-ticket is drawn there, before the text and
// feeds that follow it; else the text, then one row per symbol, image,
// drawer kick and beep.
func (s Sheet) rows() (body []string, align []byte) {
	if len(s.Items) == 0 {
		body = s.listRows()
		return body, make([]byte, len(body))
	}
	var qr, bc, sym int
	// next is the list's i-th entry as the list-drawn sheet names it, or
	// the item's own words where the lists are shorter.
	next := func(list []string, i *int, own string) string {
		if *i < len(list) {
			own = list[*i]
		}
		*i++
		return own
	}
	for _, it := range s.Items {
		var row string
		var a byte
		switch it.Kind {
		case KindText:
			row, a = it.Line.Text(), it.Line.Align
		case KindQR:
			row, a = "[QR "+next(s.QR, &qr, it.QR.Data)+"]", it.QR.Align
		case KindBarcode:
			row, a = "[BARCODE "+next(s.Barcodes, &bc, it.Barcode.Text)+"]", it.Barcode.Align
		case KindSymbol:
			row, a = "["+next(s.Symbols, &sym, it.Symbol.Type+" "+it.Symbol.Data)+"]", it.Symbol.Align
		case KindImage:
			row, a = fmt.Sprintf("[IMAGE %dx%d]", it.Image.Width, it.Image.Height), it.Image.Align
		case KindDrawer:
			row = fmt.Sprintf("[DRAWER pin %d]", it.Drawer.Pin)
		case KindBeep:
			row = fmt.Sprintf("[BEEP x%d]", it.Beeps)
		default:
			continue
		}
		body, align = append(body, row), append(align, a)
	}
	return body, align
}

// listRows is the rows of a sheet without Items: the text lines, then one
// line per QR code, barcode, other 2D symbol, image, drawer kick and beep.
func (s Sheet) listRows() []string {
	var body []string
	body = append(body, s.Lines...)
	for _, q := range s.QR {
		body = append(body, "[QR "+q+"]")
	}
	for _, b := range s.Barcodes {
		body = append(body, "[BARCODE "+b+"]")
	}
	for _, sy := range s.Symbols {
		body = append(body, "["+sy+"]")
	}
	for _, im := range s.Images {
		body = append(body, fmt.Sprintf("[IMAGE %dx%d]", im.Width, im.Height))
	}
	for _, d := range s.Drawer {
		body = append(body, fmt.Sprintf("[DRAWER pin %d]", d.Pin))
	}
	if s.Beeps > 0 {
		body = append(body, fmt.Sprintf("[BEEP x%d]", s.Beeps))
	}
	return body
}
