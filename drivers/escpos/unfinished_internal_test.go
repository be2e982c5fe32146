package escpos

import "testing"

// TestUnfinishedArgs checks how many bytes the last command of a job
// lacks: none at a boundary or after a command the parser does not know,
// the declared rest otherwise, missing header bytes read as NUL.
func TestUnfinishedArgs(t *testing.T) {
	for _, c := range []struct {
		name string
		job  []byte
		want int
	}{
		{"empty", nil, 0},
		{"text and cut", []byte("A\n\x1dV\x42\x00"), 0},
		{"QR store declaring 256", []byte("A\x1d(k\x00\x01"), 256},
		{"QR store, pH missing", []byte("\x1d(k\x03"), 4}, // pH as NUL, then 3 data bytes
		{"lone GS", []byte("A\x1d"), unknownCommandBound},
		{"raster header cut", []byte("\x1dv0\x00\x02\x00"), 2}, // yL yH as NUL: no rows
		{"ESC t without n", []byte("\x1bt"), 1},
		{"unknown GS command", []byte("A\x1d\x7f\x01"), 0},
		{"clamped", []byte("\x1dv0\x00\xff\xff\xff\xff"), MaxDanglingBound - 7},
	} {
		if got := unfinishedArgs(c.job); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
