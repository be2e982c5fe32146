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
	im = p.Items[1].Image
	if im.Width != 3 || im.Height != 8 || !bytes.Equal(im.Bits, []byte{0xE0, 0, 0xE0, 0, 0xE0, 0, 0xE0, 0}) {
		t.Errorf("8-dot band %+v", im)
	}
	if len(p.Images) != 3 {
		t.Errorf("Images lists %d bands, want 3 (one per command)", len(p.Images))
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
