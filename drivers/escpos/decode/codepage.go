package decode

import (
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// codePages maps ESC t n to the single-byte table it selects, in Epson's
// numbering (ESC/POS "Select character code table"). The numbers are the
// ones the Epson column of the npm encoder family uses, e.g. esc-pos-encoder's
// codepageMappings.epson (cp437 0, cp850 2, cp860 3, cp863 4, cp865 5,
// iso88597 15, windows1252 16, cp866 17, cp852 18, cp858 19, cp855 34,
// cp862 36, iso88592 39, iso885915 40, windows1250..1258 45..52; seen in
// github.com/jhonwj/app-restaurante-v2, a bundled copy of it), and agree
// with the project's own profiles (profile.go: WPC1252 16, PC437 0).
// Only the tables golang.org/x/text has are here; n = 1 is katakana
// (katakanaRune), and other numbers (PC737, PC857, Thai, ...) print as
// PC437, the table every printer has at 0.
var codePages = map[byte]*charmap.Charmap{
	0:  charmap.CodePage437,
	2:  charmap.CodePage850,
	3:  charmap.CodePage860,
	4:  charmap.CodePage863,
	5:  charmap.CodePage865,
	15: charmap.ISO8859_7,
	16: charmap.Windows1252,
	17: charmap.CodePage866,
	18: charmap.CodePage852,
	19: charmap.CodePage858,
	34: charmap.CodePage855,
	36: charmap.CodePage862,
	39: charmap.ISO8859_2,
	40: charmap.ISO8859_15,
	45: charmap.Windows1250,
	46: charmap.Windows1251,
	47: charmap.Windows1253,
	48: charmap.Windows1254,
	49: charmap.Windows1255,
	50: charmap.Windows1256,
	51: charmap.Windows1257,
	52: charmap.Windows1258,
}

// codePageKatakana is ESC t 1: JIS X 0201, whose upper half holds the
// half-width katakana.
const codePageKatakana = 1

// singleByteRune is what byte c (0x80..0xFF) prints in code table n.
func singleByteRune(n, c byte) rune {
	if n == codePageKatakana {
		return katakanaRune(c)
	}
	cm := codePages[n]
	if cm == nil {
		cm = charmap.CodePage437
	}
	return cm.DecodeByte(c)
}

// katakanaRune decodes the upper half of JIS X 0201: 0xA1..0xDF are the
// half-width katakana U+FF61..U+FF9F in order. Epson's katakana table puts
// block graphics at 0x80..0xA0 and 0xE0..0xFF, which have no Unicode
// equivalents one for one; they decode as U+FFFD.
func katakanaRune(c byte) rune {
	if c >= 0xA1 && c <= 0xDF {
		return 0xFF61 + rune(c-0xA1)
	}
	return utf8.RuneError
}

// DoubleByte is the character encoding of Kanji mode (FS &): which
// double-byte set the printer's firmware has.
type DoubleByte int

// Double-byte encodings.
const (
	// GB18030 is the Chinese firmware of Xprinter and most clones: 2 bytes,
	// or 4 when the second byte is a digit.
	GB18030 DoubleByte = iota
	// Big5 is traditional Chinese firmware: lead byte 0x81..0xFE, 2 bytes.
	Big5
	// ShiftJIS is Japanese firmware (FS C 1): lead byte 0x81..0x9F or
	// 0xE0..0xFC, 2 bytes; 0xA1..0xDF are single half-width katakana.
	ShiftJIS
)

// String names the encoding.
func (e DoubleByte) String() string {
	switch e {
	case Big5:
		return "Big5"
	case ShiftJIS:
		return "Shift_JIS"
	}
	return "GB18030"
}

func (e DoubleByte) encoding() encoding.Encoding {
	switch e {
	case Big5:
		return traditionalchinese.Big5
	case ShiftJIS:
		return japanese.ShiftJIS
	}
	return simplifiedchinese.GB18030
}

// charLen is the length of the character at the start of b in e (b[0] is
// 0x80 or more), or 0 when it is not a lead byte and prints as U+FFFD.
func (e DoubleByte) charLen(b []byte) int {
	c := b[0]
	switch e {
	case Big5:
		if c == 0x80 || c == 0xFF {
			return 0
		}
		return 2
	case ShiftJIS:
		switch {
		case c >= 0xA1 && c <= 0xDF:
			return 1
		case c >= 0x81 && c <= 0x9F, c >= 0xE0 && c <= 0xFC:
			return 2
		}
		return 0
	}
	if c == 0x80 || c == 0xFF {
		return 0
	}
	if len(b) >= 2 && b[1] >= 0x30 && b[1] <= 0x39 {
		return 4
	}
	return 2
}

// doubleByte prints one character in Kanji mode.
func (d *Decoder) doubleByte(b []byte) int {
	if b[0] != 0x80 && b[0] != 0xFF && d.dbcs == GB18030 && len(b) < 2 {
		return 0 // the second byte says whether it is 2 or 4 long
	}
	n := d.dbcs.charLen(b)
	if n == 0 {
		d.text("\uFFFD")
		return 1
	}
	if len(b) < n {
		return 0
	}
	s, err := d.dbcs.encoding().NewDecoder().Bytes(b[:n])
	if err != nil || !utf8.Valid(s) || len(s) == 0 {
		d.text("\uFFFD")
		return n
	}
	d.text(string(s))
	return n
}
