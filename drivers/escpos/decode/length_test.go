package decode

import (
	"math/rand/v2"
	"testing"
)

// TestDecoderFramesByTheTable ensures the decoder frames every command the
// length table knows exactly as the table does (the raw port's filter and
// the driver's resynchronisation frame by the table): for each ESC, FS, GS
// and DLE command byte, with seeded random arguments, a complete command
// steps by the table's length; a command the table does not know is listed
// as unknown.
func TestDecoderFramesByTheTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 4))
	for _, lead := range []byte{0x1B, 0x1C, 0x1D, 0x10} {
		for c := range 256 {
			for range 64 {
				b := []byte{lead, byte(c)}
				for range 300 {
					// Small values keep declared lengths inside the buffer.
					b = append(b, byte(rng.IntN(6)))
				}
				if rng.IntN(4) == 0 {
					b[2] = byte(rng.IntN(256)) // a function byte
				}
				want := CommandLength(b)
				d := New(false)
				got := d.Step(b)
				switch {
				case want == UnknownLength:
					if len(d.cur.Unknown) != 1 {
						t.Fatalf("% x: not in the table, but the decoder did not list it as unknown", b[:4])
					}
				case want <= len(b) && got != want:
					t.Fatalf("% x…: decoder steps %d bytes, the table says %d", b[:min(8, len(b))], got, want)
				}
			}
		}
	}
}
