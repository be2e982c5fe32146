package escpos

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// UnprintableError is CheckDocument's error: the document texts that a
// printer's encoding cannot print, which Render would print as "?". The
// agent refuses such a document at intake (400 bad_document) rather than
// let a kitchen ticket reach the paper as question marks.
type UnprintableError struct {
	Profile  string // the profile's name, e.g. "epson-80"
	Encoding string // the profile's Encoding, e.g. "WPC1252"
	Texts    []UnprintableText
}

// UnprintableText is one document text with characters the printer cannot
// print.
type UnprintableText struct {
	// Line is the 1-based document line, numbered as ParseDocument numbers
	// lines in its errors (the index in the lines array plus one).
	Line int
	// Field is the JSON key of the text in that line: "text", "right" or
	// "rule".
	Field string
	// Text is the text as the document gives it.
	Text string
	// Chars are the characters that cannot be printed, each once, in order.
	Chars []rune
}

// maxQuoted is how many characters of a text an error quotes.
const maxQuoted = 40

// Error names every offending text in one line, e.g.
// `line 7: text "宫保鸡丁" has characters the printer's encoding (WPC1252,
// profile epson-80) cannot print: 宫 保 鸡 丁`.
func (e *UnprintableError) Error() string {
	parts := make([]string, len(e.Texts))
	for i, t := range e.Texts {
		parts[i] = fmt.Sprintf("line %d: %s %q has characters the printer's encoding (%s, profile %s) cannot print: %s",
			t.Line, t.Field, quoted(t.Text), e.Encoding, e.Profile, charList(t.Chars))
	}
	return strings.Join(parts, "; ")
}

// quoted shortens s for an error message.
func quoted(s string) string {
	if utf8.RuneCountInString(s) <= maxQuoted {
		return s
	}
	n := 0
	for i := range s {
		if n == maxQuoted {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// charList spells the characters for a person: the character itself, or
// U+XXXX for one that would not show (a combining mark, a private-use code).
func charList(rs []rune) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		if unicode.IsGraphic(r) && !unicode.Is(unicode.M, r) {
			parts[i] = string(r)
		} else {
			parts[i] = fmt.Sprintf("U+%04X", r)
		}
	}
	return strings.Join(parts, " ")
}

// CheckDocument reports whether every text Render would encode for a
// printer of profile p (text lines, their right parts, rule characters)
// can be printed by the profile's encoding: directly, or through the
// ASCII look-alikes Render uses ("→" as "->", fullwidth "Ａ" as "A").
// Control and invisible characters do not count: Render removes them. The
// error is a *UnprintableError naming every offending line, field and
// character, e.g. CJK text for an epson-80 profile (WPC1252); nil means
// Render prints every character of the document as written. QR and barcode
// data are not text (ValidateBarcode checks barcodes) and banners are the
// agent's own.
func CheckDocument(doc *Document, p Profile) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("check document: %w", err)
	}
	if doc == nil {
		return nil
	}
	if err := checkImageHeights(doc, p); err != nil {
		return err
	}
	c := newCodec(p)
	var bad []UnprintableText
	check := func(line int, field, s string) {
		if chars := unprintable(c, s); len(chars) > 0 {
			bad = append(bad, UnprintableText{Line: line, Field: field, Text: s, Chars: chars})
		}
	}
	for i, l := range doc.Lines {
		switch l := l.(type) {
		case TextLine:
			check(i+1, "text", l.Text)
			check(i+1, "right", l.Right)
		case RuleLine:
			check(i+1, "rule", l.Char)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &UnprintableError{Profile: p.Name, Encoding: p.Encoding, Texts: bad}
}

// unprintable returns the characters of s that c.printable would replace
// with "?", each once, in order of appearance.
func unprintable(c *codec, s string) []rune {
	var out []rune
	for _, r := range cleanText(s) {
		if r == '\n' || c.encodeRune(r) != nil {
			continue
		}
		if _, ok := c.substitute(r); ok {
			continue
		}
		dup := false
		for _, o := range out {
			dup = dup || o == r
		}
		if !dup {
			out = append(out, r)
		}
	}
	return out
}
