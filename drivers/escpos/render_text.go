package escpos

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/width"
)

// cleanText makes document text safe to print: it removes every C0 control,
// DEL, C1 control and invisible format character (zero-width space, bidi
// overrides, BOM), turns tabs into spaces and CR LF, CR and the Unicode line
// separators into "\n", which the layout treats as a row break, and composes
// accents (NFC) so "é" stays one character a code page can hold. After it,
// no byte of the text can be read by a printer as a command.
func cleanText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch {
		case r == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				continue
			}
			b.WriteByte('\n')
		case r == '\n' || r == '\u2028' || r == '\u2029':
			b.WriteByte('\n')
		case r == '\t' || r == '\v' || r == '\f':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7F || (r >= 0x80 && r <= 0x9F):
			// drop C0, DEL and C1 controls
		case unicode.Is(unicode.Cf, r):
			// drop invisible format characters
		default:
			b.WriteRune(r)
		}
	}
	return norm.NFC.String(b.String())
}

// cleanQR removes the control characters a printer could act on from QR
// data, keeping tab, LF and CR, which QR payloads (vCards, Wi-Fi) use and
// which are harmless inside the length-prefixed store command. DLE in
// particular must go: DLE EOT / DLE DC4 are real-time commands that the
// printer executes even in the middle of command data.
func cleanQR(s string) string {
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7F {
			return -1
		}
		return r
	}, s)
}

// qrLevel is the error correction level every QR line uses: M survives a
// smudged thermal print while keeping symbols small.
const qrLevel = QRLevelM

// fallbacks replace characters a code page lacks with look-alikes, so that an
// arrow or a typographic quote degrades to ASCII instead of "?".
var fallbacks = map[rune]string{
	'→': "->", '←': "<-", '—': "-", '–': "-", '‐': "-", '−': "-",
	'‘': "'", '’': "'", '‚': ",", '“': "\"", '”': "\"", '„': "\"",
	'…': "...", '·': ".", '•': "*", '×': "x", '\u00a0': " ", '\u3000': "  ",
	'€': "EUR", '¥': "Y", '￥': "Y",
}

// codec produces the printed form of text for one profile: which characters
// survive, how many columns each takes and the bytes that print it.
type codec struct {
	cm *charmap.Charmap  // single-byte profiles
	db *encoding.Encoder // double-byte profiles (GB18030, Big5, Shift_JIS)
	// dbCache remembers double-byte results (nil: unprintable); a ticket
	// uses few distinct characters and the encoder allocates on every call.
	dbCache map[rune][]byte
}

func newCodec(p Profile) *codec {
	if db, ok := doubleByte[p.Encoding]; ok {
		return &codec{db: db.set.Encoding().NewEncoder(), dbCache: map[rune][]byte{}}
	}
	return &codec{cm: singleByte[p.Encoding]}
}

// encodeRune returns the bytes that print r, or nil if the printer cannot
// print it. Only two-byte characters print in Kanji mode: GB18030's
// four-byte sequences (emoji, rare ideographs) are outside the printers'
// fonts, and Shift_JIS's one-byte half-width katakana come from the
// single-byte table, not the Kanji font (substitute widens them instead).
func (c *codec) encodeRune(r rune) []byte {
	if r < 0x80 {
		if r < 0x20 || r == 0x7F {
			return nil
		}
		return []byte{byte(r)}
	}
	if c.db != nil {
		if b, ok := c.dbCache[r]; ok {
			return b
		}
		c.db.Reset()
		b, err := c.db.Bytes([]byte(string(r)))
		if err != nil || len(b) != 2 || r == utf8.RuneError {
			b = nil
		}
		c.dbCache[r] = b
		return b
	}
	if c.cm == nil {
		return nil
	}
	b, ok := c.cm.EncodeRune(r)
	if !ok || b < 0x20 || b == 0x7F {
		return nil
	}
	return []byte{b}
}

// printable maps cleaned text to characters the profile can print, using the
// fallbacks and then "?". Layout works on its result, so widths and bytes
// always agree with what is printed.
func (c *codec) printable(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == '\n' || c.encodeRune(r) != nil {
			b.WriteRune(r)
			continue
		}
		if sub, ok := c.substitute(r); ok {
			b.WriteString(sub)
			continue
		}
		b.WriteByte('?')
	}
	return b.String()
}

// substitute returns the look-alike that prints for r, which the profile
// cannot print itself: a fallback, or the ASCII form of a fullwidth
// character. false means r prints as "?" (CheckDocument refuses it).
func (c *codec) substitute(r rune) (string, bool) {
	if f, ok := fallbacks[r]; ok && c.canPrint(f) {
		return f, true
	}
	if hw, ok := halfwidth(r); ok && c.encodeRune(hw) != nil {
		return string(hw), true
	}
	if fw, ok := fullwidth(r); ok && c.encodeRune(fw) != nil {
		return string(fw), true
	}
	return "", false
}

func (c *codec) canPrint(s string) bool {
	for _, r := range s {
		if c.encodeRune(r) == nil {
			return false
		}
	}
	return true
}

// halfwidth folds fullwidth forms (ＡＢＣ１２３) to ASCII for code pages that
// lack them.
func halfwidth(r rune) (rune, bool) {
	k := width.LookupRune(r)
	if k.Kind() != width.EastAsianFullwidth {
		return 0, false
	}
	n := k.Narrow()
	return n, n != 0 && n < 0x80
}

// fullwidth widens half-width katakana and Hangul (ｱｲｳ) for double-byte
// sets whose Kanji font has only the full-width forms.
func fullwidth(r rune) (rune, bool) {
	k := width.LookupRune(r)
	if k.Kind() != width.EastAsianHalfwidth {
		return 0, false
	}
	w := k.Wide()
	return w, w != 0
}

// runeWidth is the number of font A columns r takes on paper. A Chinese
// printer draws every double-byte GB18030 character from its 24-dot CJK font,
// two columns wide; that covers the East Asian Wide and Fullwidth characters
// (golang.org/x/text/width) and also ambiguous ones such as "·" and "→" that
// a Latin terminal would draw narrow. Single-byte code pages are one column.
// r must have come through printable.
func (c *codec) runeWidth(r rune) int {
	if c.db != nil && r >= 0x80 {
		return 2
	}
	return 1
}

func (c *codec) strWidth(s string) int {
	w := 0
	for _, r := range s {
		w += c.runeWidth(r)
	}
	return w
}

// encode returns the printer bytes for printable text.
func (c *codec) encode(dst []byte, s string) []byte {
	for _, r := range s {
		dst = append(dst, c.encodeRune(r)...)
	}
	return dst
}

// wrap breaks printable text into rows of at most width columns: at "\n", at
// spaces between words, around double-width characters (CJK text has no
// spaces), and inside a word only when the word alone is wider than a row.
// Spaces at a break are dropped; indentation at the start of a paragraph is
// kept. A single glyph wider than width gets a row to itself.
func wrap(s string, width int, wf func(rune) int) []string {
	var rows []string
	for _, para := range strings.Split(s, "\n") {
		rows = append(rows, wrapPara(para, width, wf)...)
	}
	return rows
}

type token struct {
	text  string
	w     int
	space bool
}

func tokenize(s string, wf func(rune) int) []token {
	var toks []token
	start, w := 0, 0
	kind := 0 // 0 none, 1 word, 2 space
	flush := func(end int) {
		if end > start {
			toks = append(toks, token{text: s[start:end], w: w, space: kind == 2})
		}
		start, w, kind = end, 0, 0
	}
	for i, r := range s {
		rw := wf(r)
		switch {
		case r == ' ':
			if kind != 2 {
				flush(i)
			}
			kind = 2
			w += rw
		case rw >= 2:
			flush(i)
			toks = append(toks, token{text: string(r), w: rw})
			start = i + utf8.RuneLen(r)
		default:
			if kind != 1 {
				flush(i)
			}
			kind = 1
			w += rw
		}
	}
	flush(len(s))
	return toks
}

// Kinsoku: Chinese typesetting never starts a row with closing punctuation
// or ends one with an opening bracket; the layout moves a character down
// instead.
const (
	noRowStart = "，。、；：！？）」』】》〉〕”’…"
	noRowEnd   = "（「『【《〈〔“‘"
)

func wrapPara(p string, width int, wf func(rune) int) []string {
	var rows []string
	var row []token
	rowW := 0
	var pend token
	emit := func() {
		var sb strings.Builder
		for _, t := range row {
			sb.WriteString(t.text)
		}
		rows = append(rows, strings.TrimRight(sb.String(), " "))
		row, rowW = nil, 0
	}
	for _, t := range tokenize(p, wf) {
		if t.space {
			if rowW == 0 && len(rows) > 0 {
				continue // no leading spaces on a continuation row
			}
			pend = t
			continue
		}
		if rowW+pend.w+t.w <= width {
			if pend.w > 0 {
				row = append(row, pend)
			}
			row = append(row, t)
			rowW += pend.w + t.w
			pend = token{}
			continue
		}
		attached := pend.w == 0
		pend = token{}
		var carry []token
		if n := len(row); n > 1 && attached && !row[n-1].space && row[n-1].w+t.w <= width &&
			strings.Contains(noRowStart, t.text) {
			carry = append(carry, row[n-1])
		} else if n > 1 && !row[n-1].space && strings.Contains(noRowEnd, row[n-1].text) {
			carry = append(carry, row[n-1])
		}
		if len(carry) > 0 {
			row = row[:len(row)-1]
			rowW -= carry[0].w
		}
		if rowW > 0 {
			emit()
		}
		for _, c := range carry {
			row = append(row, c)
			rowW += c.w
		}
		if rowW+t.w <= width {
			row = append(row, t)
			rowW += t.w
			continue
		}
		for _, r := range t.text {
			rw := wf(r)
			if rowW > 0 && rowW+rw > width {
				emit()
			}
			row = append(row, token{text: string(r), w: rw})
			rowW += rw
		}
	}
	if rowW > 0 || len(rows) == 0 {
		emit()
	}
	return rows
}

// displayWidth is the column width of arbitrary text in a preview, for the
// parts of a preview that are not printed as text (QR data, barcode data).
func displayWidth(r rune) int {
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}
