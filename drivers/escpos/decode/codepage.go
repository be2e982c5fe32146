package decode

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// CodeTables names a printer maker's ESC t numbering: which single-byte
// table each n of "Select character code table" selects. Makers agree on
// 0..5 and 16..19 and disagree elsewhere (ESC t 7 is Windows-1253 on an
// Xprinter and undefined on an Epson), so a stream is read with the
// numbering of the printer it was written for.
type CodeTables string

// The numberings the decoder knows. The zero value is Epson's, which most
// ESC/POS printers follow.
const (
	TablesEpson    CodeTables = "epson"
	TablesXprinter CodeTables = "xprinter"
)

// String names the numbering.
func (c CodeTables) String() string {
	if c == "" {
		return string(TablesEpson)
	}
	return string(c)
}

// byteTable is one single-byte code page: what each byte 0x80..0xFF prints.
type byteTable interface {
	DecodeByte(b byte) rune
}

// runeTable is a code page golang.org/x/text/encoding/charmap does not
// have: the runes of bytes 0x80..0xFF, U+FFFD where the page is undefined.
// The tables themselves are in tables_gen.go (from the glibc charmaps) and
// below (CP853, from GNU libiconv's cp853.h, which glibc lacks); every one
// is checked against a second published mapping in TestCodePagesPublished.
type runeTable [128]rune

// DecodeByte returns what byte b prints.
func (t *runeTable) DecodeByte(b byte) rune {
	if b < 0x80 {
		return rune(b)
	}
	return t[b-0x80]
}

// katakana is JIS X 0201 as an ESC t table (katakanaRune).
type katakana struct{}

// DecodeByte returns what byte b prints.
func (katakana) DecodeByte(b byte) rune {
	if b < 0x80 {
		return rune(b)
	}
	return katakanaRune(b)
}

// numberings maps each maker's ESC t n to the table it selects. The
// numbers are those of the npm receipt-printer-encoder's codepageMappings
// (testdata/codepages/numbering.txt, read back from the ESC t bytes it
// sends), which TestCodePagesPublished compares with these maps; they agree
// with the project's own profiles (profile.go: Epson WPC1252 16, PC437 0).
// Numbers with no table here (Thai, TCVN-3, cp720, cp864, ...) print as
// PC437, the table every printer has at 0.
var numberings = map[CodeTables]map[byte]byteTable{
	TablesEpson: {
		0:  charmap.CodePage437,
		1:  katakana{},
		2:  charmap.CodePage850,
		3:  charmap.CodePage860,
		4:  charmap.CodePage863,
		5:  charmap.CodePage865,
		12: &cp853,
		13: &cp857Printer,
		14: &cp737,
		15: charmap.ISO8859_7,
		16: charmap.Windows1252,
		17: charmap.CodePage866,
		18: charmap.CodePage852,
		19: charmap.CodePage858,
		33: &cp775,
		34: charmap.CodePage855,
		35: &cp861,
		36: charmap.CodePage862,
		38: &cp869,
		39: charmap.ISO8859_2,
		40: charmap.ISO8859_15,
		43: &cp772,
		45: charmap.Windows1250,
		46: charmap.Windows1251,
		47: charmap.Windows1253,
		48: charmap.Windows1254,
		49: charmap.Windows1255,
		50: charmap.Windows1256,
		51: charmap.Windows1257,
		52: charmap.Windows1258,
	},
	TablesXprinter: {
		0:  charmap.CodePage437,
		1:  katakana{},
		2:  charmap.CodePage850,
		3:  charmap.CodePage860,
		4:  charmap.CodePage863,
		5:  charmap.CodePage865,
		6:  charmap.ISO8859_1,
		7:  charmap.Windows1253,
		11: charmap.Windows1255,
		16: charmap.Windows1252,
		17: charmap.CodePage866,
		18: charmap.CodePage852,
		19: charmap.CodePage858,
		23: charmap.Windows1251,
		24: &cp737,
		25: charmap.Windows1257,
		33: charmap.Windows1256,
	},
}

// KnownCodeTables reports whether c is a numbering the decoder has.
func KnownCodeTables(c CodeTables) bool {
	_, ok := numberings[c]
	return ok || c == ""
}

// table returns the single-byte table ESC t n selects in numbering c.
func (c CodeTables) table(n byte) byteTable {
	m := numberings[c]
	if m == nil {
		m = numberings[TablesEpson]
	}
	if t := m[n]; t != nil {
		return t
	}
	return charmap.CodePage437
}

// cp853 is CP853, Latin-3 (Turkish, Maltese, Esperanto), bytes 0x80..0xFF,
// as GNU libiconv's lib/cp853.h maps it (glibc has no CP853).
var cp853 = runeTable{
	0x00C7, 0x00FC, 0x00E9, 0x00E2, 0x00E4, 0x00E0, 0x0109, 0x00E7,
	0x00EA, 0x00EB, 0x00E8, 0x00EF, 0x00EE, 0x00EC, 0x00C4, 0x0108,
	0x00C9, 0x010B, 0x010A, 0x00F4, 0x00F6, 0x00F2, 0x00FB, 0x00F9,
	0x0130, 0x00D6, 0x00DC, 0x011D, 0x00A3, 0x011C, 0x00D7, 0x0135,
	0x00E1, 0x00ED, 0x00F3, 0x00FA, 0x00F1, 0x00D1, 0x011E, 0x011F,
	0x0124, 0x0125, 0xFFFD, 0x00BD, 0x0134, 0x015F, 0x00AB, 0x00BB,
	0x2591, 0x2592, 0x2593, 0x2502, 0x2524, 0x00C1, 0x00C2, 0x00C0,
	0x015E, 0x2563, 0x2551, 0x2557, 0x255D, 0x017B, 0x017C, 0x2510,
	0x2514, 0x2534, 0x252C, 0x251C, 0x2500, 0x253C, 0x015C, 0x015D,
	0x255A, 0x2554, 0x2569, 0x2566, 0x2560, 0x2550, 0x256C, 0x00A4,
	0xFFFD, 0xFFFD, 0x00CA, 0x00CB, 0x00C8, 0x0131, 0x00CD, 0x00CE,
	0x00CF, 0x2518, 0x250C, 0x2588, 0x2584, 0xFFFD, 0x00CC, 0x2580,
	0x00D3, 0x00DF, 0x00D4, 0x00D2, 0x0120, 0x0121, 0x00B5, 0x0126,
	0x0127, 0x00DA, 0x00DB, 0x00D9, 0x016C, 0x016D, 0xFFFD, 0x00B4,
	0x00AD, 0xFFFD, 0x2113, 0x0149, 0x02D8, 0x00A7, 0x00F7, 0x00B8,
	0x00B0, 0x00A8, 0x02D9, 0xFFFD, 0x00B3, 0x00B2, 0x25A0, 0x00A0,
}

// cp857Printer is CP857 as Epson printers have it: the IBM page with the
// euro sign added at 0xD5, which the DOS table leaves undefined (IBM's
// CCSID 858-style update; receipt-printer-encoder sends "€" there).
var cp857Printer = func() runeTable {
	t := cp857
	t[0xD5-0x80] = '€'
	return t
}()

// singleByteRune is what byte c (0x80..0xFF) prints in code table n of
// numbering tables.
func singleByteRune(tables CodeTables, n, c byte) rune {
	return tables.table(n).DecodeByte(c)
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

// ParseDoubleByte reads a double-byte encoding's name as String writes it
// (case-insensitive; "sjis" and "shift-jis" too).
func ParseDoubleByte(s string) (DoubleByte, error) {
	switch strings.ToLower(s) {
	case "gb18030":
		return GB18030, nil
	case "big5":
		return Big5, nil
	case "shift_jis", "shift-jis", "sjis":
		return ShiftJIS, nil
	}
	return GB18030, fmt.Errorf("unknown double-byte encoding %q (want GB18030, Big5 or Shift_JIS)", s)
}

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

// FontName is how an Epson printer with this Kanji font names it in its
// answer to GS I 69: "CHINA GB18030", "TAIWAN BIG-5" or "KANJI JAPANESE".
// POS drivers read it to choose the encoding of their text.
func (e DoubleByte) FontName() string {
	switch e {
	case Big5:
		return "TAIWAN BIG-5"
	case ShiftJIS:
		return "KANJI JAPANESE"
	}
	return "CHINA GB18030"
}

// Encoding is the set's golang.org/x/text codec, which both the decoder
// and the renderer use.
func (e DoubleByte) Encoding() encoding.Encoding {
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
	s, err := d.dbcs.Encoding().NewDecoder().Bytes(b[:n])
	if err != nil || !utf8.Valid(s) || len(s) == 0 {
		d.text("\uFFFD")
		return n
	}
	d.text(string(s))
	return n
}

// jisChar reads one JIS X 0208 character of a Japanese printer in JIS mode
// (FS C 0): two bytes 0x21..0x7E, which EUC-JP writes with the high bit set.
// A byte outside that range prints as itself.
func (d *Decoder) jisChar(b []byte) int {
	if b[0] < 0x21 || b[0] > 0x7E {
		d.text(string(rune(b[0])))
		return 1
	}
	if len(b) < 2 {
		return 0
	}
	if b[1] < 0x21 || b[1] > 0x7E {
		d.text("\uFFFD")
		return 1
	}
	s, err := japanese.EUCJP.NewDecoder().Bytes([]byte{b[0] | 0x80, b[1] | 0x80})
	if err != nil || !utf8.Valid(s) || len(s) == 0 {
		d.text("\uFFFD")
		return 2
	}
	d.text(string(s))
	return 2
}
