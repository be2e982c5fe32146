package decode

import (
	"testing"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
)

// TestEuroCodePages ensures "€3.80" is never drawn as "╒3.80": a third-party
// encoder selected WPC1252 (ESC t 16) or PC858 (ESC t 19) and sent the byte
// of € in that table; read as PC437 the PC858 byte 0xD5 is ╒.
func TestEuroCodePages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream string
	}{
		{"WPC1252", "\x1bt\x10\x803.80\n"},
		{"PC858", "\x1bt\x13\xd53.80\n"},
		{"WPC1250", "\x1bt\x2d\x803.80\n"},
		{"ISO8859-15", "\x1bt\x28\xa43.80\n"},
	} {
		_, p, _ := Decode([]byte(tc.stream), false)
		if len(p.Lines) != 1 || p.Lines[0] != "€3.80" {
			t.Errorf("%s: lines %q, want [€3.80]", tc.name, p.Lines)
		}
	}
	// ESC @ goes back to PC437, where 0xD5 is ╒.
	_, p, _ := Decode([]byte("\x1bt\x13\x1b@\xd53.80\n"), false)
	if p.Lines[0] != "╒3.80" {
		t.Errorf("after ESC @: %q", p.Lines[0])
	}
}

// TestCodePageTables checks every table of ESC t against the published
// mapping: the charmap tables for each byte, and the katakana page against
// the JIS X 0201 half of Shift_JIS.
func TestCodePageTables(t *testing.T) {
	want := map[byte]*charmap.Charmap{
		0: charmap.CodePage437, 2: charmap.CodePage850, 3: charmap.CodePage860,
		4: charmap.CodePage863, 5: charmap.CodePage865, 16: charmap.Windows1252,
		17: charmap.CodePage866, 18: charmap.CodePage852, 19: charmap.CodePage858,
		45: charmap.Windows1250, 46: charmap.Windows1251, 47: charmap.Windows1253,
		48: charmap.Windows1254, 49: charmap.Windows1255, 50: charmap.Windows1256,
		51: charmap.Windows1257, 52: charmap.Windows1258,
		// Numbers with no table here print as PC437.
		6: charmap.CodePage437, 255: charmap.CodePage437,
	}
	for n, cm := range want {
		for c := 0x80; c <= 0xFF; c++ {
			_, p, _ := Decode([]byte{0x1B, 't', n, byte(c), '\n'}, false)
			if r := []rune(p.Lines[0]); len(r) != 1 || r[0] != cm.DecodeByte(byte(c)) {
				t.Fatalf("ESC t %d, byte %#x: %q, want %q", n, c, p.Lines[0], cm.DecodeByte(byte(c)))
			}
		}
	}
	sjis := japanese.ShiftJIS.NewDecoder()
	for c := 0x80; c <= 0xFF; c++ {
		_, p, _ := Decode([]byte{0x1B, 't', 1, byte(c), '\n'}, false)
		if c < 0xA1 || c > 0xDF {
			if p.Lines[0] != "\uFFFD" {
				t.Errorf("katakana byte %#x: %q, want U+FFFD", c, p.Lines[0])
			}
			continue
		}
		w, err := sjis.Bytes([]byte{byte(c)})
		if err != nil || p.Lines[0] != string(w) {
			t.Errorf("katakana byte %#x: %q, want %q (%v)", c, p.Lines[0], w, err)
		}
	}
}

// TestDoubleByte checks FS & / FS . and the double-byte encodings: GB18030
// by default (2 and 4 bytes), Big5 and Shift_JIS as options.
func TestDoubleByte(t *testing.T) {
	for _, tc := range []struct {
		o      Options
		stream string
		want   string
	}{
		{Options{}, "\x1c&\xc4\xe3\xba\xc3\x81\x30\x81\x30\x1c.\x1bt\x10\x80\n", "你好\u0080€"},
		{Options{PowerOnCJK: true}, "\xc4\xe3\n", "你"},
		{Options{PowerOnCJK: true}, "\x1c.\xc4\n", "─"},
		{Options{DoubleByte: Big5}, "\x1c&\xa4\xa4\xa4\xe5\n", "中文"},
		{Options{DoubleByte: ShiftJIS}, "\x1c&\x93\xfa\x96\x7b\xb1\n", "日本ｱ"},
	} {
		_, p, inc := DecodeWith([]byte(tc.stream), tc.o)
		if inc != 0 || len(p.Lines) != 1 || p.Lines[0] != tc.want {
			t.Errorf("%+v %q: lines %q (incomplete %d), want %q", tc.o, tc.stream, p.Lines, inc, tc.want)
		}
	}
	// A lone lead byte at the end waits for the rest.
	if _, _, inc := DecodeWith([]byte("\x1c&\xa4"), Options{DoubleByte: Big5}); inc != 1 {
		t.Errorf("lone Big5 lead byte: incomplete %d", inc)
	}
}

// TestJISMode ensures FS C selects a Japanese printer's Kanji code: with
// FS C 0 (JIS) Kanji mode reads pairs of 7-bit bytes (日本 is 46 7C 4B 5C),
// FS C 1 goes back to Shift JIS, and ESC @ forgets FS C. A GB18030
// printer is not affected.
func TestJISMode(t *testing.T) {
	sjis := Options{DoubleByte: ShiftJIS}
	cases := []struct {
		o    Options
		in   string
		want string
	}{
		{sjis, "\x1c&\x1cC\x00\x46\x7c\x4b\x5c\n", "日本"},
		{sjis, "\x1c&\x1cC0\x46\x7c\x4b\x5c\n", "日本"},
		{sjis, "\x1c&\x1cC\x00\x1cC\x01\x93\xfa\x96\x7b\n", "日本"},
		{sjis, "\x1c&\x1cC\x00\x1b@\x1c&\x46\x7c\n", "F|"}, // ESC @: Shift JIS again, 7-bit bytes are ASCII
		{sjis, "\x1c&\x1cC\x00\x46\n", "\uFFFD"},           // half a character, then LF: a broken character
		{Options{}, "\x1c&\x1cC\x00\x46\x7c\n", "F|"},      // GB18030: FS C means nothing
	}
	for _, c := range cases {
		_, p, _ := DecodeWith([]byte(c.in), c.o)
		if len(p.Lines) == 0 || p.Lines[0] != c.want {
			t.Errorf("%q (%v): %q, want %q", c.in, c.o.DoubleByte, p.Lines, c.want)
		}
	}
}
