package drivers

import (
	"bytes"
	"testing"
)

// TestStripXonXoff ensures flow control bytes never reach status decoding
// and everything else keeps its order.
func TestStripXonXoff(t *testing.T) {
	b := []byte{0x11, 0x16, 0x13, 0x13, 0x12, 0x11, 0x7e}
	n := stripXonXoff(b)
	if !bytes.Equal(b[:n], []byte{0x16, 0x12, 0x7e}) {
		t.Fatalf("got %x", b[:n])
	}
	if n := stripXonXoff([]byte{0x11, 0x13}); n != 0 {
		t.Fatalf("only flow bytes left %d", n)
	}
}

// TestCommStateFor ensures each flow mode sets the Windows DCB bits that
// make the serial driver honour it, and framing maps to DCB codes.
func TestCommStateFor(t *testing.T) {
	tests := []struct {
		flow      Flow
		set, zero uint32
	}{
		{FlowNone, dcbBinary | dcbDtrControlOn | dcbRtsControlOn, dcbOutxCtsFlow | dcbOutxDsrFlow | dcbOutX | dcbInX | dcbRtsHandshake | dcbDtrHandshake},
		{FlowRTSCTS, dcbOutxCtsFlow | dcbRtsHandshake, dcbOutxDsrFlow | dcbOutX | dcbInX | dcbDtrHandshake},
		{FlowDSRDTR, dcbOutxDsrFlow | dcbDtrHandshake, dcbOutxCtsFlow | dcbOutX | dcbInX | dcbRtsHandshake},
		{FlowXONXOFF, dcbOutX | dcbInX, dcbOutxCtsFlow | dcbOutxDsrFlow | dcbRtsHandshake | dcbDtrHandshake},
	}
	for _, tt := range tests {
		l := DefaultLineSettings
		l.Flow = tt.flow
		s := commStateFor(l)
		if s.Flags&tt.set != tt.set || s.Flags&tt.zero != 0 {
			t.Errorf("%s: flags %#x, want %#x set and %#x clear", tt.flow, s.Flags, tt.set, tt.zero)
		}
		// Exactly one of the DTR and RTS control modes each (2-bit fields).
		if d := s.Flags & 0x30; d != dcbDtrControlOn && d != dcbDtrHandshake {
			t.Errorf("%s: DTR control %#x", tt.flow, d)
		}
		if r := s.Flags & 0x3000; r != dcbRtsControlOn && r != dcbRtsHandshake {
			t.Errorf("%s: RTS control %#x", tt.flow, r)
		}
	}
	s := commStateFor(LineSettings{Baud: 19200, DataBits: 7, Parity: ParityEven, StopBits: 2, Flow: FlowXONXOFF})
	if s.Baud != 19200 || s.ByteSize != 7 || s.Parity != 2 || s.StopBits != 2 || s.Flags&dcbParity == 0 || s.XonChar != 0x11 || s.XoffChar != 0x13 {
		t.Errorf("framing %+v", s)
	}
	if s := commStateFor(LineSettings{Baud: 9600, DataBits: 8, Parity: ParityOdd, StopBits: 1}); s.Parity != 1 || s.StopBits != 0 {
		t.Errorf("odd parity, one stop bit: %+v", s)
	}
}
