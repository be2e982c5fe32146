package decode

import (
	"reflect"
	"testing"
)

// gsk is a GS ( k command with body cn fn params.
func gsk(body string) string {
	n := len(body)
	return "\x1d(k" + string([]byte{byte(n), byte(n >> 8)}) + body
}

// TestSymbols ensures each 2D symbol of GS ( k is one item of its kind,
// with the data stored for its type when it was printed: PDF417, QR
// (models 1 and 2), MaxiCode, Aztec and DataMatrix.
func TestSymbols(t *testing.T) {
	s := "\x1ba\x01" +
		gsk("0A\x00") + gsk("0P0pdf417 data") + // PDF417: columns, store
		gsk("1A1\x00") + gsk("1C\x04") + gsk("1P0model one") + gsk("1Q0") +
		gsk("1A2\x00") + gsk("1P0model two") + gsk("1Q0") +
		gsk("0Q0") + // PDF417 printed after the QR codes: its own store
		"\x1ba\x00" +
		gsk("2P0maxi") + gsk("2Q0") +
		gsk("5P0aztec") + gsk("5Q0") +
		gsk("6P0dm \xff") + gsk("6Q0") + gsk("6Q0") + // printed twice
		gsk("3P0databar") + gsk("3Q0") // GS1 DataBar: not read
	tickets, p, inc := Decode([]byte(s+"\x1dV\x00"), false)
	if len(tickets) != 1 || inc != 0 || len(p.Items) != 0 {
		t.Fatalf("%d tickets, %d incomplete, pending %+v", len(tickets), inc, p)
	}
	got := append([]Item(nil), tickets[0].Items...)
	want := []Item{
		{Kind: KindQR, QR: QR{Data: "model one", Module: 4, Align: 1, Model: 1}},
		{Kind: KindQR, QR: QR{Data: "model two", Module: 4, Align: 1, Model: 2}},
		{Kind: KindSymbol, Symbol: Symbol{Type: "PDF417", Data: "pdf417 data", Align: 1}},
		{Kind: KindSymbol, Symbol: Symbol{Type: "MaxiCode", Data: "maxi"}},
		{Kind: KindSymbol, Symbol: Symbol{Type: "Aztec", Data: "aztec"}},
		{Kind: KindSymbol, Symbol: Symbol{Type: "DataMatrix", Data: "dm \uFFFD"}},
		{Kind: KindSymbol, Symbol: Symbol{Type: "DataMatrix", Data: "dm \uFFFD"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("items\n%+v\nwant\n%+v", got, want)
	}
	if !reflect.DeepEqual(tickets[0].QR, []string{"model one", "model two"}) {
		t.Errorf("QR %q", tickets[0].QR)
	}
	if len(tickets[0].Unknown) != 0 || len(tickets[0].Lines) != 0 {
		t.Errorf("unknown %+v, lines %q", tickets[0].Unknown, tickets[0].Lines)
	}
}
