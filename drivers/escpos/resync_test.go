package escpos

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"reflect"
	"strings"
	"testing"

	"printgate/drivers/printertest"
)

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestDanglingBoundHandBuilt checks the bound of hand-built streams: each
// command's bytes after its first byte, the largest winning, text counting
// nothing, and the floor and ceiling.
func TestDanglingBoundHandBuilt(t *testing.T) {
	raster := func(x, y int) []byte {
		return cat([]byte{0x1D, 0x76, 0x30, 0x00, byte(x), byte(x >> 8), byte(y), byte(y >> 8)}, make([]byte, x*y))
	}
	qrStore := func(n int) []byte {
		return cat([]byte{0x1D, 0x28, 0x6B, byte(n + 3), byte((n + 3) >> 8), 0x31, 0x50, 0x30}, bytes.Repeat([]byte("q"), n))
	}
	cases := []struct {
		name string
		job  []byte
		want int
	}{
		{"empty", nil, MinDanglingBound},
		{"text", []byte("hello\nworld\n" + strings.Repeat("x", 500)), MinDanglingBound},
		{"short commands", []byte{0x1B, 0x40, 0x1B, 0x21, 0x38, 0x1D, 0x21, 0x11, 0x1B, 0x61, 1, 0x1B, 0x64, 3,
			0x1B, 0x70, 0, 25, 120, 0x1B, 0x42, 3, 3, 0x1D, 0x56, 0x42, 3, 0x10, 0x04, 1, 0x10, 0x14, 1, 0, 1}, MinDanglingBound},
		{"GS ( H barrier", []byte{0x1D, 0x28, 0x48, 0x06, 0x00, 0x30, 0x30, 'a', 'b', 'c', 'd'}, MinDanglingBound},
		{"raster band", cat([]byte("logo\n"), raster(72, 255), []byte("after\n")), 7 + 72*255},
		{"largest raster band wins", cat(raster(10, 10), raster(72, 40), raster(8, 8)), 7 + 72*40},
		{"raster data holding ESC and GS", cat([]byte{0x1D, 0x76, 0x30, 0, 2, 0, 20, 0}, bytes.Repeat([]byte{0x1D, 0x38}, 20)), 7 + 40},
		{"QR store", cat(qrStore(300), []byte("x")), 4 + 303},
		{"GS k CODE128", cat([]byte{0x1D, 0x6B, 73, 30}, bytes.Repeat([]byte("7"), 30)), 3 + 30},
		{"GS k NUL-terminated", cat([]byte{0x1D, 0x6B, 4}, bytes.Repeat([]byte("A"), 40), []byte{0}), 2 + 40 + 1},
		{"ESC * 24-dot", cat([]byte{0x1B, 0x2A, 33, 100, 0}, make([]byte, 300)), 4 + 300},
		{"ESC * 8-dot", cat([]byte{0x1B, 0x2A, 0, 100, 0}, make([]byte, 100)), 4 + 100},
		{"ESC ( Y", cat([]byte{0x1B, 0x28, 0x59, 40, 0}, make([]byte, 40)), 4 + 40},
		{"FS q NV images", cat([]byte{0x1C, 0x71, 2, 2, 0, 3, 0}, make([]byte, 48), []byte{1, 0, 1, 0}, make([]byte, 8)), 2 + 4 + 48 + 4 + 8},
		{"ESC D tab stops", cat([]byte{0x1B, 0x44, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 0}), 1 + 20 + 1},
		// An Epson ends the stops at a value not above the one before:
		// the 8 after the first 8 is data, so the command is 3 bytes.
		{"ESC D ended by a repeated stop", cat([]byte{0x1B, 0x44}, bytes.Repeat([]byte{8}, 20), []byte{0}), MinDanglingBound},
		{"GS 8 L huge", []byte{0x1D, 0x38, 0x4C, 0xFF, 0xFF, 0xFF, 0x7F, 0x30}, MaxDanglingBound},
		{"GS v huge", []byte{0x1D, 0x76, 0x30, 0, 0xFF, 0xFF, 0xFF, 0xFF}, MaxDanglingBound},
		{"unknown ESC", []byte{0x1B, 0x7A, 0x1D, 0x76}, MinDanglingBound},
		// Cut off by the end of what was written: missing header bytes are
		// the preamble's NULs, missing data is what the header declares.
		{"cut in raster data", raster(72, 100)[:500], 7 + 7200},
		{"cut in raster header after yL", []byte{0x1D, 0x76, 0x30, 0, 72, 0, 10}, 7 + 720},
		{"cut in raster header after xL", []byte{0x1D, 0x76, 0x30, 0, 72}, MinDanglingBound},
		{"cut in QR store data", qrStore(300)[:20], 4 + 303},
		{"cut after GS ( k pL", []byte{0x1D, 0x28, 0x6B, 200}, 4 + 200},
		{"cut in GS k data", []byte{0x1D, 0x6B, 4, 'A', 'B'}, MinDanglingBound},
	}
	for _, c := range cases {
		if got := DanglingBound(c.job); got != c.want {
			t.Errorf("%s: DanglingBound = %d, want %d", c.name, got, c.want)
		}
	}
}

// pngLogo is a w×h PNG with a black frame and a grey gradient, so its
// raster has every kind of byte.
func pngLogo(t testing.TB, w, h int) []byte {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			v := uint8((x * 255) / w)
			if x < 4 || y < 4 || x >= w-4 || y >= h-4 {
				v = 0
			}
			img.SetGray(x, y, color.Gray{v})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// resyncDoc is a ticket with text, a QR code, a barcode and an image of
// imgW×imgH pixels.
func resyncDoc(t testing.TB, ticket string, imgW, imgH int) *Document {
	return &Document{Lines: []Line{
		TextLine{Text: ticket, Size: TextSize{2, 2}, Bold: true},
		TextLine{Text: "1 x Fried rice", Right: "12.00"},
		QRLine{Data: "https://example.com/o/" + strings.Repeat("7", 120)},
		BarcodeLine{Data: "ORD20261130-0042"},
		ImageLine{PNG: pngLogo(t, imgW, imgH)},
		TextLine{Text: "end of " + ticket},
	}}
}

// TestDanglingBoundRendered ensures the bound of real renderer output is
// dominated by its largest command, the raster band of the image, and
// covers every QR store and barcode in it.
func TestDanglingBoundRendered(t *testing.T) {
	for _, prof := range []string{"epson-80", "epson-58", "xprinter-80"} {
		p := mustProfile(t, prof)
		job := mustRender(t, resyncDoc(t, "TICKET 1", 800, 600), p, RenderOptions{PossibleDuplicate: true})
		stride := p.Dots / 8
		if got, want := DanglingBound(job), 7+stride*bandRows; got != want {
			t.Errorf("%s: DanglingBound = %d, want %d (a full %d-byte raster band)", prof, got, want, stride*bandRows)
		}
		qr := bytes.Index(job, []byte{0x1D, 0x28, 0x6B})
		if qr < 0 {
			t.Fatalf("%s: no QR in the job", prof)
		}
		// Without the image, the QR store is the largest command.
		doc := resyncDoc(t, "TICKET 1", 8, 8)
		doc.Lines = append(doc.Lines[:4], doc.Lines[5:]...)
		small := mustRender(t, doc, p, RenderOptions{})
		store := bytes.Index(small, []byte{0x31, 0x50, 0x30}) - 5 // GS ( k pL pH 31 50 30: store
		if store < 0 || !bytes.HasPrefix(small[store:], []byte{0x1D, 0x28, 0x6B}) {
			t.Fatalf("%s: no QR store in the job", prof)
		}
		want := 4 + int(small[store+3]) + int(small[store+4])<<8
		if got := DanglingBound(small); got != want {
			t.Errorf("%s: DanglingBound without image = %d, want the QR store's %d", prof, got, want)
		}
	}
}

// resyncedBanner is what the printer parses when a connection was cut after
// prefix and the next one sends the resync preamble for bound and then a job
// starting with a banner line. It returns the last ticket.
func resyncedBanner(prefix []byte, bound int) printertest.Ticket {
	next := cat(resyncPreamble(resyncDebt{bound: bound}), []byte{0x1B, 0x40}, []byte("BANNER LINE\nbody\n"), []byte{0x1D, 0x56, 0x00})
	tk, _ := printertest.Parse(cat(prefix, next), false)
	if len(tk) == 0 {
		return printertest.Ticket{}
	}
	return tk[len(tk)-1]
}

func bannerIntact(tk printertest.Ticket) bool {
	n := len(tk.Lines)
	return n >= 2 && tk.Lines[n-2] == "BANNER LINE" && tk.Lines[n-1] == "body"
}

// TestPreambleCompletesEveryCut checks DanglingBound against the emulator's
// parser, which models a real printer: wherever a rendered job (with QR,
// barcode and image) is cut, the preamble for DanglingBound of the whole
// job, and for DanglingBound of the bytes before the cut, completes the
// cut-off command, and a banner sent after it prints intact. Without the
// preamble, some cuts eat the banner.
func TestPreambleCompletesEveryCut(t *testing.T) {
	p := mustProfile(t, "epson-58")
	job := mustRender(t, resyncDoc(t, "TICKET 1", 64, 40), p, RenderOptions{})
	whole := DanglingBound(job)
	eaten := 0
	for cut := 0; cut <= len(job); cut++ {
		if tk := resyncedBanner(job[:cut], whole); !bannerIntact(tk) {
			t.Fatalf("cut at %d/%d with bound %d: banner not intact: %q", cut, len(job), whole, tk.Lines)
		}
		if b := DanglingBound(job[:cut]); b > whole {
			t.Fatalf("cut at %d: DanglingBound of the prefix %d > of the job %d", cut, b, whole)
		} else if tk := resyncedBanner(job[:cut], b); !bannerIntact(tk) {
			t.Fatalf("cut at %d/%d with prefix bound %d: banner not intact: %q", cut, len(job), b, tk.Lines)
		}
		tk, _ := printertest.Parse(cat(job[:cut], []byte{0x1B, 0x40}, []byte("BANNER LINE\nbody\n"), []byte{0x1D, 0x56, 0x00}), false)
		if len(tk) == 0 || !bannerIntact(tk[len(tk)-1]) {
			eaten++
		}
	}
	if eaten < len(job)/2 {
		t.Errorf("without the preamble only %d of %d cuts ate the banner; the test would not notice a missing preamble", eaten, len(job)+1)
	}
}

// TestPreambleBigRaster does the same at sampled cuts of a job whose image
// is wider than the paper, so its raster bands are full.
func TestPreambleBigRaster(t *testing.T) {
	p := mustProfile(t, "epson-80")
	job := mustRender(t, resyncDoc(t, "TICKET 1", 900, 700), p, RenderOptions{PossibleDuplicate: true})
	bound := DanglingBound(job)
	for cut := 0; cut <= len(job); cut += 1 + cut%577 {
		if tk := resyncedBanner(job[:cut], bound); !bannerIntact(tk) {
			t.Fatalf("cut at %d/%d: banner not intact: %q", cut, len(job), tk.Lines)
		}
	}
}

// TestResyncPreamble ensures the preamble is the NULs, ESC = 1, ESC @ and, only when
// part of a job may be on the paper, a feed and partial cut.
func TestResyncPreamble(t *testing.T) {
	if got := resyncPreamble(resyncDebt{bound: 3, cut: true}); !reflect.DeepEqual(got, []byte{0, 0, 0, 0x1B, '=', 1, 0x1B, 0x40, 0x1D, 0x56, 66, 3}) {
		t.Errorf("preamble with cut %x", got)
	}
	if got := resyncPreamble(resyncDebt{bound: 3}); !reflect.DeepEqual(got, []byte{0, 0, 0, 0x1B, '=', 1, 0x1B, 0x40}) {
		t.Fatalf("% x", got)
	}
}

// TestPrintsSomething ensures only bytes that mark paper (text, line feeds,
// images) call for cutting off a fragment: status queries, the barrier and
// mode commands do not.
func TestPrintsSomething(t *testing.T) {
	e := &Encoder{}
	e.Init().Bold(true).Align(AlignCenter)
	pid, _ := ProcessID([4]byte{'a', 'b', 'c', 'd'})
	quiet := [][]byte{
		RealTimeStatus(QueryPrinter), TransmitStatus(TransmitPaper), pid, e.Bytes(),
		PrinterID(InfoModel), {0x1D, 0x56, 0x42, 0x03},
	}
	for _, q := range quiet {
		if printsSomething(q) {
			t.Errorf("% x counted as printing", q)
		}
	}
	loud := [][]byte{
		[]byte("\x1b@hello"), {0x1B, 0x40, 0x0A},
		(&Encoder{}).Raster(1, 1, []byte{0x80}).Bytes(),
		append(append([]byte{}, pid...), 'x'),
	}
	for _, l := range loud {
		if !printsSomething(l) {
			t.Errorf("% x not counted as printing", l)
		}
	}
}

// FuzzDanglingBound ensures DanglingBound never panics and stays within its
// bounds on any input, and, for streams the emulator decodes the same way
// (no GB18030 mode, no command longer than the ceiling), that the preamble
// for the bound of the stream, or of the bytes before the cut, completes
// the cut-off command so that a following banner prints intact.
func FuzzDanglingBound(f *testing.F) {
	f.Add([]byte("hello\n"), uint16(3))
	f.Add([]byte{0x1D, 0x76, 0x30, 0, 2, 0, 3, 0, 1, 2, 3, 4, 5, 6}, uint16(9))
	f.Add([]byte{0x1D, 0x28, 0x6B, 0x05, 0x00, 0x31, 0x50, 0x30, 'a', 'b'}, uint16(7))
	f.Add([]byte{0x1D, 0x6B, 4, 'A', 'B', 0, 0x1D, 0x6B, 73, 2, 'x', 'y'}, uint16(4))
	f.Add([]byte{0x1B, 0x26, 3, 65, 66, 2, 1, 2, 3, 4, 5, 6, 1, 9, 9, 9}, uint16(6))
	f.Add([]byte{0x1C, 0x71, 1, 1, 0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8}, uint16(5))
	f.Add([]byte{0x10, 0x14, 8, 1, 3, 1, 4, 1, 5, 9, 0x10}, uint16(11))
	f.Add([]byte("0\x1b=00"), uint16(5)) // a job cut off after ESC = 0
	f.Fuzz(func(t *testing.T, stream []byte, cut uint16) {
		b := DanglingBound(stream)
		if b < MinDanglingBound || b > MaxDanglingBound {
			t.Fatalf("DanglingBound = %d, out of [%d, %d]", b, MinDanglingBound, MaxDanglingBound)
		}
		if b == MaxDanglingBound || bytes.Contains(stream, []byte{0x1C, 0x26}) {
			return
		}
		i := int(cut) % (len(stream) + 1)
		for _, bound := range []int{b, DanglingBound(stream[:i])} {
			if tk := resyncedBanner(stream[:i], bound); !bannerIntact(tk) {
				t.Fatalf("cut at %d of % x, bound %d: banner not intact: %q", i, stream, bound, tk.Lines)
			}
		}
	})
}
