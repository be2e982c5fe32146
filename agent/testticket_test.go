package agent

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"printgate/drivers/escpos"
)

// TestTestTicketDropsUnprintableChinese ensures the test ticket of a
// single-byte profile has no Chinese line (it would print as "?"), and a
// double-byte one has a line in its own script, which its set can print.
func TestTestTicketDropsUnprintableChinese(t *testing.T) {
	cases := []struct{ name, encoding, want string }{
		{"epson-80", "", ""},
		{"oneway-80", "", ""},
		{"xprinter-58", "", "中文测试"},
		{"xprinter-80", escpos.EncodingBig5, "中文測試"},
		{"xprinter-80", escpos.EncodingShiftJIS, "日本語テスト"},
	}
	for _, c := range cases {
		p, err := escpos.LookupProfile(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if c.encoding != "" {
			if p, err = p.With(escpos.ProfileOverrides{Encoding: &c.encoding}); err != nil {
				t.Fatal(err)
			}
		}
		doc, err := TestTicket{Printer: "k", Profile: p, At: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}.Document()
		if err != nil {
			t.Fatalf("%s %s: %v", c.name, c.encoding, err)
		}
		var lines struct{ Lines []struct{ Text string } }
		if err := json.Unmarshal(doc, &lines); err != nil {
			t.Fatal(err)
		}
		script := ""
		for _, l := range lines.Lines {
			for _, r := range l.Text {
				if r >= 0x3000 {
					script = l.Text
					break
				}
			}
		}
		if c.want == "" && script != "" || !strings.Contains(script, c.want) {
			t.Errorf("%s %s: script line %q, want one with %q", c.name, c.encoding, script, c.want)
		}
	}
}
