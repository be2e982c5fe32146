package decode_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"printgate/drivers/escpos/decode"
	"printgate/drivers/printertest"
)

// The corpus in testdata/thirdparty is written by a third-party encoder
// (npm @point-of-sale/receipt-printer-encoder, version and printer models in
// testdata/thirdparty/VERSION) through scripts/gen-escpos-corpus: what real
// POS software sends, not what our own encoder or a hand-made stream looks
// like. This file is an external test package because it also runs the
// emulator (printertest imports decode).

// corpusDir holds the generated streams and their golden decodes.
var corpusDir = filepath.Join("testdata", "thirdparty")

// updating reports whether go test -update was given. The flag is defined
// by golden_test.go (package decode, same test binary); looking it up here
// keeps one -update for every golden file of the package.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// corpus returns the .bin files of the corpus, failing when there are none
// (a lost testdata folder must not pass silently).
func corpus(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 8 {
		t.Fatalf("third-party corpus has %d streams, want 8 (2 printer models x 4 receipts)", len(files))
	}
	return files
}

// modelOptions is how each corpus printer model reads a stream: neither
// starts in Chinese double-byte mode, and each numbers its ESC t tables
// its maker's way.
func modelOptions(f string) decode.Options {
	if strings.HasPrefix(filepath.Base(f), "xprinter-") {
		return decode.Options{CodeTables: decode.TablesXprinter}
	}
	return decode.Options{CodeTables: decode.TablesEpson}
}

// decodeFile decodes one corpus stream as its printer would.
func decodeFile(t *testing.T, f string) (tickets []decode.Ticket, pending decode.Ticket, incomplete int) {
	t.Helper()
	stream, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return decode.DecodeWith(stream, modelOptions(f))
}

// render is the golden text of a decode: per ticket, its items in paper
// order (text rows with alignment and the print mode of each span; QR,
// other 2D symbols and barcodes with their contents; images with their
// size; drawer pulses with pin and timing), the commands not understood,
// the cut; then the incomplete tail.
func render(tickets []decode.Ticket, pending decode.Ticket, incomplete int) string {
	var sb strings.Builder
	all := append(slices.Clone(tickets), pending)
	for i, t := range all {
		if i == len(all)-1 && len(t.Items) == 0 && len(t.Unknown) == 0 && t.Cut == "" {
			break // nothing left after the last cut
		}
		fmt.Fprintf(&sb, "ticket %d\n", i+1)
		for _, it := range t.Items {
			switch it.Kind {
			case decode.KindText:
				fmt.Fprintf(&sb, "  text align=%d", it.Line.Align)
				for _, s := range it.Line.Spans {
					fmt.Fprintf(&sb, " %dx%d", s.Style.W, s.Style.H)
					if s.Style.Bold {
						sb.WriteString("b")
					}
					if s.Style.Underline {
						sb.WriteString("u")
					}
					if s.Style.Inverted {
						sb.WriteString("i")
					}
					fmt.Fprintf(&sb, "%q", s.Text)
				}
				sb.WriteString("\n")
			case decode.KindQR:
				fmt.Fprintf(&sb, "  [QR model=%d module=%d align=%d %q]\n", it.QR.Model, it.QR.Module, it.QR.Align, it.QR.Data)
			case decode.KindSymbol:
				fmt.Fprintf(&sb, "  [%s align=%d %q]\n", it.Symbol.Type, it.Symbol.Align, it.Symbol.Data)
			case decode.KindBarcode:
				fmt.Fprintf(&sb, "  [BARCODE m=%d module=%d height=%d hri=%d align=%d %q]\n", it.Barcode.Sym, it.Barcode.Module, it.Barcode.Height, it.Barcode.HRI, it.Barcode.Align, it.Barcode.Text)
			case decode.KindImage:
				fmt.Fprintf(&sb, "  [IMAGE %dx%d dots=%v align=%d]\n", it.Image.Width, it.Image.Height, it.Image.Bits != nil, it.Image.Align)
			case decode.KindBeep:
				fmt.Fprintf(&sb, "  [BEEP x%d]\n", it.Beeps)
			case decode.KindDrawer:
				fmt.Fprintf(&sb, "  [DRAWER pin=%d on=%dms off=%dms]\n", it.Drawer.Pin, it.Drawer.OnMS, it.Drawer.OffMS)
			}
		}
		for _, u := range t.Unknown {
			fmt.Fprintf(&sb, "  unknown at %d, %d bytes\n", u.Offset, u.Len)
		}
		if t.Cut != "" {
			fmt.Fprintf(&sb, "  [CUT %s]\n", t.Cut)
		}
	}
	fmt.Fprintf(&sb, "incomplete %d\n", incomplete)
	return sb.String()
}

// TestThirdPartyGolden decodes every corpus stream and compares it with its
// .golden; go test -run TestThirdPartyGolden -update rewrites them (read
// the diff before committing it).
func TestThirdPartyGolden(t *testing.T) {
	for _, f := range corpus(t) {
		got := render(decodeFile(t, f))
		golden := strings.TrimSuffix(f, ".bin") + ".golden"
		if updating() {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s decodes as\n%s\nwant\n%s", f, got, want)
		}
	}
}

// models are the printer models the corpus was generated for (see VERSION).
var models = []string{"epson-tm-t88vi", "xprinter-xp-n160ii"}

// only returns the single cut ticket of a corpus file: every receipt of the
// generator is one ticket ending in a cut, with nothing after it.
func only(t *testing.T, f string) decode.Ticket {
	t.Helper()
	tickets, pending, incomplete := decodeFile(t, f)
	if len(tickets) != 1 {
		t.Fatalf("%s: %d tickets cut, want 1", f, len(tickets))
	}
	// The encoder ends with CR LF after GS V: a blank row fed on the next
	// ticket, nothing else.
	for _, it := range pending.Items {
		if it.Kind != decode.KindText || it.Line.Text() != "" {
			t.Errorf("%s: left %+v after the cut", f, it)
		}
	}
	if incomplete != 0 {
		t.Fatalf("%s: %d incomplete bytes after the cut", f, incomplete)
	}
	if len(tickets[0].Unknown) != 0 {
		t.Errorf("%s: commands not understood: %+v", f, tickets[0].Unknown)
	}
	return tickets[0]
}

// TestThirdPartyText holds the decoder to a third-party encoder's text:
// "€3.80" in the encoder's automatic code-page choice (ESC t) once drew as
// "╒3.80" when every byte was read as cp437. The accents of the other rows
// come from other code pages.
//
// The encoder picks, per run of text, the first table of the model's list
// that has the character, and its ESC t numbers are the model's: for
// epson-tm-t88vi "€" goes as ESC t 13 (cp857) 0xD5 and "Ż" as ESC t 12
// (cp853) 0xBD; for xprinter-xp-n160ii "€" goes as ESC t 7 (Windows-1253)
// 0x80 and "Ż" as ESC t 18 (cp852). known lists the wrong rows the decoder
// draws today because it lacks those tables (see skipKnown).
func TestThirdPartyText(t *testing.T) {
	want := []string{"Café crème 2x", "Cappuccino €3.80", "Żurek ž Øre Ñandú", "Total: €7.60"}
	for _, m := range models {
		f := filepath.Join(corpusDir, m+"-text.bin")
		tk := only(t, f)
		for _, w := range want {
			if slices.Contains(tk.Lines, w) {
				continue
			}
			t.Errorf("%s: no line %q in %q", f, w, tk.Lines)
		}
		if tk.Cut != "full" {
			t.Errorf("%s: cut %q, want full", f, tk.Cut)
		}
	}
}

// TestThirdPartyStyles checks the print modes the encoder sends (ESC E,
// GS !, GS B, ESC -, ESC a) on the rows they style.
func TestThirdPartyStyles(t *testing.T) {
	for _, m := range models {
		f := filepath.Join(corpusDir, m+"-styles.bin")
		tk := only(t, f)
		// The encoder aligns text rows itself, padding them with spaces
		// to the model's columns (ESC a only for symbols and images).
		rows := map[string]decode.Line{}
		for _, it := range tk.Items {
			if it.Kind == decode.KindText {
				rows[strings.TrimSpace(it.Line.Text())] = it.Line
			}
		}
		check := func(text string, align byte, ok func(decode.Style) bool, what string) {
			t.Helper()
			l, found := rows[text]
			if !found {
				t.Errorf("%s: no row %q in %q", f, text, tk.Lines)
				return
			}
			if lead := len(l.Text()) - len(strings.TrimLeft(l.Text(), " ")); (lead > 0) != (align != 0) {
				t.Errorf("%s: row %q has %d leading spaces, want it aligned %d", f, l.Text(), lead, align)
			}
			for _, s := range l.Spans {
				if strings.TrimSpace(s.Text) != "" && !ok(s.Style) {
					t.Errorf("%s: row %q span %q style %+v, want %s", f, text, s.Text, s.Style, what)
				}
			}
		}
		check("BOLD CENTRE", 1, func(s decode.Style) bool { return s.Bold && s.W == 1 }, "bold")
		check("BIG", 2, func(s decode.Style) bool { return s.W == 2 && s.H == 2 && !s.Bold }, "2x2")
		check("inverted", 0, func(s decode.Style) bool { return s.Inverted && s.W == 1 }, "inverted")
		check("wide", 0, func(s decode.Style) bool { return s.W == 2 && s.H == 1 && !s.Inverted }, "2x1")
		check("underlined", 0, func(s decode.Style) bool { return s.Underline && s.W == 1 }, "underlined")
		if tk.Cut != "partial" {
			t.Errorf("%s: cut %q, want partial", f, tk.Cut)
		}
	}
}

// TestThirdPartySymbols checks the QR code, the PDF417 (it once drew as
// blank lines) and the CODE128 barcode, in paper order.
func TestThirdPartySymbols(t *testing.T) {
	for _, m := range models {
		f := filepath.Join(corpusDir, m+"-symbols.bin")
		tk := only(t, f)
		var kinds []decode.Kind
		for _, it := range tk.Items {
			switch it.Kind {
			case decode.KindText:
				if strings.TrimSpace(it.Line.Text()) != "" {
					t.Errorf("%s: text %q where only symbols were printed", f, it.Line.Text())
				}
				continue
			case decode.KindQR:
				if it.QR.Data != "https://example.com/r/42" || it.QR.Model != 2 || it.QR.Module != 6 {
					t.Errorf("%s: QR %+v, want model 2, module 6, https://example.com/r/42", f, it.QR)
				}
			case decode.KindSymbol:
				if it.Symbol.Type != "PDF417" || it.Symbol.Data != "RECEIPT 0042 TOTAL 7.60" {
					t.Errorf("%s: symbol %+v, want PDF417 %q", f, it.Symbol, "RECEIPT 0042 TOTAL 7.60")
				}
			case decode.KindBarcode:
				if it.Barcode.Text != "ORDER-0042" || it.Barcode.Height != 60 {
					t.Errorf("%s: barcode %+v, want CODE128 ORDER-0042 60 dots high", f, it.Barcode)
				}
			}
			kinds = append(kinds, it.Kind)
		}
		if want := []decode.Kind{decode.KindQR, decode.KindSymbol, decode.KindBarcode}; !slices.Equal(kinds, want) {
			t.Errorf("%s: items %v, want QR, PDF417 symbol, barcode (%v)", f, kinds, want)
		}
		if !slices.Equal(tk.QR, []string{"https://example.com/r/42"}) || !slices.Equal(tk.Barcodes, []string{"ORDER-0042"}) {
			t.Errorf("%s: QR %q barcodes %q", f, tk.QR, tk.Barcodes)
		}
	}
}

// TestThirdPartyImage checks the generated 40x24 bitmap in both of the
// encoder's image modes (ESC * columns, GS v 0 raster), one image each
// with its dots, then the drawer pulse and the cut.
func TestThirdPartyImage(t *testing.T) {
	for _, m := range models {
		f := filepath.Join(corpusDir, m+"-image.bin")
		tk := only(t, f)
		// The dots are in the paper's items (Ticket.Images keeps sizes).
		var ims []decode.Image
		for _, it := range tk.Items {
			if it.Kind == decode.KindImage {
				ims = append(ims, it.Image)
			}
		}
		if len(ims) != 2 || len(tk.Images) != 2 {
			t.Fatalf("%s: %d images (%d in Images), want 2 (one per image, not per band)", f, len(ims), len(tk.Images))
		}
		for i, im := range ims {
			if im.Width != 40 || im.Height != 24 {
				t.Errorf("%s: image %d is %dx%d, want 40x24", f, i, im.Width, im.Height)
			}
			if im.Bits == nil {
				t.Errorf("%s: image %d has no dots", f, i)
				continue
			}
			// The frame: the top-left dot black, the one inside the first
			// white square (x 8..15, y 2..7) white.
			if im.Bits[0]&0x80 == 0 || im.Bits[3*im.Stride+1]&0x10 != 0 {
				t.Errorf("%s: image %d dots do not match the generated bitmap", f, i)
			}
		}
		if !slices.Equal(ims[0].Bits, ims[1].Bits) {
			t.Errorf("%s: the column and raster images differ", f)
		}
		if !slices.Contains(tk.Lines, "after images") {
			t.Errorf("%s: no line %q in %q", f, "after images", tk.Lines)
		}
		if len(tk.Drawer) != 1 || tk.Drawer[0].Pin != 2 || tk.Drawer[0].OnMS != 100 || tk.Drawer[0].OffMS != 500 {
			t.Errorf("%s: drawer %+v, want one pulse on pin 2, 100 ms on, 500 ms off", f, tk.Drawer)
		}
		if tk.Cut != "full" {
			t.Errorf("%s: cut %q, want full", f, tk.Cut)
		}
	}
}

// TestThirdPartyEmulatorAgrees draws every corpus stream with the emulator
// (printertest.Parse and Render) and checks the drawing against the
// decode: the same ticket lines, QR, PDF417 and barcode contents, images,
// drawer pulses and cut.
func TestThirdPartyEmulatorAgrees(t *testing.T) {
	for _, f := range corpus(t) {
		stream, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dt, dp, _ := decode.DecodeWith(stream, modelOptions(f))
		et, ep := printertest.ParseWith(stream, modelOptions(f))
		if len(et) != len(dt) {
			t.Errorf("%s: emulator cut %d tickets, decode %d", f, len(et), len(dt))
			continue
		}
		for i := range append(et, ep) {
			var e printertest.Ticket
			var d decode.Ticket
			if i < len(et) {
				e, d = et[i], dt[i]
			} else {
				e, d = ep, dp
			}
			if !slices.Equal(e.Lines, d.Lines) {
				t.Errorf("%s ticket %d: emulator lines %q, decode %q", f, i+1, e.Lines, d.Lines)
			}
			if !slices.Equal(e.QR, d.QR) || !slices.Equal(e.Barcodes, d.Barcodes) {
				t.Errorf("%s ticket %d: emulator QR %q barcodes %q, decode %q %q", f, i+1, e.QR, e.Barcodes, d.QR, d.Barcodes)
			}
			if e.Cut != d.Cut || len(e.Drawer) != len(d.Drawer) || len(e.Images) != len(d.Images) {
				t.Errorf("%s ticket %d: emulator cut %q drawer %v images %v, decode %q %v %d", f, i+1, e.Cut, e.Drawer, e.Images, d.Cut, d.Drawer, len(d.Images))
			}
			var drawing bytes.Buffer
			if err := printertest.Render(&drawing, "corpus", e); err != nil {
				t.Fatal(err)
			}
			// What the drawing must show, from the decode.
			var want []string
			for _, l := range d.Lines {
				want = append(want, "│ "+l)
			}
			for _, q := range d.QR {
				want = append(want, "[QR "+q+"]")
			}
			for _, b := range d.Barcodes {
				want = append(want, "[BARCODE "+b+"]")
			}
			for _, it := range d.Items {
				if it.Kind == decode.KindSymbol {
					want = append(want, "["+it.Symbol.Type+" "+it.Symbol.Data+"]")
				}
			}
			for _, im := range d.Images {
				want = append(want, fmt.Sprintf("[IMAGE %dx%d]", im.Width, im.Height))
			}
			for _, k := range d.Drawer {
				want = append(want, fmt.Sprintf("[DRAWER pin %d]", k.Pin))
			}
			switch d.Cut {
			case "full":
				want = append(want, "[CUT]")
			case "partial":
				want = append(want, "[PARTIAL CUT]")
			}
			for _, w := range want {
				if !strings.Contains(drawing.String(), w) {
					t.Errorf("%s ticket %d: the emulator's drawing lacks %q:\n%s", f, i+1, w, drawing.String())
				}
			}
		}
	}
}
