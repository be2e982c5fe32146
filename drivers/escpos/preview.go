package escpos

import (
	"fmt"
	"strings"
)

// Preview draws doc as it will come out of a printer of profile p, as plain
// text one paper row per line, each padded to the profile's columns. It uses
// the same layout as Render, so wrapping, alignment, banners and the final
// cut agree with the paper. Conventions: double-width text is spread out with
// spaces ("T A B L E"), the padding of reversed banners is drawn with "#",
// everything that is not text is a bracketed marker ([QR: …],
// [BARCODE CODE128: …], [IMAGE 384x120], [BEEP 2], [DRAWER]) and a cut is
// "- - - ✂ - - -". Bold, underline and double height are not shown.
func Preview(doc *Document, p Profile, opts RenderOptions) (string, error) {
	lay, err := buildLayout(doc, p, opts, true)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	cols := p.Columns
	line := func(s string, w int) {
		sb.WriteString(s)
		sb.WriteString(strings.Repeat(" ", max(0, cols-w)))
		sb.WriteByte('\n')
	}
	marker := func(s string) {
		s = strings.ReplaceAll(cleanText(s), "\n", " ")
		for _, row := range wrap(s, cols, displayWidth) {
			w := 0
			for _, r := range row {
				w += displayWidth(r)
			}
			lead := max(0, (cols-w)/2)
			line(strings.Repeat(" ", lead)+row, lead+w)
		}
	}
	for _, b := range lay.blocks {
		switch b.kind {
		case blockText:
			for _, r := range b.rows {
				s, w := previewRow(lay.c, r, b.size.W, b.rev)
				line(s, w)
			}
		case blockQR:
			marker(fmt.Sprintf("[QR: %s]", b.qrData))
		case blockBarcode:
			marker(fmt.Sprintf("[BARCODE %v: %s]", b.sym, b.barcode))
		case blockImage:
			marker(fmt.Sprintf("[IMAGE %dx%d]", b.img.w, b.img.h))
		case blockFeed:
			for range b.n {
				line("", 0)
			}
		case blockBeep:
			if p.Beep == BeepNone {
				marker(fmt.Sprintf("[BEEP %d: no buzzer]", b.n))
			} else {
				marker(fmt.Sprintf("[BEEP %d]", b.n))
			}
		case blockDrawer:
			marker("[DRAWER]")
		case blockCut:
			if b.noCut {
				marker("[TEAR OFF]")
			} else {
				line(cutLine(cols), cols)
			}
		}
	}
	return sb.String(), nil
}

// previewRow draws one text row at width factor wf and returns it with its
// width in columns.
func previewRow(c *codec, r textRow, wf int, rev bool) (string, int) {
	var sb strings.Builder
	w := 0
	pad := func(n int) {
		ch := " "
		if rev {
			ch = "#"
		}
		sb.WriteString(strings.Repeat(ch, n*wf))
		w += n * wf
	}
	text := func(s string) {
		for _, ch := range s {
			cw := c.runeWidth(ch)
			sb.WriteRune(ch)
			sb.WriteString(strings.Repeat(" ", cw*(wf-1)))
			w += cw * wf
		}
	}
	pad(r.lead)
	text(r.left)
	if r.right != "" {
		sb.WriteString(strings.Repeat(" ", r.gap*wf))
		w += r.gap * wf
		text(r.right)
	}
	pad(r.trail)
	return sb.String(), w
}

// cutLine is "- - - ✂ - - -" across cols columns.
func cutLine(cols int) string {
	r := []rune(strings.Repeat("- ", cols/2+1)[:cols])
	r[cols/2] = '✂'
	return string(r)
}
