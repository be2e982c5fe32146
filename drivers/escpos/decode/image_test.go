package decode

import (
	"bytes"
	"testing"
)

// TestBitImageBands ensures a logo sent as ESC * bands, each followed by the
// feed under it, is one image of the whole height with its dots (columns
// turned into rows), not a band per row with blank rows in between; and
// that a band of another width starts another image.
func TestBitImageBands(t *testing.T) {
	band24 := func(cols int, col [3]byte) string {
		s := "\x1b*\x21" + string([]byte{byte(cols), 0})
		for range cols {
			s += string(col[:])
		}
		return s
	}
	s := "\x1ba\x01\x1b3\x00" +
		band24(10, [3]byte{0x80, 0, 0x01}) + "\n" +
		band24(10, [3]byte{0xFF, 0xFF, 0xFF}) + "\x1bJ\x00" +
		"\x1b*\x01\x03\x00\xaa\xaa\xaa\n" + // 8-dot band, 3 columns: a new image
		"after\n"
	_, p, inc := Decode([]byte(s), false)
	if inc != 0 {
		t.Fatalf("incomplete %d", inc)
	}
	if len(p.Items) != 3 || p.Items[0].Kind != KindImage || p.Items[1].Kind != KindImage || p.Items[2].Kind != KindText {
		t.Fatalf("items %+v", p.Items)
	}
	if len(p.Lines) != 1 || p.Lines[0] != "after" {
		t.Errorf("lines %q: blank rows between bands?", p.Lines)
	}
	im := p.Items[0].Image
	if im.Width != 10 || im.Height != 48 || im.Stride != 2 || im.Align != 1 || len(im.Bits) != 2*48 {
		t.Fatalf("logo %dx%d stride %d align %d, %d bytes", im.Width, im.Height, im.Stride, im.Align, len(im.Bits))
	}
	row := func(y int) []byte { return im.Bits[y*2 : y*2+2] }
	for y := range 48 {
		want := []byte{0, 0}
		if y == 0 || y == 23 || y >= 24 {
			want = []byte{0xFF, 0xC0} // 10 dots
		}
		if !bytes.Equal(row(y), want) {
			t.Fatalf("row %d: % x, want % x", y, row(y), want)
		}
	}
	// ESC * 1 is 8-dot double density: each dot is three dots tall on
	// paper (about 67 dpi down a 203 dpi head).
	im = p.Items[1].Image
	var want8 []byte
	for _, r := range []byte{0xE0, 0, 0xE0, 0, 0xE0, 0, 0xE0, 0} {
		want8 = append(want8, r, r, r)
	}
	if im.Width != 3 || im.Height != 24 || !bytes.Equal(im.Bits, want8) {
		t.Errorf("8-dot band %+v", im)
	}
	if len(p.Images) != 3 {
		t.Errorf("Images lists %d bands, want 3 (one per command)", len(p.Images))
	}
}

// TestBitImageDensity ensures each ESC * mode is drawn at its size on
// paper: single density (m 0, 32) doubles every column, the 8-dot modes
// (m 0, 1) triple every dot's height, 24-dot double density (m 33) is as
// sent.
func TestBitImageDensity(t *testing.T) {
	for _, c := range []struct {
		m    byte
		data string
		w, h int
		row0 []byte // the first row's bits
	}{
		{0, "\x80\x00", 4, 24, []byte{0xC0}},                       // 2 columns, the first dot doubled
		{1, "\x80\x00", 2, 24, []byte{0x80}},                       // 2 columns as sent
		{32, "\x80\x00\x00" + "\x00\x00\x00", 4, 24, []byte{0xC0}}, // 2 columns doubled
		{33, "\x80\x00\x00" + "\x00\x00\x00", 2, 24, []byte{0x80}},
	} {
		cols := 2
		s := "\x1b*" + string([]byte{c.m, byte(cols), 0}) + c.data + "\n"
		_, p, inc := Decode([]byte(s), false)
		if inc != 0 || len(p.Items) == 0 || p.Items[0].Kind != KindImage {
			t.Fatalf("m=%d: incomplete %d items %+v", c.m, inc, p.Items)
		}
		im := p.Items[0].Image
		if im.Width != c.w || im.Height != c.h || !bytes.Equal(im.Bits[:im.Stride], c.row0) {
			t.Errorf("ESC * %d: %dx%d first row % x, want %dx%d % x", c.m, im.Width, im.Height, im.Bits[:im.Stride], c.w, c.h, c.row0)
		}
		if c.m <= 1 && !bytes.Equal(im.Bits[2*im.Stride:3*im.Stride], c.row0) {
			t.Errorf("ESC * %d: the top dot is not three rows tall: % x", c.m, im.Bits)
		}
		if p.Images[0].Width != c.w || p.Images[0].Height != c.h {
			t.Errorf("ESC * %d: Images lists %+v", c.m, p.Images[0])
		}
	}
}

// TestGraphics ensures GS ( L raster graphics print when fn 50 prints what
// fn 112 stored, once, as one image of the stored size; bands of the same
// width join; and graphics stored but never printed, or cleared by ESC @,
// do not print.
func TestGraphics(t *testing.T) {
	store := func(w, h int, fill byte) string {
		stride := (w + 7) / 8
		body := "0p0\x01\x011" + string([]byte{byte(w), byte(w >> 8), byte(h), byte(h >> 8)}) + string(bytes.Repeat([]byte{fill}, stride*h))
		return "\x1d(L" + string([]byte{byte(len(body)), byte(len(body) >> 8)}) + body
	}
	const print = "\x1d(L\x02\x0002"
	s := "text" + store(16, 2, 0xFF) + "\n" + // stored, not printed yet
		print + store(16, 3, 0x0F) + print + // two bands: one image
		print + // nothing stored any more
		store(8, 1, 0x01) + "\x1b@" + print + // cleared by ESC @
		store(12, 1, 0x80) + "\x1d8L\x02\x00\x00\x0002" // GS 8 L print
	_, p, inc := Decode([]byte(s), false)
	if inc != 0 || len(p.Unknown) != 0 {
		t.Fatalf("incomplete %d unknown %+v", inc, p.Unknown)
	}
	if len(p.Items) != 3 || p.Items[0].Kind != KindText || p.Items[1].Kind != KindImage || p.Items[2].Kind != KindImage {
		t.Fatalf("items %+v", p.Items)
	}
	im := p.Items[1].Image
	want := append(bytes.Repeat([]byte{0xFF}, 4), bytes.Repeat([]byte{0x0F}, 6)...)
	if im.Width != 16 || im.Height != 5 || im.Stride != 2 || !bytes.Equal(im.Bits, want) {
		t.Errorf("graphics %+v", im)
	}
	if im := p.Items[2].Image; im.Width != 12 || im.Height != 1 || !bytes.Equal(im.Bits, []byte{0x80, 0x80}) {
		t.Errorf("GS 8 L graphics %+v", im)
	}
	if len(p.Images) != 3 {
		t.Errorf("Images lists %d, want 3 (one per print)", len(p.Images))
	}
}
