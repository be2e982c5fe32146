package decode_test

import (
	"bytes"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"printgate/drivers/escpos/decode"
)

// FuzzDecode feeds arbitrary bytes to Decode, the decoder behind the
// manager page's preview of raw ESC/POS payloads, which come from the LAN.
// Beyond not panicking, it checks what makes the output trustworthy and its
// memory bounded by the input:
//   - every byte is accounted for: the tickets' Raw and the pending Raw
//     concatenate to the input, and incomplete is a suffix of it;
//   - the same input decodes to the same output;
//   - rows, images and text are bounded by the input's size (at most one
//     row per byte, plus ESC d feeds up to MaxFeedRows beyond that; at most
//     8 bytes of text per byte, a tab's spaces; image dots at most 3 bytes
//     for each byte that carried them, the padding of ESC * columns);
//   - Lines and the text Items agree, every text is valid UTF-8, every
//     style is a magnification from 1 to 8, and only cut tickets have a Cut.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"plain\x1b!\x38BIG\x1b!\x00 \x1dB\x01inv\x1dB\x00\n\x1ba\x01\x1d!\x11\x1bE\x01\x1b-\x01Title\x1b-\x00\x1bE\x00\x1d!\x00\n\x1ba\x02right\n",
		"top\n\x1ba\x01\x1d(k\x03\x001C\x05\x1d(k\x05\x001P0hi\x1d(k\x03\x001Q0\x1dw\x02\x1dh\x50\x1dH\x02\x1dk\x49\x06{BAB{{\x1bB\x02\x03\x1bp\x00\x19\xfa\x1dVB\x03",
		"\x1d\x76\x30\x00\x01\x00\x03\x00\xf0\xf0\xf0\x1d\x76\x30\x00\x01\x00\x02\x00\x0f\x0f\x1bi",
		"\x1b@\x1bt\x10caf\xe9 \x80\n\x1bt\x11\x8f\n\x1bd\x05\x1dV\x00",
		"\x1c&\xc4\xe3\xba\xc3\x81\x30\x81\x30\n\x1c.abc\n\x1bm",
		"a\tb\tc\t\n\x1bd\xff\x1bd\xff\x1bd\x00",
		"\x1d(L\x0b\x000p0\x01\x01\x31\x08\x00\x02\x00\xaa\x55\x1d(L\x02\x0002",
		"\x1b*\x21\x02\x00\x01\x02\x03\x04\x05\x06\n\x10\x14\x01\x00\x05\x10\x04\x01",
		"\x1b(A\x04\x000\x35\x03\x02\x1b\x7e\x01\x1bz\x1dk\x04123\x00",
		"\x1d8L\x10\x00\x00\x00", "\x1b", "\x1d(k\xff\xff",
		"\x1d(k\x06\x000P0abc\x1d(k\x03\x000Q0\x1d(k\x04\x001A1\x00\x1d(k\x05\x006P0dm\x1d(k\x03\x006Q0",
		"\x1b*\x21\x01\x00\x80\x00\x01\n\x1b*\x21\x01\x00\xff\xff\xff\x1bJ\x00\x1b*\x00\x02\x00\xaa\x55\n",
		"\x1bt\x01\xb1\xdf\xe0\x1bt\x2d\x80\x1bt\x13\xd5\x1c&\xa4\xa4\x93\xfa\x1c.\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte("\xc4\xe3\xba\xc3\n\xff\x80\x81"), true)
	f.Fuzz(func(t *testing.T, stream []byte, cjk bool) {
		tickets, pending, incomplete := decode.Decode(stream, cjk)
		if incomplete < 0 || incomplete > len(stream) {
			t.Fatalf("incomplete %d of %d bytes", incomplete, len(stream))
		}
		var raw []byte
		for _, tk := range tickets {
			raw = append(raw, tk.Raw...)
		}
		raw = append(raw, pending.Raw...)
		if !bytes.Equal(raw, stream) {
			t.Fatalf("the tickets' Raw bytes are not the input:\n%q\n%q", raw, stream)
		}
		if !bytes.HasSuffix(pending.Raw, stream[len(stream)-incomplete:]) {
			t.Fatalf("the %d incomplete bytes are not at the end of the pending ticket", incomplete)
		}

		var items, images, imageBits, textBytes, feedsDropped int
		for i, tk := range append(tickets, pending) {
			last := i == len(tickets)
			if last && tk.Cut != "" || !last && tk.Cut != "full" && tk.Cut != "partial" {
				t.Fatalf("ticket %d of %d has Cut %q", i+1, len(tickets)+1, tk.Cut)
			}
			if len(tk.Unknown) > decode.MaxUnknown {
				t.Fatalf("ticket %d lists %d unknown commands, over MaxUnknown", i+1, len(tk.Unknown))
			}
			items += len(tk.Items)
			images += len(tk.Images)
			feedsDropped += tk.FeedsDropped
			var texts []string
			for _, it := range tk.Items {
				switch it.Kind {
				case decode.KindText:
					texts = append(texts, it.Line.Text())
					for _, sp := range it.Line.Spans {
						if sp.Style.W < 1 || sp.Style.W > 8 || sp.Style.H < 1 || sp.Style.H > 8 {
							t.Fatalf("span %q has size %dx%d", sp.Text, sp.Style.W, sp.Style.H)
						}
					}
				case decode.KindImage:
					imageBits += len(it.Image.Bits)
					if it.Image.Bits != nil && len(it.Image.Bits) != it.Image.Stride*it.Image.Height {
						t.Fatalf("image %dx%d, stride %d, has %d bytes of dots", it.Image.Width, it.Image.Height, it.Image.Stride, len(it.Image.Bits))
					}
				case decode.KindBarcode:
					if !utf8.ValidString(it.Barcode.Text) {
						t.Fatalf("barcode text %q is not UTF-8", it.Barcode.Text)
					}
				case decode.KindQR:
					if !utf8.ValidString(it.QR.Data) {
						t.Fatalf("QR data %q is not UTF-8", it.QR.Data)
					}
				}
			}
			if !reflect.DeepEqual(texts, tk.Lines) && (len(texts) != 0 || len(tk.Lines) != 0) {
				t.Fatalf("ticket %d: Lines %q but text items %q", i+1, tk.Lines, texts)
			}
			for _, l := range tk.Lines {
				textBytes += len(l)
				if !utf8.ValidString(l) {
					t.Fatalf("line %q is not UTF-8", l)
				}
			}
		}
		n := len(stream)
		if maxItems := 2*n + decode.MaxFeedRows + 1; items > maxItems {
			t.Fatalf("%d bytes decoded to %d items, over %d", n, items, maxItems)
		}
		// ESC * columns become raster rows padded to whole bytes, at their
		// size on paper: an 8-dot single-density column (one byte) is two
		// dots wide and 24 tall, 24 bits in 3 rows of 8 → up to 6 bytes of
		// dots per byte of a wide band (a 1-column band: 24 bytes for 6).
		if images > n/5 || imageBits > 6*n {
			t.Fatalf("%d bytes decoded to %d images with %d bytes of dots", n, images, imageBits)
		}
		if textBytes > 8*n {
			t.Fatalf("%d bytes decoded to %d bytes of text", n, textBytes)
		}
		if feedsDropped > 0 && !strings.Contains(string(stream), "\x1bd") {
			t.Fatalf("%d feeds dropped from a stream without ESC d", feedsDropped)
		}

		// The other double-byte sets: every byte accounted for, text UTF-8.
		for _, db := range []decode.DoubleByte{decode.Big5, decode.ShiftJIS} {
			tk, p, inc := decode.DecodeWith(stream, decode.Options{PowerOnCJK: cjk, DoubleByte: db})
			var raw []byte
			for _, x := range append(tk, p) {
				raw = append(raw, x.Raw...)
				for _, l := range x.Lines {
					if !utf8.ValidString(l) {
						t.Fatalf("%v: line %q is not UTF-8", db, l)
					}
				}
			}
			if !bytes.Equal(raw, stream) || inc < 0 || inc > len(stream) {
				t.Fatalf("%v: the tickets' Raw bytes are not the input (incomplete %d)", db, inc)
			}
		}

		t2, p2, i2 := decode.Decode(stream, cjk)
		if !reflect.DeepEqual(t2, tickets) || !reflect.DeepEqual(p2, pending) || i2 != incomplete {
			t.Fatalf("decoding %q twice gave different results", stream)
		}
	})
}

// allocated is the bytes f allocates, to tell linear work from quadratic
// without timing anything.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLongRowIsLinear is the regression test for text appended to a row by
// copying the row: a 256 KiB row without a line feed allocated 33 GB and took
// 50 s (a row of tabs, 8 spaces each, eight times worse); a 32 KiB row
// allocated over 500 MB. Now the work is a small
// multiple of the row.
func TestLongRowIsLinear(t *testing.T) {
	for _, s := range []string{strings.Repeat("a", 32<<10), strings.Repeat("\t", 8<<10), strings.Repeat("ab\x1bE\x01c\x1bE\x00", 4<<10)} {
		var tickets []decode.Ticket
		var pending decode.Ticket
		n := allocated(func() { tickets, pending, _ = decode.Decode([]byte(s), false) })
		if len(tickets) != 0 || len(pending.Lines) != 1 {
			t.Fatalf("%d tickets, pending lines %d", len(tickets), len(pending.Lines))
		}
		text := pending.Lines[0]
		if got := pending.Items[0].Line.Text(); got != text || len(text) < len(s)/3 {
			t.Fatalf("row of %d bytes, item text of %d", len(text), len(got))
		}
		if limit := uint64(128 * len(s)); n > limit {
			t.Errorf("a row of %d bytes (from %d) allocated %d bytes decoding, over %d", len(text), len(s), n, limit)
		}
	}
}

// TestFeedsBounded is the regression test for ESC d amplification: 3 bytes
// feed 255 blank rows, 232 bytes each, so 90 KB of "ESC d 255" allocated 11 GB
// and took nearly two minutes, and a 1 MiB payload would exhaust the agent's memory in the
// preview. Decode keeps at most MaxFeedRows plus one per byte and counts
// the rest; a Decoder from New, the emulator's, keeps every row.
func TestFeedsBounded(t *testing.T) {
	stream := append([]byte("top\x1bd\x03"), bytes.Repeat([]byte("\x1bd\xff"), 3000)...)
	tickets, pending, _ := decode.Decode(stream, false)
	if len(tickets) != 0 {
		t.Fatalf("%d tickets", len(tickets))
	}
	const fed = 2 + 255*3000
	kept := len(pending.Items) - 1
	if want := decode.MaxFeedRows + len(stream); kept != want {
		t.Errorf("kept %d feed rows of %d, want the bound %d", kept, fed, want)
	}
	if kept+pending.FeedsDropped != fed || len(pending.Lines) != kept+1 {
		t.Errorf("kept %d + dropped %d feed rows, %d lines; want %d rows in all", kept, pending.FeedsDropped, len(pending.Lines), fed)
	}
	if pending.Lines[0] != "top" {
		t.Errorf("first line %q", pending.Lines[0])
	}

	d := decode.New(false)
	for range 100 {
		if n := d.Step([]byte("\x1bd\xff")); n != 3 {
			t.Fatalf("step %d", n)
		}
	}
	if p := d.Pending(); len(p.Items) != 25500 || p.FeedsDropped != 0 {
		t.Errorf("the emulator's decoder kept %d rows and dropped %d of 25500", len(p.Items), p.FeedsDropped)
	}
}
