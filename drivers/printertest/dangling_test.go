package printertest

import (
	"bytes"
	"net"
	"reflect"
	"testing"
)

// TestNULPrintsNothing ensures NUL in text mode is ignored, as on a real
// printer: it is what the driver's resync preamble relies on. It must not
// become a character, a column or a line of its own, in single-byte or
// GB18030 mode.
func TestNULPrintsNothing(t *testing.T) {
	for _, cjk := range []bool{false, true} {
		stream := cat([]byte("AB"), make([]byte, 40), []byte("C\n"), make([]byte, 5), []byte{0x1D, 0x56, 0x00})
		tk, pending := Parse(stream, cjk)
		if len(tk) != 1 || !reflect.DeepEqual(tk[0].Lines, []string{"ABC"}) || len(pending.Lines) != 0 {
			t.Fatalf("cjk %v: tickets %+v pending %+v, want one line ABC", cjk, tk, pending)
		}
	}
}

// TestESCInitClearsPrintBuffer ensures ESC @ discards the text of the line
// not printed yet and resets the modes, as on a real printer, while lines
// already printed stay on the paper.
func TestESCInitClearsPrintBuffer(t *testing.T) {
	stream := cat([]byte("printed\nhalf a li"), []byte{0x1C, 0x26, 0x1B, 0x74, 16, 0x1B, 0x40},
		[]byte("next \x9c\n"), []byte{0x1D, 0x56, 0x00})
	tk, _ := Parse(stream, false)
	if len(tk) != 1 || !reflect.DeepEqual(tk[0].Lines, []string{"printed", "next £"}) {
		t.Fatalf("tickets %+v, want the half line dropped and PC437 text mode back", tk)
	}
}

// TestCutOffCommandTakesNextConnectionsBytes ensures the parser, like a real
// printer, does not see connection boundaries: a raster command cut off by a
// dropped connection takes its missing data from the next connection's
// bytes, eating the start of the next job. A resync preamble of NULs and
// ESC @ on the new connection completes the command harmlessly instead.
func TestCutOffCommandTakesNextConnectionsBytes(t *testing.T) {
	raster := cat([]byte{0x1B, 0x40}, []byte("first\n"), []byte{0x1D, 0x76, 0x30, 0x00, 0x04, 0x00, 0x10, 0x00}, bytes.Repeat([]byte{0xAA}, 64), []byte{0x1D, 0x56, 0x00})
	next := cat([]byte{0x1B, 0x40}, []byte("BANNER\nsecond\n"), []byte{0x1D, 0x56, 0x00})
	cutAt := 2 + 6 + 8 + 10 // ten bytes into the raster data

	for _, resync := range []bool{false, true} {
		p, c := start(t, Options{})
		ctx := ctxT(t)
		// The printer must hold the first connection before the wait for
		// none below means it was dropped, not that it was never seen.
		if err := p.WaitConnections(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if err := p.FaultAfter(FaultDrop, cutAt); err != nil {
			t.Fatal(err)
		}
		c.Write(raster) // may fail: the printer drops the connection
		if err := p.WaitConnections(ctx, 0); err != nil {
			t.Fatal(err)
		}
		c2, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c2.Close() })
		if resync {
			write(t, c2, append(make([]byte, 64-10+7), 0x1B, 0x40)...)
		}
		// Padding so the unfinished raster is sure to complete either way.
		write(t, c2, cat(next, make([]byte, 64), []byte("third\n"), []byte{0x1D, 0x56, 0x00})...)
		want := 1 // the raster eats BANNER, second and the cut after them
		if resync {
			want = 2
		}
		tk, err := p.WaitTickets(ctx, want)
		if err != nil {
			t.Fatal(err)
		}
		if !tk[want-1].Contains("third") {
			t.Fatalf("resync %v: tickets %+v, want %d, the last with third", resync, tk, want)
		}
		if resync {
			if !tk[0].Contains("first") || !tk[0].Contains("BANNER") || !tk[0].Contains("second") || len(tk[0].Images) != 1 {
				t.Fatalf("with resync: %+v", tk[0])
			}
			continue
		}
		if tk[0].Contains("BANNER") || tk[0].Contains("second") {
			t.Fatalf("the cut-off raster did not take the next connection's bytes: %+v", tk)
		}
		if len(tk[0].Images) != 1 || !tk[0].Contains("first") {
			t.Fatalf("tickets %+v", tk)
		}
	}
}

// TestPowerCycleEndsCutOffCommand ensures a power cycle forgets a command
// cut off mid-arguments: the next connection starts from a clean parser.
func TestPowerCycleEndsCutOffCommand(t *testing.T) {
	p, c := start(t, Options{})
	write(t, c, 0x1B, 0x40, 'a', '\n', 0x1D, 0x28, 0x6B, 0xFF, 0x00, 0x31)
	ctx := ctxT(t)
	if err := p.WaitReceived(ctx, 10); err != nil {
		t.Fatal(err)
	}
	p.PowerCycle()
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c2.Close() })
	write(t, c2, cat([]byte("BANNER\n"), []byte{0x1D, 0x56, 0x00})...)
	tk, err := p.WaitTickets(ctx, 1)
	if err != nil || !reflect.DeepEqual(tk[0].Lines, []string{"BANNER"}) {
		t.Fatalf("%+v %v", tk, err)
	}
}
