package decode_test

import (
	"strings"
	"testing"

	"printgate/drivers/escpos"
	"printgate/drivers/escpos/decode"
)

// TestProfileRoundTrip renders a text with accents and € for every built-in
// profile (and for profiles using the other encodings Render knows, with
// Epson's ESC t numbers) and decodes the bytes back: the decoder must read
// the code page the encoder chose. Encodings without € get a text without
// it (CheckDocument says they cannot print it).
func TestProfileRoundTrip(t *testing.T) {
	var profiles []escpos.Profile
	for _, name := range escpos.ProfileNames() {
		p, err := escpos.LookupProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		profiles = append(profiles, p)
	}
	base, err := escpos.LookupProfile("epson-80")
	if err != nil {
		t.Fatal(err)
	}
	for enc, n := range map[string]int{"PC437": 0, "PC850": 2, "PC858": 19, "PC866": 17, "WPC1252": 16} {
		p := base
		p.Name, p.Encoding, p.CodePage = "custom-"+enc, enc, n
		profiles = append(profiles, p)
	}
	texts := []string{"Crème brûlée à 3,80 €", "Crème brûlée Ünd Smørrebrød", "Crème brûlée, Ñandú Über", "Щи и борщ 3,80", "宫保鸡丁 Café €"}
	for _, p := range profiles {
		tried, euroTried := 0, false
		for _, text := range texts {
			doc := &escpos.Document{Lines: []escpos.Line{escpos.TextLine{Text: text}}}
			euro := p.Encoding == "WPC1252" || p.Encoding == "PC858" || p.CJK()
			if escpos.CheckDocument(doc, p) != nil || strings.Contains(text, "€") && !euro {
				continue // Render would print "?" or a look-alike ("EUR")
			}
			tried++
			euroTried = euroTried || strings.Contains(text, "€")
			out, err := escpos.Render(doc, p, escpos.RenderOptions{})
			if err != nil {
				t.Fatalf("%s: %v", p.Name, err)
			}
			tickets, pending, _ := decode.Decode(out, p.CJK())
			var lines []string
			for _, tk := range append(tickets, pending) {
				lines = append(lines, tk.Lines...)
			}
			found := false
			for _, l := range lines {
				found = found || strings.TrimSpace(l) == text
			}
			if !found {
				t.Errorf("%s (%s, ESC t %d): %q decoded as %q", p.Name, p.Encoding, p.CodePage, text, lines)
			}
		}
		if tried == 0 || (p.Encoding == "WPC1252" || p.Encoding == "PC858" || p.CJK()) && !euroTried {
			t.Errorf("%s: tried %d texts, € among them %v", p.Name, tried, euroTried)
		}
	}
}
