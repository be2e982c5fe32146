package escpos

import (
	"bytes"
	"flag"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/text/width"
)

// goldenUpdate is -update: rewrite the golden files instead of comparing.
// Another test file of this package may define the same flag; whichever
// defines it first wins and both read it by name.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files in testdata/escpos")
	}
}

func goldenUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

const testdataDir = "../../testdata/escpos"

func mustProfile(t testing.TB, name string) Profile {
	t.Helper()
	p, err := LookupProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustParse(t testing.TB, js string) *Document {
	t.Helper()
	d, err := ParseDocument([]byte(js))
	if err != nil {
		t.Fatalf("parse %s: %v", js, err)
	}
	return d
}

func mustRender(t testing.TB, d *Document, p Profile, o RenderOptions) []byte {
	t.Helper()
	b, err := Render(d, p, o)
	if err != nil {
		t.Fatalf("render on %s: %v", p.Name, err)
	}
	return b
}

func mustPreview(t testing.TB, d *Document, p Profile, o RenderOptions) []string {
	t.Helper()
	s, err := Preview(d, p, o)
	if err != nil {
		t.Fatalf("preview on %s: %v", p.Name, err)
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// TestGolden ensures Render and Preview produce byte-for-byte the reviewed
// output for the sample documents. Run with -update after an intended change
// and review the diff of testdata/escpos.
func TestGolden(t *testing.T) {
	cases := []struct {
		doc, profile, name string
		opts               RenderOptions
	}{
		{"kitchen-zh.json", "xprinter-80", "kitchen-zh.xprinter-80", RenderOptions{}},
		{"kitchen-zh.json", "xprinter-58", "kitchen-zh.xprinter-58.failover", RenderOptions{PossibleDuplicate: true, FailoverFrom: "kitchen", FailoverTo: "bar"}},
		{"receipt-en.json", "epson-58", "receipt-en.epson-58", RenderOptions{}},
		{"receipt-en.json", "epson-80", "receipt-en.epson-80.reprint", RenderOptions{Reprint: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(testdataDir, c.doc))
			if err != nil {
				t.Fatal(err)
			}
			doc, err := ParseDocument(src)
			if err != nil {
				t.Fatal(err)
			}
			p := mustProfile(t, c.profile)
			got := mustRender(t, doc, p, c.opts)
			if _, err := scanStream(got); err != nil {
				t.Fatalf("output is not clean ESC/POS: %v", err)
			}
			prev, err := Preview(doc, p, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join(testdataDir, c.name+".bin"), got)
			compareGolden(t, filepath.Join(testdataDir, c.name+".preview.txt"), []byte(prev))
		})
	}
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if goldenUpdate() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Errorf("%s differs at byte %d (got %d bytes, want %d): got % X..., want % X...",
			path, i, len(got), len(want), got[i:min(len(got), i+16)], want[i:min(len(want), i+16)])
	}
}

// TestWrap ensures the line breaker breaks at spaces, between CJK
// characters, inside over-long words only, and counts CJK as two columns.
func TestWrap(t *testing.T) {
	gb := newCodec(mustProfile(t, "xprinter-80"))
	cases := []struct {
		s     string
		width int
		want  []string
	}{
		{"hello world foo", 11, []string{"hello world", "foo"}},
		{"hello world foo", 5, []string{"hello", "world", "foo"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"宫保鸡丁宫保鸡丁", 6, []string{"宫保鸡", "丁宫保", "鸡丁"}},
		{"宫保鸡丁宫保鸡丁", 7, []string{"宫保鸡", "丁宫保", "鸡丁"}},
		{"Coca-Cola 可口可乐", 12, []string{"Coca-Cola 可", "口可乐"}},
		{"  indented text", 10, []string{"  indented", "text"}},
		{"one\ntwo", 10, []string{"one", "two"}},
		{"", 10, []string{""}},
		{"a\n\nb", 10, []string{"a", "", "b"}},
		{"trailing   ", 20, []string{"trailing"}},
		// Kinsoku: "，" may not start a row, "（" may not end one.
		{"少辣不要葱，多放醋", 10, []string{"少辣不要", "葱，多放醋"}},
		{"米饭分（开装）", 8, []string{"米饭分", "（开装）"}},
		{"ab，", 2, []string{"ab", "，"}},
	}
	for _, c := range cases {
		got := wrap(c.s, c.width, gb.runeWidth)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("wrap(%q, %d) = %q, want %q", c.s, c.width, got, c.want)
		}
		for _, row := range got {
			if w := gb.strWidth(row); w > c.width {
				t.Errorf("wrap(%q, %d): row %q is %d columns", c.s, c.width, row, w)
			}
		}
	}
}

// TestCJKWidthMatchesUnicode ensures every East Asian Wide or Fullwidth
// character a Chinese profile prints counts two columns, as
// golang.org/x/text/width classifies them, and ASCII one.
func TestCJKWidthMatchesUnicode(t *testing.T) {
	c := newCodec(mustProfile(t, "xprinter-80"))
	for _, r := range "宫保鸡丁鱼香肉丝（少辣，）！：；、。【】ＡＢＣ１２３abcXYZ019 -:!" {
		k := width.LookupRune(r).Kind()
		want := 1
		if k == width.EastAsianWide || k == width.EastAsianFullwidth {
			want = 2
		}
		if got := c.runeWidth(r); got != want {
			t.Errorf("width of %q = %d, want %d (%v)", r, got, want, k)
		}
	}
	// Ambiguous characters come from the printer's CJK font: two columns.
	for _, r := range "·“”→①" {
		if got := c.runeWidth(r); got != 2 {
			t.Errorf("width of ambiguous %q on a GB18030 printer = %d, want 2", r, got)
		}
	}
}

// TestLayoutRows ensures alignment, right text on the same row, wrapping of
// the left part beside it and double width halving the columns, by reading
// the preview (which draws the layout Render prints).
func TestLayoutRows(t *testing.T) {
	zh := mustProfile(t, "xprinter-80")
	en := mustProfile(t, "epson-58")
	cases := []struct {
		name string
		p    Profile
		doc  string
		want []string
	}{
		{"right on same row", zh, `{"lines":[{"text":"宫保鸡丁","right":"x2"}]}`,
			[]string{"宫保鸡丁" + strings.Repeat(" ", 38) + "x2"}},
		{"center", en, `{"lines":[{"text":"Hi","align":"center"}]}`,
			[]string{strings.Repeat(" ", 15) + "Hi" + strings.Repeat(" ", 15)}},
		{"right align", en, `{"lines":[{"text":"Hi","align":"right"}]}`,
			[]string{strings.Repeat(" ", 30) + "Hi"}},
		{"left wraps beside right", en, `{"lines":[{"text":"Blueberry muffin with extra butter","right":"2.95"}]}`,
			[]string{"Blueberry muffin with extra 2.95", "butter                          "}},
		{"left wraps beside wide right", en, `{"lines":[{"text":"Blueberry muffin with extra butter","right":"EUR 12.95"}]}`,
			[]string{"Blueberry muffin with  EUR 12.95", "extra butter                    "}},
		{"double width halves columns", en, `{"lines":[{"text":"ABCDEFGHIJKLMNOPQRS","size":"2x1"}]}`,
			[]string{"A B C D E F G H I J K L M N O P ", "Q R S                           "}},
		{"double width CJK", zh, `{"lines":[{"text":"宫保鸡丁宫保鸡丁宫保鸡丁宫","size":"2x2"}]}`,
			[]string{"宫  保  鸡  丁  宫  保  鸡  丁  宫  保  鸡  丁  ", "宫                                              "}},
		{"right too wide goes below", en, `{"lines":[{"text":"Item","right":"a very long right hand text"}]}`,
			[]string{"Item                            ", "     a very long right hand text"}},
		{"rule of wide char", zh, `{"lines":[{"rule":"═"}]}`,
			[]string{strings.Repeat("═", 24)}},
	}
	for _, c := range cases {
		got := mustPreview(t, mustParse(t, c.doc), c.p, RenderOptions{})
		got = got[:len(got)-1] // final cut line
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestRenderTextBytes ensures the printed bytes of a right-aligned row are
// exactly left text, spaces, right text, LF: what the preview shows.
func TestRenderTextBytes(t *testing.T) {
	out := mustRender(t, mustParse(t, `{"lines":[{"text":"Tea","right":"1.00"}]}`), mustProfile(t, "epson-58"), RenderOptions{})
	want := []byte("Tea" + strings.Repeat(" ", 25) + "1.00\n")
	if !bytes.Contains(out, want) {
		t.Errorf("output % X does not contain the row % X", out, want)
	}
	if !bytes.HasPrefix(out, []byte{0x1B, 0x40, 0x1C, 0x2E, 0x1B, 0x74, 16}) {
		t.Errorf("epson-58 output starts % X, want ESC @, FS ., ESC t 16", out[:8])
	}
}

// TestControlBytesStripped ensures text can never reach the printer as a
// command: the drawer-kick sequence in a note prints as "px", never as ESC p,
// and no C0, DEL or C1 byte survives from any text field or banner.
func TestControlBytesStripped(t *testing.T) {
	doc := mustParse(t, `{"lines":[
		{"text":"note \u001bp\u0000\u0019x end","right":"\u001bp\u0000\u0019x"},
		{"rule":"\u001b-"},
		{"text":"all C0 \u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f\u007f C1 \u0080\u0085\u009b\u009f done"},
		{"qr":"x\u0010\u0014\u0001\u0000\u0005y"}
	]}`)
	opts := RenderOptions{FailoverFrom: "a\x1bp\x00\x19x", FailoverTo: "b\x1d\x56\x00"}
	for _, name := range ProfileNames() {
		p := mustProfile(t, name)
		out := mustRender(t, doc, p, opts)
		if bytes.Contains(out, []byte{0x1B, 0x70}) {
			t.Errorf("%s: output contains 1B 70 (ESC p) without a drawer line: % X", name, out)
		}
		s, err := scanStream(out)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Contains(s.text, []byte("note px end")) {
			t.Errorf("%s: text %q lacks the stripped note", name, s.text)
		}
		if wantCuts := map[bool]int{true: 0, false: 1}[p.Cutter == CutterNone]; s.commands["1D 56"] != wantCuts {
			t.Errorf("%s: %d cuts, want only the final one", name, s.commands["1D 56"])
		}
	}
}

// TestDrawerOnlyFromDrawerLine ensures a drawer line produces exactly one
// ESC p 0 25 120 and nothing else does.
func TestDrawerOnlyFromDrawerLine(t *testing.T) {
	out := mustRender(t, mustParse(t, `{"lines":[{"text":"x"},{"drawer":true}]}`), mustProfile(t, "epson-80"), RenderOptions{})
	if n := bytes.Count(out, []byte{0x1B, 0x70}); n != 1 || !bytes.Contains(out, []byte{0x1B, 0x70, 0x00, 0x19, 0x78}) {
		t.Errorf("%d ESC p in % X, want one 1B 70 00 19 78", n, out)
	}
}

// TestGB18030 ensures Chinese profiles switch to Chinese mode and send
// GB18030 bytes, and that characters their fonts lack become "?".
func TestGB18030(t *testing.T) {
	p := mustProfile(t, "xprinter-80")
	out := mustRender(t, mustParse(t, `{"lines":[{"text":"宫保鸡丁 x2 😀"}]}`), p, RenderOptions{})
	if !bytes.HasPrefix(out, []byte{0x1B, 0x40, 0x1C, 0x26}) {
		t.Errorf("output starts % X, want ESC @ FS &", out[:4])
	}
	if bytes.Contains(out, []byte{0x1C, 0x2E}) || bytes.Contains(out, []byte{0x1B, 0x74}) {
		t.Error("GB18030 profile sent FS . or ESC t")
	}
	want := []byte{0xB9, 0xAC, 0xB1, 0xA3, 0xBC, 0xA6, 0xB6, 0xA1, ' ', 'x', '2', ' ', '?', '\n'}
	if !bytes.Contains(out, want) {
		t.Errorf("output % X lacks GB18030 text % X", out, want)
	}
}

// TestSingleByteCodePages ensures Latin text is encoded in the profile's
// code page, with look-alikes or "?" for what it lacks.
func TestSingleByteCodePages(t *testing.T) {
	doc := mustParse(t, `{"lines":[{"text":"CAFÉ € → 宫"}]}`)
	cases := map[string][]byte{
		"epson-80":  {'C', 'A', 'F', 0xC9, ' ', 0x80, ' ', '-', '>', ' ', '?', '\n'},          // WPC1252
		"oneway-80": {'C', 'A', 'F', 0x90, ' ', 'E', 'U', 'R', ' ', '-', '>', ' ', '?', '\n'}, // PC437
	}
	for name, want := range cases {
		out := mustRender(t, doc, mustProfile(t, name), RenderOptions{})
		if !bytes.Contains(out, want) {
			t.Errorf("%s: output % X lacks % X", name, out, want)
		}
	}
	// Decomposed accents are composed first, so they fit a code page.
	out := mustRender(t, mustParse(t, `{"lines":[{"text":"Cafe\u0301"}]}`), mustProfile(t, "epson-80"), RenderOptions{})
	if !bytes.Contains(out, []byte{'C', 'a', 'f', 0xE9, '\n'}) {
		t.Errorf("decomposed é not composed: % X", out)
	}
}

// TestCuts ensures the final cut is added only when the document does not
// end with one, and cuts follow the profile's cutter.
func TestCuts(t *testing.T) {
	feedPartial := []byte{0x1D, 0x56, 0x42, cutFeed}
	feedFull := []byte{0x1D, 0x56, 0x41, cutFeed}
	cases := []struct {
		profile, doc string
		suffix       []byte
		cuts         int
	}{
		{"epson-80", `{"lines":[{"text":"a"}]}`, feedPartial, 1},
		{"epson-80", `{"lines":[{"text":"a"},{"cut":"full"}]}`, feedFull, 1},
		{"epson-80", `{"lines":[{"cut":"full"},{"text":"a"}]}`, feedPartial, 2},
		{"oneway-80", `{"lines":[{"text":"a"},{"cut":"full"}]}`, feedPartial, 1},
		{"xprinter-58", `{"lines":[{"text":"a"},{"cut":"full"}]}`, []byte{0x1B, 0x64, tearFeed}, 0},
	}
	for _, c := range cases {
		out := mustRender(t, mustParse(t, c.doc), mustProfile(t, c.profile), RenderOptions{})
		if !bytes.HasSuffix(out, c.suffix) {
			t.Errorf("%s %s: ends % X, want % X", c.profile, c.doc, out[max(0, len(out)-6):], c.suffix)
		}
		if n := bytes.Count(out, []byte{0x1D, 0x56}); n != c.cuts {
			t.Errorf("%s %s: %d cuts, want %d", c.profile, c.doc, n, c.cuts)
		}
	}
}

// TestBeepDialects ensures each profile's buzzer command, or none.
func TestBeepDialects(t *testing.T) {
	doc := mustParse(t, `{"lines":[{"beep":2}]}`)
	cases := map[string][]byte{
		"epson-80":    {0x1B, 0x28, 0x41, 0x04, 0x00, 0x30, 0x31, 0x02, 0x0A},
		"xprinter-80": {0x1B, 0x42, 0x02, beepLength},
		"oneway-80":   nil,
	}
	for name, want := range cases {
		out := mustRender(t, doc, mustProfile(t, name), RenderOptions{})
		hasBeep := bytes.Contains(out, []byte{0x1B, 0x28, 0x41}) || bytes.Contains(out, []byte{0x1B, 0x42})
		if want == nil && hasBeep || want != nil && !bytes.Contains(out, want) {
			t.Errorf("%s: % X, want beep % X", name, out, want)
		}
	}
}

// TestBanners ensures banners come first, reversed, and in Chinese too only
// on Chinese profiles.
func TestBanners(t *testing.T) {
	doc := mustParse(t, `{"lines":[{"text":"body"}]}`)
	opts := RenderOptions{PossibleDuplicate: true, Reprint: true, FailoverFrom: "kitchen", FailoverTo: "bar"}
	zh := strings.Join(mustPreview(t, doc, mustProfile(t, "xprinter-80"), opts), "\n")
	for _, s := range []string{"P O S S I B L E   D U P L I C A T E", "可  能  重  复", "R E P R I N T", "补  打", "k i t c h e n   →    b a r"} {
		if !strings.Contains(zh, s) {
			t.Errorf("xprinter-80 preview lacks %q:\n%s", s, zh)
		}
	}
	en := mustPreview(t, doc, mustProfile(t, "epson-80"), opts)
	if strings.Contains(strings.Join(en, "\n"), "可") || !strings.Contains(en[2], "- >") {
		t.Errorf("epson-80 banners wrong:\n%s", strings.Join(en, "\n"))
	}
	if !strings.HasPrefix(en[0], "#") || !strings.HasPrefix(en[len(en)-2], "body") {
		t.Errorf("banners not first or not reversed:\n%s", strings.Join(en, "\n"))
	}
	out := mustRender(t, doc, mustProfile(t, "epson-80"), opts)
	if !bytes.Contains(out, []byte{0x1D, 0x42, 0x01}) || !bytes.Contains(out, []byte{0x1D, 0x21, 0x11}) {
		t.Errorf("banner not reversed double size: % X", out)
	}
	if bytes.Index(out, []byte("body")) < bytes.Index(out, []byte("REPRINT")) {
		t.Error("banner after the body")
	}
}

// TestPreviewRowsFillColumns ensures every preview row is exactly the
// profile's width, so the page can draw it in a fixed box.
func TestPreviewRowsFillColumns(t *testing.T) {
	for _, doc := range []string{"kitchen-zh.json", "receipt-en.json"} {
		src, err := os.ReadFile(filepath.Join(testdataDir, doc))
		if err != nil {
			t.Fatal(err)
		}
		d, err := ParseDocument(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range ProfileNames() {
			p := mustProfile(t, name)
			c := newCodec(p)
			for i, row := range mustPreview(t, d, p, RenderOptions{PossibleDuplicate: true}) {
				w := 0
				for _, r := range row {
					if c.encodeRune(r) != nil {
						w += c.runeWidth(r)
					} else {
						w += displayWidth(r)
					}
				}
				if w != p.Columns {
					t.Errorf("%s on %s: row %d %q is %d columns, want %d", doc, name, i, row, w, p.Columns)
				}
			}
		}
	}
}

// TestRenderErrorsNameLine ensures a document that cannot print on a profile
// fails with the line number, while the same document prints on wider paper.
func TestRenderErrorsNameLine(t *testing.T) {
	doc := mustParse(t, `{"lines":[{"text":"x"},{"barcode":"ABCDEFGHIJKLMNOPQRSTUV","type":"CODE39"}]}`)
	if _, err := Render(doc, mustProfile(t, "epson-58"), RenderOptions{}); err == nil || !strings.HasPrefix(err.Error(), "line 2: CODE39 barcode") {
		t.Errorf("58 mm: err %v, want line 2 barcode too long", err)
	}
	if _, err := Preview(doc, mustProfile(t, "epson-58"), RenderOptions{}); err == nil {
		t.Error("preview accepted what render refuses")
	}
	doc = mustParse(t, `{"lines":[{"barcode":"ABCDEFGHIJ","type":"CODE39"}]}`)
	out := mustRender(t, doc, mustProfile(t, "epson-80"), RenderOptions{})
	if !bytes.Contains(out, []byte{0x1D, 0x77, 3}) {
		t.Errorf("short barcode on 80 mm not at module width 3: % X", out)
	}
}

// TestBarcodeFitsPaper ensures CODE128 packs digits in code set C so an
// order number fits 58 mm paper, and the module width shrinks to fit.
func TestBarcodeFitsPaper(t *testing.T) {
	doc := mustParse(t, `{"lines":[{"barcode":"ORD20261130-0042"}]}`)
	out := mustRender(t, doc, mustProfile(t, "epson-58"), RenderOptions{})
	want := []byte{0x1D, 0x77, 2, 0x1D, 0x48, 2, 0x1D, 0x6B, 73, 18, '{', 'B', 'O', 'R', 'D', '{', 'C', 20, 26, 11, 30, '{', 'B', '-', '{', 'C', 0, 42}
	if !bytes.Contains(out, want) {
		t.Errorf("output % X lacks % X", out, want)
	}
	// 1620 would be DLE DC4 in code set C: those digits stay in set B.
	p, err := code128Payload("1620")
	if err != nil || string(p) != "{B1620" {
		t.Errorf("code128Payload(1620) = %q, %v; want set B", p, err)
	}
	if p, err := code128Payload("162001"); err != nil || bytes.Contains(p, []byte{0x10, 0x14}) {
		t.Errorf("code128Payload(162001) = %q, %v; contains DLE DC4", p, err)
	}
}

// TestQRShrinksToFit ensures the module size is reduced when the symbol
// would be wider than the paper.
func TestQRShrinksToFit(t *testing.T) {
	doc := &Document{Lines: []Line{QRLine{Data: strings.Repeat("a", 400), Size: 16}}}
	out := mustRender(t, doc, mustProfile(t, "epson-58"), RenderOptions{})
	// 400 bytes at level M needs version 15 (77 modules): 384/77 = 4 dots.
	if !bytes.Contains(out, []byte{0x1D, 0x28, 0x6B, 0x03, 0x00, 0x31, 0x43, 4}) {
		t.Errorf("qr size not reduced to 4: % X", out[:60])
	}
}

func grayImage(w, h int, px func(x, y int) uint8) image.Image {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetGray(x, y, color.Gray{px(x, y)})
		}
	}
	return img
}

// TestDither ensures bit order (MSB leftmost, 1 black), centring, scaling
// and Floyd–Steinberg error diffusion on tiny images whose bits are worked
// out by hand.
func TestDither(t *testing.T) {
	cases := []struct {
		name  string
		img   image.Image
		paper int
		want  []byte
	}{
		// 100,100,100,100: black (err +100), 143.75 white (err -111.25),
		// 51.3 black, 122.5 black -> 1011, centred by 2 dots -> 0010 1100.
		{"diffusion", grayImage(4, 1, func(x, y int) uint8 { return 100 }), 8, []byte{0x2C}},
		{"msb is leftmost", grayImage(8, 1, func(x, y int) uint8 { return uint8(255 * min(x, 1)) }), 8, []byte{0x80}},
		{"black and white rows", grayImage(8, 2, func(x, y int) uint8 { return uint8(255 * y) }), 8, []byte{0xFF, 0x00}},
		{"scaled to paper", grayImage(16, 2, func(x, y int) uint8 { return 0 }), 8, []byte{0xFF}},
		{"transparent is white", image.NewNRGBA(image.Rect(0, 0, 8, 1)), 8, []byte{0x00}},
	}
	for _, c := range cases {
		r, err := rasterize(c.img, c.paper)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.bits, c.want) {
			t.Errorf("%s: bits %08b, want %08b", c.name, r.bits, c.want)
		}
	}
}

// TestRasterBandsAndRealtime ensures tall images go out in GS v 0 bands of at
// most 255 rows and that raster data never contains a real-time command.
func TestRasterBandsAndRealtime(t *testing.T) {
	// Column pattern 0x10 0x04 repeated: exactly DLE EOT 4 in every row.
	img := grayImage(16, 600, func(x, y int) uint8 {
		if x == 3 || x == 13 {
			return 0
		}
		return 255
	})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	doc := &Document{Lines: []Line{ImageLine{PNG: buf.Bytes()}}}
	p := mustProfile(t, "epson-80")
	p.Dots = 64 // centring shifts by 24 dots, whole bytes, keeping the pattern
	out := mustRender(t, doc, p, RenderOptions{})
	s, err := scanStream(out)
	if err != nil {
		t.Fatal(err)
	}
	if s.commands["1D 76"] != 3 {
		t.Errorf("%d raster bands, want 3 (255+255+90)", s.commands["1D 76"])
	}
	for _, hdr := range [][]byte{{0x1D, 0x76, 0x30, 0, 5, 0, 255, 0}, {0x1D, 0x76, 0x30, 0, 5, 0, 90, 0}} {
		if !bytes.Contains(out, hdr) {
			t.Errorf("missing band header % X", hdr)
		}
	}
}

// TestRenderDoesNotMutate ensures Render leaves the document as it was, so
// the agent can render one document for several printers.
func TestRenderDoesNotMutate(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(testdataDir, "kitchen-zh.json"))
	if err != nil {
		t.Fatal(err)
	}
	d := mustParse(t, string(src))
	before, _ := d.MarshalJSON()
	mustRender(t, d, mustProfile(t, "xprinter-58"), RenderOptions{Reprint: true})
	after, _ := d.MarshalJSON()
	if !bytes.Equal(before, after) {
		t.Error("Render changed the document")
	}
}

// TestRenderBanner ensures the banner for a raw-payload task has the banner
// rows, no cut, and ends with ESC @ so the payload starts from power-on
// state; and that an empty document renders the banners and a cut.
func TestRenderBanner(t *testing.T) {
	p := mustProfile(t, "xprinter-80")
	if b, err := RenderBanner(p, RenderOptions{}); err != nil || b != nil {
		t.Errorf("no banner asked: %q, %v", b, err)
	}
	b, err := RenderBanner(p, RenderOptions{PossibleDuplicate: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := scanStream(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.commands["1D 56"] != 0 || !bytes.HasSuffix(b, []byte{'\n', 0x1B, 0x40}) || !bytes.Contains(s.text, []byte("POSSIBLE DUPLICATE")) {
		t.Errorf("banner % X", b)
	}
	out := mustRender(t, &Document{}, p, RenderOptions{Reprint: true})
	if !bytes.Contains(out, []byte("REPRINT")) || !bytes.HasSuffix(out, []byte{0x1D, 0x56, 0x42, cutFeed}) {
		t.Errorf("empty document render % X", out)
	}
}
