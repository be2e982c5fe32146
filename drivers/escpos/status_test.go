package escpos_test

import (
	"errors"
	"testing"

	"printgate/drivers/escpos"
)

// TestDecodeStatusTypicalAnswers ensures the answers docs/ESCPOS.md §1 lists decode
// to the conditions it names, and map to the agent's states.
func TestDecodeStatusTypicalAnswers(t *testing.T) {
	cases := []struct {
		n     int
		b     byte
		check func(escpos.Status) bool
		state escpos.PrinterState
	}{
		{1, 0x16, func(s escpos.Status) bool { return s.DrawerPinHigh && !s.Offline }, escpos.StateReady},
		{1, 0x1E, func(s escpos.Status) bool { return s.Offline }, escpos.StateOffline},
		{1, 0x32, func(s escpos.Status) bool { return s.WaitingForRecovery }, escpos.StateError},
		{1, 0x52, func(s escpos.Status) bool { return s.FeedButton }, escpos.StateBusy},
		{2, 0x12, func(s escpos.Status) bool { return !s.CoverOpen && !s.PaperEndStop && !s.Error }, escpos.StateReady},
		{2, 0x16, func(s escpos.Status) bool { return s.CoverOpen }, escpos.StateCoverOpen},
		{2, 0x1A, func(s escpos.Status) bool { return s.FeedingByButton }, escpos.StateBusy},
		{2, 0x32, func(s escpos.Status) bool { return s.PaperEndStop }, escpos.StatePaperOut},
		{2, 0x52, func(s escpos.Status) bool { return s.Error }, escpos.StateError},
		{3, 0x1A, func(s escpos.Status) bool { return s.AutocutterError }, escpos.StateError},
		{3, 0x32, func(s escpos.Status) bool { return s.UnrecoverableError }, escpos.StateError},
		{3, 0x52, func(s escpos.Status) bool { return s.AutoRecoverableError }, escpos.StateError},
		{3, 0x16, func(s escpos.Status) bool { return s.RecoverableError }, escpos.StateError},
		{4, 0x12, func(s escpos.Status) bool { return !s.PaperNearEnd && !s.PaperOut }, escpos.StateReady},
		{4, 0x1E, func(s escpos.Status) bool { return s.PaperNearEnd && !s.PaperOut }, escpos.StateReady},
		{4, 0x72, func(s escpos.Status) bool { return s.PaperOut }, escpos.StatePaperOut},
	}
	for _, tc := range cases {
		s, err := escpos.DecodeStatus(tc.n, tc.b)
		if err != nil {
			t.Fatalf("DLE EOT %d 0x%02x: %v", tc.n, tc.b, err)
		}
		if !tc.check(s) || s.State() != tc.state || !s.Has(tc.n) {
			t.Errorf("DLE EOT %d 0x%02x: %+v state %s, want %s", tc.n, tc.b, s, s.State(), tc.state)
		}
		if (s.Err() == nil) != (tc.state == escpos.StateReady) {
			t.Errorf("DLE EOT %d 0x%02x: Err() = %v for state %s", tc.n, tc.b, s.Err(), s.State())
		}
	}
}

// TestDecodeStatusRejectsNonStatus ensures bytes without the fixed bits
// (ASB headers, GS r answers, XON/XOFF, GS ( H and GS I framing) are refused.
func TestDecodeStatusRejectsNonStatus(t *testing.T) {
	for _, b := range []byte{0x00, 0x03, 0x0C, 0x10, 0x14, 0x11, 0x13, 0x37, 0x5F, 0x92, 0xFF} {
		if _, err := escpos.DecodeStatus(1, b); !errors.Is(err, escpos.ErrNotStatus) {
			t.Errorf("0x%02x: err %v, want ErrNotStatus", b, err)
		}
		if escpos.IsStatusByte(b) {
			t.Errorf("IsStatusByte(0x%02x) = true", b)
		}
	}
	for _, n := range []int{0, 5, -1} {
		if _, err := escpos.DecodeStatus(n, 0x12); err == nil {
			t.Errorf("n=%d accepted", n)
		}
	}
}

// TestStatePrecedence ensures paper out outranks cover open outranks error,
// the order in which someone at the store must act.
func TestStatePrecedence(t *testing.T) {
	s := escpos.Status{Offline: true, CoverOpen: true, PaperOut: true, Error: true}
	if s.State() != escpos.StatePaperOut || !errors.Is(s.Err(), escpos.ErrPaperOut) {
		t.Fatalf("state %s", s.State())
	}
	s.PaperOut = false
	if s.State() != escpos.StateCoverOpen {
		t.Fatalf("state %s", s.State())
	}
	s.CoverOpen = false
	if s.State() != escpos.StateError || !errors.Is(s.Err(), escpos.ErrPrinterFault) {
		t.Fatalf("state %s", s.State())
	}
	if (escpos.Status{}).State() != escpos.StateReady || (escpos.Status{}).String() != "unknown" {
		t.Fatal("an unanswered status is READY (reachable, nothing known) and prints as unknown")
	}
}

// TestDecodeIDAndBarrier ensures GS I and GS ( H answers are framed and
// checked exactly.
func TestDecodeIDAndBarrier(t *testing.T) {
	s, n, err := escpos.DecodeID([]byte("_TM-T88VI\x00rest"))
	if err != nil || s != "TM-T88VI" || n != 10 {
		t.Fatalf("DecodeID: %q %d %v", s, n, err)
	}
	if _, _, err := escpos.DecodeID([]byte("_TM-T88")); err == nil {
		t.Fatal("unterminated id accepted")
	}
	if _, _, err := escpos.DecodeID([]byte("XTM\x00")); err == nil {
		t.Fatal("id without 5F accepted")
	}
	id := escpos.BarrierID(12345)
	ans := []byte{0x37, 0x22, id[0], id[1], id[2], id[3], 0x00}
	got, n, err := escpos.DecodeBarrier(ans)
	if err != nil || got != id || n != 7 {
		t.Fatalf("DecodeBarrier: %q %d %v", got, n, err)
	}
	for _, bad := range [][]byte{
		{0x37, 0x23, 'a', 'b', 'c', 'd', 0},
		{0x37, 0x22, 'a', 0x10, 'c', 'd', 0},
		{0x37, 0x22, 'a', 'b', 'c', 'd', 1},
		{0x37, 0x22, 'a'},
	} {
		if _, _, err := escpos.DecodeBarrier(bad); err == nil {
			t.Errorf("DecodeBarrier(% x) accepted", bad)
		}
	}
}

// TestBarrierID ensures ids are printable (0x20..0x7E), distinct for
// neighbouring jobs and repeat only after 94⁴.
func TestBarrierID(t *testing.T) {
	seen := map[[4]byte]uint64{}
	for _, id := range []uint64{0, 1, 93, 94, 95, 8836, 830583, 78074895, 1 << 40} {
		b := escpos.BarrierID(id)
		for _, c := range b {
			if c < 0x20 || c > 0x7E {
				t.Fatalf("id %d: byte 0x%02x outside 0x20..0x7e", id, c)
			}
		}
		if prev, ok := seen[b]; ok {
			t.Fatalf("ids %d and %d share %q", prev, id, b)
		}
		seen[b] = id
	}
	if escpos.BarrierID(0) != [4]byte{' ', ' ', ' ', ' '} || escpos.BarrierID(94*94*94*94) != escpos.BarrierID(0) {
		t.Fatal("base-94 digits wrong")
	}
}

// TestFilterFlowControl ensures XON/XOFF bytes are removed and nothing else.
func TestFilterFlowControl(t *testing.T) {
	got := escpos.FilterFlowControl([]byte{0x11, 0x16, 0x13, 0x12, 0x11})
	if string(got) != "\x16\x12" {
		t.Fatalf("% x", got)
	}
}

// FuzzDecodeStatus ensures the decoder never panics, accepts exactly the
// bytes with the fixed bits, and round-trips them: Encode(Decode(b)) == b
// except for paper-roll bytes with one bit of a pair set, which decode to
// the same status as the canonical byte.
func FuzzDecodeStatus(f *testing.F) {
	for _, seed := range []struct {
		n int
		b byte
	}{{1, 0x16}, {2, 0x12}, {3, 0x1A}, {4, 0x72}, {4, 0x16}, {1, 0x00}, {7, 0x12}} {
		f.Add(seed.n, seed.b)
	}
	f.Fuzz(func(t *testing.T, n int, b byte) {
		s, err := escpos.DecodeStatus(n, b)
		if n < 1 || n > 4 {
			if err == nil {
				t.Fatalf("n=%d accepted", n)
			}
			return
		}
		if (err == nil) != escpos.IsStatusByte(b) {
			t.Fatalf("DLE EOT %d 0x%02x: err %v, IsStatusByte %v", n, b, err, escpos.IsStatusByte(b))
		}
		if err != nil {
			return
		}
		_ = s.State()
		_ = s.String()
		enc := s.Encode(n)
		if n != 4 && enc != b {
			t.Fatalf("DLE EOT %d: 0x%02x decodes and encodes to 0x%02x", n, b, enc)
		}
		again, err := escpos.DecodeStatus(n, enc)
		if err != nil || again.Encode(n) != enc || again.PaperOut != s.PaperOut || again.PaperNearEnd != s.PaperNearEnd {
			t.Fatalf("DLE EOT %d: 0x%02x re-decodes differently", n, enc)
		}
	})
}
