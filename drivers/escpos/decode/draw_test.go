package decode

import (
	"strings"
	"testing"
)

// TestDrawKeepsLayout ensures the terminal drawing of a ticket (`printgate
// decode`, the emulator, the demo) keeps the paper's layout as the HTML
// preview does: a centred line centred and a right-aligned one right, a QR
// code where it was printed (before the text and the feeds that follow it),
// and the feeds as blank rows there. It drew every line left and every
// symbol after all the text.
func TestDrawKeepsLayout(t *testing.T) {
	qrStore := func(data string) string {
		n := len(data) + 3
		return "\x1d(k" + string([]byte{byte(n), byte(n >> 8)}) + "1P0" + data
	}
	stream := "\x1b@" +
		"------------------------------\n" +
		"\x1ba\x01CENTRE\n" +
		"\x1ba\x02RIGHT\n" +
		"\x1ba\x00" + qrStore("https://example.com/q") + "\x1d(k\x03\x001Q0" +
		"\n\n" +
		"AFTER THE QR\n" +
		"\x1dV\x00"
	tickets, _, _ := Decode([]byte(stream), false)
	if len(tickets) != 1 {
		t.Fatalf("%d tickets, want 1", len(tickets))
	}
	var b strings.Builder
	if err := tickets[0].Sheet().Draw(&b, "k"); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		if strings.HasPrefix(l, "│ ") {
			rows = append(rows, strings.TrimSuffix(strings.TrimPrefix(l, "│ "), " │"))
		}
	}
	want := []string{
		"------------------------------",
		"            CENTRE            ",
		"                         RIGHT",
		"[QR https://example.com/q]    ",
		"                              ",
		"                              ",
		"AFTER THE QR                  ",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("drawn:\n%s\nwant the rows:\n%s", b.String(), strings.Join(want, "\n"))
	}
}
