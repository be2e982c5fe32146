package escpos

import (
	"testing"
)

// TestClassifierSeparatesAnswers ensures every kind of answer is cut from
// one mixed stream for what it is, split at any byte boundary: ASB packets
// (whose body bytes look like GS r answers) are not status or GS r answers,
// XON/XOFF are dropped in flow-control mode, a broken GS ( H frame does not
// swallow the status byte after it.
func TestClassifierSeparatesAnswers(t *testing.T) {
	stream := []byte{
		0x16,                   // DLE EOT answer
		0x14, 0x00, 0x0C, 0x00, // ASB packet
		0x03,                                 // GS r answer
		0x11,                                 // XON
		0x37, 0x22, 'A', 'B', 'C', 'D', 0x00, // GS ( H
		0x5F, 'T', 'M', 0x00, // GS I
		0x37, 0x12, // broken GS ( H header, then a DLE EOT answer
		0x13, // XOFF
		0x72, // DLE EOT answer
	}
	want := []event{
		{kind: evStatus, b: 0x16},
		{kind: evASB, asb: [4]byte{0x14, 0x00, 0x0C, 0x00}},
		{kind: evTransmit, b: 0x03},
		{kind: evBarrier, id: [4]byte{'A', 'B', 'C', 'D'}},
		{kind: evID, text: "TM"},
		{kind: evStatus, b: 0x12},
		{kind: evStatus, b: 0x72},
	}
	for split := 0; split <= len(stream); split++ {
		c := classifier{xonxoff: true}
		got := c.feed(stream[:split], nil)
		got = c.feed(stream[split:], got)
		if len(got) != len(want) {
			t.Fatalf("split %d: got %+v, want %+v", split, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("split %d: event %d is %+v, want %+v", split, i, got[i], want[i])
			}
		}
	}
}

// TestCountRealTimeQueries ensures the DLE EOT sequences a printer will
// answer mid-job are counted exactly.
func TestCountRealTimeQueries(t *testing.T) {
	cases := map[string]int{
		"":                         0,
		"\x10\x04\x01":             1,
		"\x10\x04\x05":             0,
		"\x10\x10\x04\x02\x10\x04": 1,
		"\x10\x04\x01\x10\x04\x04": 2,
	}
	for in, want := range cases {
		if got := countRealTimeQueries([]byte(in)); got != want {
			t.Errorf("% x: %d, want %d", in, got, want)
		}
	}
}

// TestConfirmationNames ensures the words used in events and on the page.
func TestConfirmationNames(t *testing.T) {
	for c, want := range map[Confirmation]string{ConfirmNone: "", ConfirmDelivered: "delivered", ConfirmConsumed: "consumed", ConfirmPrinted: "printed"} {
		if c.String() != want {
			t.Errorf("%d: %q, want %q", c, c.String(), want)
		}
	}
	if (Capabilities{TransmitStatus: true}).Confirmation() != ConfirmDelivered {
		t.Error("GS r without real-time status cannot give consumed")
	}
}
