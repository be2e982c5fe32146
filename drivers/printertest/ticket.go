package printertest

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/width"
)

// Ticket is one piece of paper the emulator printed: everything between two
// cuts, decoded into what a person would see on it.
type Ticket struct {
	// Seq numbers the printer's tickets from 1.
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
	Images []Image
	// Drawer holds each cash drawer kick; Beeps counts buzzer sounds.
	Drawer []DrawerKick
	Beeps  int
	// Cut is "full" or "partial"; empty for a ticket still being printed.
	Cut string
	// Raw holds the bytes processed for this ticket, cut included.
	Raw []byte
	// At is when the cut happened.
	At time.Time
}

// Image is the size of a printed image in dots.
type Image struct {
	Width, Height int
}

// DrawerKick is one pulse on a cash drawer connector.
type DrawerKick struct {
	Pin   int // 2 or 5
	OnMS  int // pulse on time
	OffMS int // pulse off time
}

// Text returns the lines joined by newlines.
func (t Ticket) Text() string { return strings.Join(t.Lines, "\n") }

// Contains reports whether any line contains s.
func (t Ticket) Contains(s string) bool {
	for _, l := range t.Lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// columns is the display width of s in a terminal: East Asian wide and
// full-width characters take two columns, as they do on paper.
func columns(s string) int {
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

// Render draws the ticket as it looks on paper: a box with the text lines,
// then one line per QR code, barcode, other 2D symbol, image, drawer kick and beep, and the
// cut. name labels the box (the printer's name).
func Render(w io.Writer, name string, t Ticket) error {
	var body []string
	body = append(body, t.Lines...)
	for _, q := range t.QR {
		body = append(body, "[QR "+q+"]")
	}
	for _, b := range t.Barcodes {
		body = append(body, "[BARCODE "+b+"]")
	}
	for _, sy := range t.Symbols {
		body = append(body, "["+sy+"]")
	}
	for _, im := range t.Images {
		body = append(body, fmt.Sprintf("[IMAGE %dx%d]", im.Width, im.Height))
	}
	for _, d := range t.Drawer {
		body = append(body, fmt.Sprintf("[DRAWER pin %d]", d.Pin))
	}
	if t.Beeps > 0 {
		body = append(body, fmt.Sprintf("[BEEP x%d]", t.Beeps))
	}
	wide := columns(name) + 12
	for _, l := range body {
		wide = max(wide, columns(l))
	}
	var b strings.Builder
	title := fmt.Sprintf(" %s #%d ", name, t.Seq)
	fmt.Fprintf(&b, "┌%s%s┐\n", title, strings.Repeat("─", max(0, wide+2-columns(title))))
	for _, l := range body {
		if !utf8.ValidString(l) {
			l = strings.ToValidUTF8(l, "\uFFFD")
		}
		fmt.Fprintf(&b, "│ %s%s │\n", l, strings.Repeat(" ", wide-columns(l)))
	}
	cut := "[CUT]"
	if t.Cut == "partial" {
		cut = "[PARTIAL CUT]"
	}
	fmt.Fprintf(&b, "└%s%s┘\n", strings.Repeat("─", max(0, wide+2-len(cut))), cut)
	_, err := io.WriteString(w, b.String())
	return err
}
