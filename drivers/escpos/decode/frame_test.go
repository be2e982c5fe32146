package decode

import (
	"bytes"
	"strings"
	"testing"
)

// TestUnfinished ensures the framing reports a stream that ends inside a
// command (with its offset, name and bytes) and no other.
func TestUnfinished(t *testing.T) {
	for _, c := range []struct {
		name   string
		stream []byte
		o      Options
		want   string // Partial.String, or "" when the stream ends cleanly
	}{
		{"clean", []byte("HELLO\n\x1dV\x00"), Options{}, ""},
		{"empty", nil, Options{}, ""},
		{"QR store cut", append([]byte("AB\n"), 0x1d, 0x28, 0x6b, 0x00, 0x01), Options{}, "GS ( k at offset 3 (1d 28 6b 00 01)"},
		{"lone ESC", []byte("A\x1b"), Options{}, "ESC at offset 1 (1b)"},
		{"ESC t", []byte("\x1bt"), Options{}, "ESC t at offset 0 (1b 74)"},
		{"raster cut", append([]byte{0x1d, 'v', '0', 0, 1, 0, 2, 0}, 0xff), Options{}, "GS v at offset 0 (1d 76 30 00 01 00 02 00 ff)"},
		{"GB18030 lead byte", []byte("\x1c&\xd6"), Options{}, "a double-byte character at offset 2 (d6)"},
		{"lead byte, single-byte mode", []byte("\xd6"), Options{}, ""},
		{"after many commands", append(bytes.Repeat([]byte("x\n\x1bd\x05"), 3000), 0x1b, '*', 0, 10), Options{}, "ESC * at offset 15000 (1b 2a 00 0a)"},
		{"Kanji mode kept across the forget", append(append([]byte("\x1c&"), bytes.Repeat([]byte("\n"), 5000)...), 0xd6), Options{}, "a double-byte character at offset 5002 (d6)"},
	} {
		p, ok := Unfinished(c.stream, c.o)
		got := ""
		if ok {
			got = p.String()
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	long := append([]byte{0x1d, 'v', '0', 0, 100, 0, 100, 0}, bytes.Repeat([]byte{1}, 40)...)
	if p, ok := Unfinished(long, Options{}); !ok || len(p.Head) != 16 || p.Len != 48 || !strings.HasSuffix(p.String(), " …)") {
		t.Errorf("long partial: %+v %q", p, p.String())
	}
}
