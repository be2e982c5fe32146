package escpos

import (
	"fmt"
	"html/template"
	"strings"

	"printgate/drivers/escpos/decode"
	"printgate/drivers/escpos/paper"
)

// PaperCSS is the stylesheet PreviewHTML and PreviewStreamHTML fragments
// need; the page puts it in its own stylesheet. The fragments use classes
// only (no style attributes) and data: PNG images, so they work under a
// Content-Security-Policy without 'unsafe-inline' whose img-src allows
// data:. Classes: paper and paper-N (N in 24 32 40 42 48 56 64 72 80, or
// paper-wide) on the sheet; row for a text row, with wW hH for character
// size, al-c / al-r for alignment; spans b (bold), u (underline), inv
// (white on black); sym qr / sym barcode / sym image for pictures, row hri
// for a barcode's text; mark beep / mark drawer / mark symbol / mark image
// for markers; cut for the cut; note for remarks about the preview.
const PaperCSS = paper.CSS

// PreviewHTML draws doc as it will come out of a printer of profile p, as
// an HTML fragment that looks like the paper: the same layout as Render and
// Preview (wrapping, alignment, banners, the final cut), with double size,
// bold, underline and reversed banners as classes, QR codes and barcodes as
// PNG images of their modules, logos as PNG images of the dithered dots the
// printer gets, feeds as blank rows, beeps and drawer kicks as markers and
// the cut as a dashed line with ✂. All text is HTML-escaped. The fragment
// shows at most paper.MaxRows rows and says how many more there were.
func PreviewHTML(doc *Document, p Profile, opts RenderOptions) (template.HTML, error) {
	lay, err := buildLayout(doc, p, opts, true)
	if err != nil {
		return "", err
	}
	w := paper.New(p.Columns, p.Dots)
	for _, b := range lay.blocks {
		switch b.kind {
		case blockText:
			for _, r := range b.rows {
				w.Text(htmlRow(b, r))
			}
		case blockQR:
			w.QR(b.qrData, b.qrSize, paper.Center)
		case blockBarcode:
			payload, err := barcodePayload(b.sym, b.barcode)
			if err != nil {
				// buildLayout has checked it; this is not reached.
				return "", fmt.Errorf("line %d: %w", b.line, err)
			}
			w.BarcodeBars(paper.Barcode{Sym: byte(b.sym), Payload: payload, Module: b.module,
				Height: barcodeHeight, HRI: true, Align: paper.Center})
		case blockImage:
			w.Bitmap(0, b.img.stride*8, b.img.h, b.img.stride, b.img.bits, fmt.Sprintf("image %dx%d", b.img.w, b.img.h))
		case blockFeed:
			w.Blank(b.n)
		case blockBeep:
			if p.Beep == BeepNone {
				w.Marker("beep", fmt.Sprintf("♪ BEEP ×%d (no buzzer)", b.n))
			} else {
				w.Marker("beep", fmt.Sprintf("♪ BEEP ×%d", b.n))
			}
		case blockDrawer:
			w.Marker("drawer", "⏏ DRAWER")
		case blockCut:
			switch {
			case b.noCut:
				w.Blank(tearFeed)
				w.Cut("tear off")
			case b.cut == CutFull:
				w.Cut("full cut")
			default:
				w.Cut("partial cut")
			}
		}
	}
	return w.HTML(), nil
}

// htmlRow is one laid-out text row as printed: bold and reverse cover the
// whole row, padding included (a reversed banner's padding is printed
// black), underline only the words, as Render sends them.
func htmlRow(b block, r textRow) paper.Row {
	sp := func(s string, words bool) paper.Span {
		return paper.Span{Text: s, Bold: b.bold, Underline: b.ul && words, Inverted: b.rev}
	}
	pad := func(n int) paper.Span { return sp(strings.Repeat(" ", n), false) }
	spans := []paper.Span{pad(r.lead), sp(r.left, true)}
	if r.right != "" {
		spans = append(spans, pad(r.gap), sp(r.right, true))
	}
	spans = append(spans, pad(r.trail))
	return paper.Row{Spans: mergeSpans(spans), W: b.size.W, H: b.size.H}
}

// mergeSpans joins neighbouring spans of the same style, so a reversed
// banner is one black run.
func mergeSpans(in []paper.Span) []paper.Span {
	var out []paper.Span
	for _, s := range in {
		if s.Text == "" {
			continue
		}
		if n := len(out); n > 0 && sameStyle(out[n-1], s) {
			out[n-1].Text += s.Text
			continue
		}
		out = append(out, s)
	}
	return out
}

func sameStyle(a, b paper.Span) bool {
	return a.Bold == b.Bold && a.Underline == b.Underline && a.Inverted == b.Inverted
}

// PreviewStreamHTML draws a raw ESC/POS payload (a task submitted with
// payload instead of a document) as PreviewHTML draws a document, with the
// same classes: it decodes the stream as the printer o describes would
// (package decode; Profile.DecodeOptions gives o for a configured printer)
// and draws every ticket
// with its cut, then what is left uncut. The paper's width is guessed from
// the stream (a stream does not say which paper it was made for): 32
// columns and 384 dots when every row and image fits 58 mm paper, else 48
// and 576, wider only for wider content. QR codes and barcodes are drawn
// again from their content; PDF417, DataMatrix, Aztec and MaxiCode
// symbols as markers "[PDF417: data]"; images with their dots. Commands the decoder does not know,
// a command cut off at the end, and blank feed rows past the decoder's
// bound are counted in notes.
func PreviewStreamHTML(stream []byte, o decode.Options) template.HTML {
	tickets, pending, incomplete := decode.DecodeWith(stream, o)
	if len(pending.Items) > 0 || len(pending.Unknown) > 0 || len(tickets) == 0 {
		tickets = append(tickets, pending)
	}
	cols, dots := streamPaper(tickets)
	w := paper.New(cols, dots)
	unknown, feeds := 0, 0
	for _, t := range tickets {
		feeds += t.FeedsDropped
		for _, it := range t.Items {
			drawItem(w, it, dots)
		}
		switch t.Cut {
		case "full":
			w.Cut("full cut")
		case "partial":
			w.Cut("partial cut")
		}
		for _, u := range t.Unknown {
			unknown += u.Len
		}
	}
	switch {
	case unknown > 0 && incomplete > 0:
		w.Note(fmt.Sprintf("%d bytes not understood; the stream ends in the middle of a command (%d bytes).", unknown, incomplete))
	case unknown > 0:
		w.Note(fmt.Sprintf("%d bytes not understood.", unknown))
	case incomplete > 0:
		w.Note(fmt.Sprintf("%d bytes not understood: the stream ends in the middle of a command.", incomplete))
	}
	if feeds > 0 {
		w.Note(fmt.Sprintf("%d blank feed rows not drawn.", feeds))
	}
	return w.HTML()
}

func drawItem(w *paper.Writer, it decode.Item, dots int) {
	switch it.Kind {
	case decode.KindText:
		r := paper.Row{Align: paper.Align(it.Line.Align)}
		// The preview draws one size per row: that of the row's first
		// printed character (padding may have been sent at another size).
		sized := false
		for _, s := range it.Line.Spans {
			if !sized && (strings.TrimSpace(s.Text) != "" || r.W == 0) {
				r.W, r.H = s.Style.W, s.Style.H
				sized = strings.TrimSpace(s.Text) != ""
			}
			r.Spans = append(r.Spans, paper.Span{Text: s.Text, Bold: s.Style.Bold,
				Underline: s.Style.Underline, Inverted: s.Style.Inverted})
		}
		if len(r.Spans) == 0 {
			w.Blank(1)
			return
		}
		w.Text(r)
	case decode.KindQR:
		w.QR([]byte(it.QR.Data), it.QR.Module, paper.Align(it.QR.Align))
	case decode.KindBarcode:
		bc := it.Barcode
		w.BarcodeBars(paper.Barcode{Sym: paper.BarcodeSymbology(bc.Sym), Payload: bc.Payload,
			Module: bc.Module, Height: bc.Height, HRI: bc.HRI != 0, Align: paper.Align(bc.Align)})
	case decode.KindImage:
		im := it.Image
		left := 0
		switch im.Align {
		case 1:
			left = max(0, (dots-im.Width)/2)
		case 2:
			left = max(0, dots-im.Width)
		}
		w.Bitmap(left, im.Width, im.Height, im.Stride, im.Bits, fmt.Sprintf("image %dx%d", im.Width, im.Height))
	case decode.KindBeep:
		w.Marker("beep", fmt.Sprintf("♪ BEEP ×%d", it.Beeps))
	case decode.KindDrawer:
		w.Marker("drawer", fmt.Sprintf("⏏ DRAWER (pin %d)", it.Drawer.Pin))
	case decode.KindSymbol:
		// No drawing of PDF417, DataMatrix, Aztec or MaxiCode modules here:
		// what support needs to see is which symbol was printed with what.
		w.Marker("symbol", fmt.Sprintf("[%s: %s]", it.Symbol.Type, shorten(it.Symbol.Data, maxSymbolText)))
	}
}

// maxSymbolText is how many characters of a symbol's data its marker shows
// (a PDF417 symbol holds up to about 1800 characters).
const maxSymbolText = 200

// shorten cuts s to n characters, with … when it was longer.
func shorten(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// streamPaper guesses the paper a stream was made for from its widest row
// (in font A columns at its size) and widest image.
func streamPaper(tickets []decode.Ticket) (cols, dots int) {
	wideCols, wideDots := 0, 0
	for _, t := range tickets {
		for _, it := range t.Items {
			switch it.Kind {
			case decode.KindText:
				c := 0
				for _, s := range it.Line.Spans {
					c += decode.Columns(s.Text) * max(1, s.Style.W)
				}
				wideCols = max(wideCols, c)
			case decode.KindImage:
				wideDots = max(wideDots, it.Image.Width)
			}
		}
	}
	switch {
	case wideCols <= 32 && wideDots <= 384:
		return 32, 384
	case wideCols <= 48 && wideDots <= 576:
		return 48, 576
	}
	// Wider than 80 mm paper: keep 12 dots a column.
	cols = min(255, max(48, wideCols, (wideDots+11)/12))
	return cols, min(2048, max(cols*12, wideDots))
}
