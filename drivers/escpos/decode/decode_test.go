package decode

import (
	"bytes"
	"reflect"
	"testing"
)

// TestStyles ensures every print mode command the renderers use is
// recorded on the characters it applies to.
func TestStyles(t *testing.T) {
	stream := []byte("plain\x1b!\x38BIG\x1b!\x00 \x1dB\x01inv\x1dB\x00\n" +
		"\x1ba\x01\x1d!\x11\x1bE\x01\x1b-\x01Title\x1b-\x00\x1bE\x00\x1d!\x00\n" +
		"\x1ba\x02right\n")
	tickets, pending, incomplete := Decode(stream, false)
	if len(tickets) != 0 || incomplete != 0 {
		t.Fatalf("%d tickets, %d incomplete", len(tickets), incomplete)
	}
	want := []Line{
		{Spans: []Span{
			{"plain", Style{W: 1, H: 1}},
			{"BIG", Style{W: 2, H: 2, Bold: true}},
			{" ", Style{W: 1, H: 1}},
			{"inv", Style{W: 1, H: 1, Inverted: true}},
		}},
		{Align: 1, Spans: []Span{{"Title", Style{W: 2, H: 2, Bold: true, Underline: true}}}},
		{Align: 2, Spans: []Span{{"right", Style{W: 1, H: 1}}}},
	}
	var got []Line
	for _, it := range pending.Items {
		if it.Kind != KindText {
			t.Fatalf("item %+v", it)
		}
		got = append(got, it.Line)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lines\n%+v\nwant\n%+v", got, want)
	}
	if !reflect.DeepEqual(pending.Lines, []string{"plainBIG inv", "Title", "right"}) {
		t.Errorf("Lines %q", pending.Lines)
	}
}

// TestSymbolsInOrder ensures symbols, images, beeps and drawer kicks come
// out in paper order with the settings in force, and that the bands of a
// tall raster image join into one image.
func TestSymbolsInOrder(t *testing.T) {
	band := func(rows int, fill byte) []byte {
		return append([]byte{0x1D, 0x76, 0x30, 0, 1, 0, byte(rows), 0}, bytes.Repeat([]byte{fill}, rows)...)
	}
	var s []byte
	s = append(s, "top\n\x1ba\x01"...)
	s = append(s, "\x1d(k\x03\x001C\x05\x1d(k\x05\x001P0hi\x1d(k\x03\x001Q0"...)
	s = append(s, "\x1dw\x02\x1dh\x50\x1dH\x02\x1dk\x49\x06{BAB{{"...)
	s = append(s, band(3, 0xF0)...)
	s = append(s, band(2, 0x0F)...)
	s = append(s, "\x1bB\x02\x03\x1bp\x00\x19\xfa\x1dVB\x03"...)
	tickets, _, _ := Decode(s, false)
	if len(tickets) != 1 || tickets[0].Cut != "partial" {
		t.Fatalf("tickets %+v", tickets)
	}
	items := tickets[0].Items
	kinds := []Kind{KindText, KindQR, KindBarcode, KindImage, KindBeep, KindDrawer}
	if len(items) != len(kinds) {
		t.Fatalf("%d items: %+v", len(items), items)
	}
	for i, k := range kinds {
		if items[i].Kind != k {
			t.Fatalf("item %d is %v, want %v", i, items[i].Kind, k)
		}
	}
	if q := items[1].QR; q != (QR{Data: "hi", Module: 5, Align: 1, Model: 2}) {
		t.Errorf("qr %+v", q)
	}
	if b := items[2].Barcode; b.Sym != 73 || string(b.Payload) != "{BAB{{" || b.Text != "AB{" || b.Module != 2 || b.Height != 80 || b.HRI != 2 || b.Align != 1 {
		t.Errorf("barcode %+v", b)
	}
	if im := items[3].Image; im.Width != 8 || im.Height != 5 || im.Stride != 1 || !bytes.Equal(im.Bits, []byte{0xF0, 0xF0, 0xF0, 0x0F, 0x0F}) {
		t.Errorf("image %+v", im)
	}
	if n := len(tickets[0].Images); n != 2 {
		t.Errorf("Images lists %d bands, want 2 (one per command, as before)", n)
	}
	if items[4].Beeps != 2 || items[5].Drawer.Pin != 2 {
		t.Errorf("beep %+v drawer %+v", items[4], items[5])
	}
}

// TestUnknownCommands ensures commands the decoder does not know are listed
// with their offsets, and known ones are not.
func TestUnknownCommands(t *testing.T) {
	s := []byte("ab\x1b\x7f\x01c\x1d\x7e\x02\x1bM\x01\x1d\x21\x00\x1c\x7e\x00")
	_, p, _ := Decode(s, false)
	want := []Unknown{{Offset: 2, Len: 3}, {Offset: 6, Len: 3}, {Offset: 15, Len: 3}}
	if !reflect.DeepEqual(p.Unknown, want) {
		t.Errorf("unknown %+v, want %+v", p.Unknown, want)
	}
}

// TestTabStopsEndLikeEpson ensures ESC D ends where an Epson ends it: at a
// NUL, or before a value not above the one before (then read as data), so
// ESC D 0x50 followed by GS ( E is two commands, as the printer runs them.
func TestTabStopsEndLikeEpson(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want int
	}{
		{[]byte{0x1B, 'D', 8, 16, 0, 'x'}, 5},
		{[]byte{0x1B, 'D', 0x50, 0x1D, '(', 'E'}, 3},
		{[]byte{0x1B, 'D', 8, 8}, 3},
		{[]byte{0x1B, 'D', 8, 16}, 0},
	} {
		if got := New(false).Step(c.in); got != c.want {
			t.Errorf("% x: %d bytes, want %d", c.in, got, c.want)
		}
	}
}

// TestKnown ensures Known tells the commands the decoder frames by their
// reference length from those it would only guess.
func TestKnown(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"\x1b@", true}, {"\x1d(k", true}, {"\x1dv0", true}, {"\x1c&", true}, {"A", true},
		{"\x1bZ", false}, {"\x1c?", false}, {"\x1dC", false}, {"\x1bf", false}, {"\x1dD", false},
	} {
		if got := Known([]byte(c.in)); got != c.want {
			t.Errorf("Known(% x) = %v, want %v", c.in, got, c.want)
		}
	}
}
