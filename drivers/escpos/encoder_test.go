package escpos

import (
	"bytes"
	"strings"
	"testing"
)

func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	var out []byte
	for _, f := range strings.Fields(s) {
		var b byte
		for _, c := range f {
			b <<= 4
			switch {
			case c >= '0' && c <= '9':
				b |= byte(c - '0')
			case c >= 'A' && c <= 'F':
				b |= byte(c-'A') + 10
			default:
				t.Fatalf("bad hex %q", f)
			}
		}
		out = append(out, b)
	}
	return out
}

// TestEncoderCommands ensures every builder emits exactly the bytes that
// docs/ESCPOS.md §1 and §3 give for it.
func TestEncoderCommands(t *testing.T) {
	pid, err := ProcessID([4]byte{'A', 'b', '0', '~'})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"init", new(Encoder).Init().Bytes(), "1B 40"},
		{"cjk on", new(Encoder).CJKOn().Bytes(), "1C 26"},
		{"cjk off", new(Encoder).CJKOff().Bytes(), "1C 2E"},
		{"code page 16", new(Encoder).CodePage(16).Bytes(), "1B 74 10"},
		{"print mode", new(Encoder).PrintMode(ModeBold | ModeDoubleHeight | ModeDoubleWidth | ModeUnderline | ModeFontB).Bytes(), "1B 21 B9"},
		{"size 1x1", new(Encoder).Size(1, 1).Bytes(), "1D 21 00"},
		{"size 2x3", new(Encoder).Size(2, 3).Bytes(), "1D 21 12"},
		{"size 8x8", new(Encoder).Size(8, 8).Bytes(), "1D 21 77"},
		{"bold on", new(Encoder).Bold(true).Bytes(), "1B 45 01"},
		{"bold off", new(Encoder).Bold(false).Bytes(), "1B 45 00"},
		{"underline", new(Encoder).Underline(true).Underline(false).Bytes(), "1B 2D 01 1B 2D 00"},
		{"cjk underline", new(Encoder).CJKUnderline(true).CJKUnderline(false).Bytes(), "1C 2D 01 1C 2D 00"},
		{"reverse", new(Encoder).Reverse(true).Reverse(false).Bytes(), "1D 42 01 1D 42 00"},
		{"align", new(Encoder).Align(AlignLeft).Align(AlignCenter).Align(AlignRight).Bytes(), "1B 61 00 1B 61 01 1B 61 02"},
		{"feed", new(Encoder).Feed(3).Bytes(), "1B 64 03"},
		{"cut full", new(Encoder).Cut(CutFull).Bytes(), "1D 56 00"},
		{"cut partial", new(Encoder).Cut(CutPartial).Bytes(), "1D 56 01"},
		{"feed cut full", new(Encoder).FeedCut(CutFull, 3).Bytes(), "1D 56 41 03"},
		{"feed cut partial", new(Encoder).FeedCut(CutPartial, 0).Bytes(), "1D 56 42 00"},
		{"drawer", new(Encoder).OpenDrawer().Bytes(), "1B 70 00 19 78"},
		{"drawer pin 5", new(Encoder).Drawer(DrawerPin5, 10, 20).Bytes(), "1B 70 01 0A 14"},
		{"beep epson", new(Encoder).BeepEpson(2).Bytes(), "1B 28 41 04 00 30 31 02 0A"},
		{"beep clone", new(Encoder).BeepClone(3, 2).Bytes(), "1B 42 03 02"},
		{"barcode height", new(Encoder).BarcodeHeight(80).Bytes(), "1D 68 50"},
		{"barcode width", new(Encoder).BarcodeWidth(2).Bytes(), "1D 77 02"},
		{"barcode hri", new(Encoder).BarcodeHRI(HRIBelow).Bytes(), "1D 48 02"},
		{"code128", new(Encoder).Barcode(CODE128, "A{1").Bytes(), "1D 6B 49 06 7B 42 41 7B 7B 31"},
		{"code39", new(Encoder).Barcode(CODE39, "AB-1").Bytes(), "1D 6B 45 04 41 42 2D 31"},
		{"ean13 12 digits", new(Encoder).Barcode(EAN13, "400638133393").Bytes(), "1D 6B 43 0C 34 30 30 36 33 38 31 33 33 33 39 33"},
		{"ean13 with check", new(Encoder).Barcode(EAN13, "4006381333931").Bytes(), "1D 6B 43 0D 34 30 30 36 33 38 31 33 33 33 39 33 31"},
		{"qr model", new(Encoder).QRModel().Bytes(), "1D 28 6B 04 00 31 41 32 00"},
		{"qr size", new(Encoder).QRSize(6).Bytes(), "1D 28 6B 03 00 31 43 06"},
		{"qr level", new(Encoder).QRErrorLevel(QRLevelM).Bytes(), "1D 28 6B 03 00 31 45 31"},
		{"qr store", new(Encoder).QRStore([]byte("ab")).Bytes(), "1D 28 6B 05 00 31 50 30 61 62"},
		{"qr print", new(Encoder).QRPrint().Bytes(), "1D 28 6B 03 00 31 51 30"},
		{"qr all", new(Encoder).QR([]byte("x"), 4, QRLevelL).Bytes(),
			"1D 28 6B 04 00 31 41 32 00 1D 28 6B 03 00 31 43 04 1D 28 6B 03 00 31 45 30 1D 28 6B 04 00 31 50 30 78 1D 28 6B 03 00 31 51 30"},
		{"raster", new(Encoder).Raster(2, 1, []byte{0x80, 0x01}).Bytes(), "1D 76 30 00 02 00 01 00 80 01"},
		{"dle eot 1", RealTimeStatus(QueryPrinter), "10 04 01"},
		{"dle eot 4", RealTimeStatus(QueryPaper), "10 04 04"},
		{"gs r 1", TransmitStatus(TransmitPaper), "1D 72 01"},
		{"gs r 2", TransmitStatus(TransmitDrawer), "1D 72 02"},
		{"gs a", AutoStatusBack(0x0F), "1D 61 0F"},
		{"gs i", PrinterID(InfoModel), "1D 49 43"},
		{"gs ( h", pid, "1D 28 48 06 00 30 30 41 62 30 7E"},
	}
	for _, c := range cases {
		if want := hexBytes(t, c.want); !bytes.Equal(c.got, want) {
			t.Errorf("%s: got % X, want % X", c.name, c.got, want)
		}
	}
}

// TestQRStoreLength ensures pL/pH carry len+3 across the 256 boundary.
func TestQRStoreLength(t *testing.T) {
	data := bytes.Repeat([]byte{'a'}, 300)
	got := new(Encoder).QRStore(data).Bytes()
	if got[3] != byte(303&0xFF) || got[4] != byte(303>>8) || len(got) != 8+300 {
		t.Fatalf("store header % X, len %d", got[:8], len(got))
	}
}

// TestEncoderRejects ensures invalid arguments become errors, append nothing,
// and make the Encoder sticky so no half command follows.
func TestEncoderRejects(t *testing.T) {
	cases := []struct {
		name string
		f    func(e *Encoder)
		msg  string
	}{
		{"size 0", func(e *Encoder) { e.Size(0, 1) }, "out of range 1..8"},
		{"size 9", func(e *Encoder) { e.Size(2, 9) }, "out of range 1..8"},
		{"qr size 17", func(e *Encoder) { e.QRSize(17) }, "qr size 17 out of range 1..16"},
		{"qr size 0 in QR", func(e *Encoder) { e.QR([]byte("x"), 0, QRLevelM) }, "qr size 0"},
		{"qr empty", func(e *Encoder) { e.QR(nil, 3, QRLevelM) }, "empty"},
		{"qr too long", func(e *Encoder) { e.QR(bytes.Repeat([]byte{'a'}, 2332), 3, QRLevelM) }, "2331"},
		{"qr level", func(e *Encoder) { e.QRErrorLevel(7) }, "error level"},
		{"feed 256", func(e *Encoder) { e.Feed(256) }, "out of range"},
		{"code page", func(e *Encoder) { e.CodePage(-1) }, "code page"},
		{"align", func(e *Encoder) { e.Align(3) }, "alignment"},
		{"cut", func(e *Encoder) { e.Cut(2) }, "cut kind"},
		{"barcode width", func(e *Encoder) { e.BarcodeWidth(7) }, "2..6"},
		{"barcode height", func(e *Encoder) { e.BarcodeHeight(0) }, "1..255"},
		{"code128 control", func(e *Encoder) { e.Barcode(CODE128, "A\x1bp") }, "not in printable ASCII"},
		{"code128 non-ascii", func(e *Encoder) { e.Barcode(CODE128, "单号") }, "not in printable ASCII"},
		{"code128 empty", func(e *Encoder) { e.Barcode(CODE128, "") }, "empty"},
		{"code39 lower", func(e *Encoder) { e.Barcode(CODE39, "abc") }, "not in 0-9 A-Z"},
		{"ean13 letters", func(e *Encoder) { e.Barcode(EAN13, "40063813339X") }, "12 or 13 digits"},
		{"ean13 check", func(e *Encoder) { e.Barcode(EAN13, "4006381333932") }, "check digit is 2, want 1"},
		{"itf odd", func(e *Encoder) { e.Barcode(ITF, "123") }, "even number"},
		{"beep", func(e *Encoder) { e.BeepClone(10, 1) }, "1..9"},
		{"beep epson", func(e *Encoder) { e.BeepEpson(0) }, "1..63"},
		{"raster size", func(e *Encoder) { e.Raster(2, 2, []byte{1}) }, "want 2×2"},
		{"drawer pin", func(e *Encoder) { e.Drawer(2, 1, 1) }, "pin"},
	}
	for _, c := range cases {
		e := new(Encoder).Init()
		c.f(e)
		e.Bold(true) // must be ignored after the error
		if e.Err() == nil || !strings.Contains(e.Err().Error(), c.msg) {
			t.Errorf("%s: err %v, want it to mention %q", c.name, e.Err(), c.msg)
		}
		if !bytes.Equal(e.Bytes(), []byte{0x1B, 0x40}) {
			t.Errorf("%s: bytes % X after error, want only the init before it", c.name, e.Bytes())
		}
	}
	if _, err := ProcessID([4]byte{'a', 0x10, 'b', 'c'}); err == nil {
		t.Error("ProcessID accepted a DLE byte in the id")
	}
}

// TestGS1Check ensures the check digit matches published examples.
func TestGS1Check(t *testing.T) {
	for digits, want := range map[string]byte{"400638133393": '1', "9638507": '4', "03600029145": '2'} {
		if got := gs1Check(digits); got != want {
			t.Errorf("gs1Check(%s) = %c, want %c", digits, got, want)
		}
	}
}

// TestParseSymbology ensures names round-trip and unknown names list the
// supported ones.
func TestParseSymbology(t *testing.T) {
	for s := range symbologyNames {
		got, err := ParseSymbology(strings.ToLower(s.String()))
		if err != nil || got != s {
			t.Errorf("ParseSymbology(%v) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseSymbology("PDF417"); err == nil || !strings.Contains(err.Error(), "CODE128") {
		t.Errorf("unknown type error %v", err)
	}
}
