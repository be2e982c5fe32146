package escpos

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"regexp"
	"strings"
	"testing"

	qrcode "github.com/skip2/go-qrcode"

	"printgate/drivers/escpos/decode"
	"printgate/drivers/escpos/paper"
)

// htmlRow is a text row of a fragment: its classes and its text as shown.
type htmlRowT struct {
	class string
	inner string // raw HTML
	text  string // tags stripped, entities decoded
}

var (
	rowRe  = regexp.MustCompile(`<div class="(row[^"]*)">(.*?)</div>`)
	tagRe  = regexp.MustCompile(`<[^>]*>`)
	imgRe  = regexp.MustCompile(`<div class="(sym[^"]*)"><img src="data:image/png;base64,([^"]+)" width="(\d+)" height="(\d+)" alt="([^"]*)"></div>`)
	paperR = regexp.MustCompile(`^<div class="paper (paper-\w+)"`)
)

func htmlRows(s string) []htmlRowT {
	var out []htmlRowT
	for _, m := range rowRe.FindAllStringSubmatch(s, -1) {
		out = append(out, htmlRowT{class: m[1], inner: m[2], text: html.UnescapeString(tagRe.ReplaceAllString(m[2], ""))})
	}
	return out
}

type htmlImg struct {
	class, alt string
	img        image.Image
}

func htmlImages(t *testing.T, s string) []htmlImg {
	t.Helper()
	var out []htmlImg
	for _, m := range imgRe.FindAllStringSubmatch(s, -1) {
		raw, err := base64.StdEncoding.DecodeString(m[2])
		if err != nil {
			t.Fatalf("image data: %v", err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("image is not a valid PNG: %v", err)
		}
		if fmt.Sprint(img.Bounds().Dx()) != m[3] || fmt.Sprint(img.Bounds().Dy()) != m[4] {
			t.Errorf("img width/height attributes %sx%s, PNG is %v", m[3], m[4], img.Bounds())
		}
		out = append(out, htmlImg{class: m[1], alt: html.UnescapeString(m[5]), img: img})
	}
	return out
}

func black(img image.Image, x, y int) bool {
	r, g, b, _ := img.At(x, y).RGBA()
	return r+g+b < 3*0x8000
}

// inkBox is the bounding box of the black pixels.
func inkBox(img image.Image) image.Rectangle {
	var box image.Rectangle
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if black(img, x, y) {
				box = box.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	return box
}

func mustPreviewHTML(t *testing.T, d *Document, p Profile, o RenderOptions) string {
	t.Helper()
	h, err := PreviewHTML(d, p, o)
	if err != nil {
		t.Fatalf("PreviewHTML on %s: %v", p.Name, err)
	}
	return string(h)
}

func logoPNG(t *testing.T, w, h int) ([]byte, func(x, y int) bool) {
	t.Helper()
	ink := func(x, y int) bool { return (x/4+y/4)%2 == 0 || y == 0 }
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if ink(x, y) {
				img.SetGray(x, y, color.Gray{0})
			} else {
				img.SetGray(x, y, color.Gray{255})
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), ink
}

// TestPreviewHTMLTicket checks every kind of line on an 80 mm ticket: the
// banner, a double-size bold title, the QR code's modules, the CODE128
// bars, the logo's dots, feeds, markers and the cut.
func TestPreviewHTMLTicket(t *testing.T) {
	p := mustProfile(t, "epson-80")
	logo, ink := logoPNG(t, 40, 24)
	const qrData = "https://example.com/o/ORD-42"
	const bcData = "ORD20261130-0042"
	doc := &Document{Lines: []Line{
		TextLine{Text: "TABLE 12", Size: TextSize{2, 2}, Bold: true, Align: AlignCenter},
		TextLine{Text: "Noodles", Right: "12.50", Underline: true},
		QRLine{Data: qrData, Size: 4},
		BarcodeLine{Type: CODE128, Data: bcData},
		ImageLine{PNG: logo},
		FeedLine{Lines: 2},
		BeepLine{Times: 2},
		DrawerLine{},
		CutLine{Kind: CutFull},
	}}
	out := mustPreviewHTML(t, doc, p, RenderOptions{PossibleDuplicate: true})

	if m := paperR.FindStringSubmatch(out); m == nil || m[1] != "paper-48" {
		t.Fatalf("paper class: %q", out[:min(80, len(out))])
	}
	if strings.Contains(out, "style=") {
		t.Error("fragment has a style attribute; the page's CSP forbids them")
	}
	rows := htmlRows(out)
	if len(rows) < 5 {
		t.Fatalf("rows: %+v", rows)
	}
	// The banner: double size, and the whole row (padding too) bold white on black.
	ban := rows[0]
	if ban.class != "row w2 h2" || !strings.HasPrefix(ban.inner, `<span class="b inv">`) ||
		strings.Count(ban.inner, "<span") != 1 || !strings.Contains(ban.text, "POSSIBLE DUPLICATE") || len(ban.text) != 24 {
		t.Errorf("banner row %+v: want one bold inverted span 24 columns wide", ban)
	}
	title := rows[1]
	if title.class != "row w2 h2" || title.inner != `<span class="b">        TABLE 12</span>` {
		t.Errorf("title row %+v", title)
	}
	if !strings.Contains(rows[2].inner, `<span class="u">Noodles</span>`) || !strings.HasSuffix(rows[2].text, "12.50") || len(rows[2].text) != 48 {
		t.Errorf("item row %+v", rows[2])
	}

	imgs := htmlImages(t, out)
	if len(imgs) != 3 {
		t.Fatalf("%d images, want QR, barcode, logo", len(imgs))
	}
	for _, im := range imgs {
		if im.img.Bounds().Dx() != p.Dots {
			t.Errorf("%s image is %d dots wide, want the paper's %d", im.class, im.img.Bounds().Dx(), p.Dots)
		}
	}

	// QR: the alt text is the content, the modules are go-qrcode's symbol
	// for it at level M, 4 dots each, centred.
	qr := imgs[0]
	if qr.class != "sym qr" || qr.alt != qrData {
		t.Errorf("qr image %q alt %q", qr.class, qr.alt)
	}
	want, err := qrcode.New(qrData, qrcode.Medium)
	if err != nil {
		t.Fatal(err)
	}
	want.DisableBorder = true
	bm := want.Bitmap()
	box := inkBox(qr.img)
	if box.Dx() != len(bm)*4 || box.Dy() != len(bm)*4 || box.Min.X != (p.Dots-len(bm)*4)/2 {
		t.Fatalf("qr ink box %v, want %d modules of 4 dots, centred", box, len(bm))
	}
	for y, row := range bm {
		for x, b := range row {
			if black(qr.img, box.Min.X+x*4+1, box.Min.Y+y*4+1) != b {
				t.Fatalf("qr module (%d,%d) differs from go-qrcode's symbol", x, y)
			}
		}
	}

	// Barcode: the bars are the modules of the payload Render sends
	// (code sets included), as wide as the layout's estimate, and the
	// human-readable text is under them.
	bc := imgs[1]
	if bc.class != "sym barcode" || bc.alt != "CODE128 "+bcData {
		t.Errorf("barcode image %q alt %q", bc.class, bc.alt)
	}
	payload, err := barcodePayload(CODE128, bcData)
	if err != nil {
		t.Fatal(err)
	}
	mods, text, err := paper.Bars(byte(CODE128), payload)
	if err != nil || text != bcData {
		t.Fatalf("bars: %v, text %q", err, text)
	}
	if len(mods) != barcodeModules(CODE128, payload) {
		t.Errorf("%d modules, the layout estimates %d", len(mods), barcodeModules(CODE128, payload))
	}
	got := barModules(t, bc.img)
	if modString(got) != modString(mods) {
		t.Errorf("bars\n%s\nwant\n%s", modString(got), modString(mods))
	}
	if !strings.Contains(out, `<div class="row hri">`+bcData+`</div>`) {
		t.Error("no human-readable text under the barcode")
	}

	// Logo: the real dots, centred (the PNG is pure black and white, so
	// dithering keeps it as it is).
	lg := imgs[2]
	if lg.class != "sym image" || lg.img.Bounds().Dy() != 24 {
		t.Fatalf("logo %q %v", lg.class, lg.img.Bounds())
	}
	left := (p.Dots - 40) / 2
	for y := 0; y < 24; y++ {
		for x := -2; x < 42; x++ {
			if black(lg.img, left+x, y) != (x >= 0 && x < 40 && ink(x, y)) {
				t.Fatalf("logo dot (%d,%d) wrong", x, y)
			}
		}
	}

	// Feeds, markers, cut: in order after the logo.
	tail := out[strings.Index(out, `class="sym image"`):]
	order := []string{`<div class="row"></div>` + "\n" + `<div class="row"></div>`, `class="mark beep">♪ BEEP ×2<`, `class="mark drawer">`, `class="cut"`, "✂ full cut"}
	for _, s := range order {
		i := strings.Index(tail, s)
		if i < 0 {
			t.Fatalf("missing %q after the logo in order", s)
		}
		tail = tail[i:]
	}
	if strings.Count(out, `class="cut"`) != 1 {
		t.Error("a document ending with a cut gets no second cut")
	}
}

// barModules reads a barcode picture back into modules: the run lengths of
// its first row, divided by the narrowest run.
func barModules(t *testing.T, img image.Image) []bool {
	t.Helper()
	box := inkBox(img)
	var runs []int
	var colors []bool
	for x := box.Min.X; x < box.Max.X; x++ {
		b := black(img, x, box.Min.Y)
		if n := len(colors); n > 0 && colors[n-1] == b {
			runs[n-1]++
			continue
		}
		runs, colors = append(runs, 1), append(colors, b)
	}
	unit := box.Dx()
	for _, r := range runs {
		unit = min(unit, r)
	}
	var m []bool
	for i, r := range runs {
		if r%unit != 0 {
			t.Fatalf("run of %d dots is not a whole number of %d-dot modules", r, unit)
		}
		for range r / unit {
			m = append(m, colors[i])
		}
	}
	return m
}

func modString(m []bool) string {
	var sb strings.Builder
	for _, b := range m {
		if b {
			sb.WriteByte('1')
		} else {
			sb.WriteByte('0')
		}
	}
	return sb.String()
}

// TestPreviewHTMLEscapes ensures no text of a document reaches the page as
// markup.
func TestPreviewHTMLEscapes(t *testing.T) {
	evil := `<script>alert("x")</script>&<img src=x onerror=alert(1)>`
	doc := &Document{Lines: []Line{
		TextLine{Text: evil, Right: "<b>"},
		QRLine{Data: `"><script>alert(1)</script>`},
		BarcodeLine{Type: CODE128, Data: `<i>"x"</i>`},
	}}
	out := mustPreviewHTML(t, doc, mustProfile(t, "epson-80"), RenderOptions{FailoverFrom: "<k>", FailoverTo: `"bar"`})
	for _, bad := range []string{"<script", "<img src=x", "<b>", "<i>", "<k>", `""`} {
		if strings.Contains(out, bad) {
			t.Errorf("fragment contains %q unescaped", bad)
		}
	}
	if !strings.Contains(out, "&lt;script&gt;") {
		t.Error("the text is missing, escaped")
	}
	assertOnlyOurTags(t, out)
}

// ourTags is every tag a fragment may contain.
var ourTags = regexp.MustCompile(`<div class="[a-z0-9 -]+"( data-columns="\d+" data-dots="\d+"| role="separator" aria-label="[^"<>]*")?>|</div>|<span class="[a-z ]+">|</span>|<img src="data:image/png;base64,[A-Za-z0-9+/=]+" width="\d+" height="\d+" alt="[^"<>]*">|<span>`)

func assertOnlyOurTags(t testing.TB, out string) {
	t.Helper()
	rest := ourTags.ReplaceAllString(out, "")
	if i := strings.IndexAny(rest, "<>"); i >= 0 {
		t.Fatalf("markup that is not ours: %q", rest[max(0, i-40):min(len(rest), i+40)])
	}
	if strings.Count(out, "<div") != strings.Count(out, "</div>") || strings.Count(out, "<span") != strings.Count(out, "</span>") {
		t.Fatal("unbalanced tags")
	}
}

// previewDocs are documents whose text rows the HTML preview and the text
// preview must agree on.
func previewDocs(t *testing.T) map[string]*Document {
	return map[string]*Document{
		"kitchen": mustParse(t, `{"lines":[
			{"text":"TABLE 7","size":"2x2","bold":true,"align":"center"},
			{"rule":"-"},
			{"text":"2 x Beef noodles with extra chili and a very long note that wraps","right":"24.00"},
			{"text":"  no onions","underline":true},
			{"text":"Total","right":"48.00","size":"2x1"},
			{"text":"thanks","align":"right","size":"1x2"},
			{"feed":1},
			{"qr":"https://example.com/r/1"},
			{"text":"after","align":"center"}]}`),
		"chinese": mustParse(t, `{"lines":[
			{"text":"桌号 7 — 外卖","size":"2x2","align":"center"},
			{"text":"牛肉面（大份），加辣，不要葱。还有一段很长的备注需要换行显示","right":"¥24.00"},
			{"text":"合计","right":"48.00","bold":true}]}`),
	}
}

// TestPreviewHTMLAgreesWithPreview ensures the HTML preview shows the text
// preview's rows: the same text in the same order (the text preview
// spreads double-width text with spaces and draws banner padding with '#',
// so those are compared without spaces).
func TestPreviewHTMLAgreesWithPreview(t *testing.T) {
	for name, doc := range previewDocs(t) {
		for _, prof := range []string{"epson-80", "epson-58", "xprinter-80", "xprinter-58"} {
			p := mustProfile(t, prof)
			o := RenderOptions{PossibleDuplicate: true, Reprint: true}
			textRows := textPreviewRows(t, doc, p, o)
			htmlR := htmlRows(mustPreviewHTML(t, doc, p, o))
			if name == "kitchen" {
				classes := map[string]string{}
				for _, r := range htmlR {
					classes[strings.TrimSpace(strings.ReplaceAll(r.text, " ", ""))] = r.class
				}
				for text, want := range map[string]string{"Total48.00": "row w2 h1", "thanks": "row w1 h2", "after": "row", "TABLE7": "row w2 h2"} {
					if classes[text] != want {
						t.Errorf("%s on %s: row %q has classes %q, want %q", name, prof, text, classes[text], want)
					}
				}
			}
			var hr []string
			for _, r := range htmlR {
				if strings.Contains(r.class, "hri") {
					continue
				}
				hr = append(hr, r.text)
			}
			// Printers without a cutter feed blank rows to tear off at,
			// which the text preview does not draw.
			if p.Cutter == CutterNone {
				for len(hr) > 0 && strings.TrimSpace(hr[len(hr)-1]) == "" {
					hr = hr[:len(hr)-1]
				}
			}
			if len(hr) != len(textRows) {
				t.Fatalf("%s on %s: %d HTML rows, %d text rows\n%q\n%q", name, prof, len(hr), len(textRows), hr, textRows)
			}
			for i := range hr {
				h, x := hr[i], textRows[i]
				if !wideRe.MatchString(htmlR[i].class) { // single width: exact
					h, x = strings.TrimRight(h, " "), strings.TrimRight(x, " ")
				} else {
					h, x = strings.ReplaceAll(h, " ", ""), strings.NewReplacer(" ", "", "#", "").Replace(x)
				}
				if h != x {
					t.Errorf("%s on %s row %d: HTML %q, text %q", name, prof, i, hr[i], textRows[i])
				}
			}
		}
	}
}

// wideRe matches the classes of a double (or wider) width row.
var wideRe = regexp.MustCompile(`(^| )w[2-8]( |$)`)

// textPreviewRows are Preview's text rows: markers and the cut left out.
func textPreviewRows(t *testing.T, doc *Document, p Profile, o RenderOptions) []string {
	var out []string
	for _, l := range mustPreview(t, doc, p, o) {
		s := strings.TrimSpace(l)
		if strings.HasPrefix(s, "[") || strings.Contains(s, "✂") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// TestPreviewStreamHTMLMatchesDocument ensures a raw payload previews as the
// document it was rendered from: same rows with the same classes and
// spans, same pictures, same cut.
func TestPreviewStreamHTMLMatchesDocument(t *testing.T) {
	logo, _ := logoPNG(t, 64, 300) // taller than one 255-row band
	for name, doc := range previewDocs(t) {
		doc.Lines = append(doc.Lines, BarcodeLine{Type: CODE128, Data: "ORD-42"}, ImageLine{PNG: logo}, BeepLine{Times: 1}, DrawerLine{})
		for _, prof := range []string{"epson-80", "xprinter-58"} {
			p := mustProfile(t, prof)
			o := RenderOptions{PossibleDuplicate: true}
			fromDoc := mustPreviewHTML(t, doc, p, o)
			stream := mustRender(t, doc, p, o)
			fromStream := string(PreviewStreamHTML(stream, decode.Options{}))

			if a, b := paperR.FindStringSubmatch(fromDoc), paperR.FindStringSubmatch(fromStream); a == nil || b == nil || a[1] != b[1] {
				t.Errorf("%s on %s: paper %v from the document, %v from the stream", name, prof, a, b)
			}
			dr, sr := htmlRows(fromDoc), htmlRows(fromStream)
			if len(dr) != len(sr) {
				t.Fatalf("%s on %s: %d rows from the document, %d from the stream", name, prof, len(dr), len(sr))
			}
			for i := range dr {
				if dr[i] != sr[i] {
					t.Errorf("%s on %s row %d:\ndocument %+v\nstream   %+v", name, prof, i, dr[i], sr[i])
				}
			}
			di, si := htmlImages(t, fromDoc), htmlImages(t, fromStream)
			if len(di) != len(si) {
				t.Fatalf("%s on %s: %d images from the document, %d from the stream", name, prof, len(di), len(si))
			}
			for i := range di {
				// A logo's alt text differs: the document knows the logo's
				// size, the stream only the raster's, margin included.
				if di[i].class != si[i].class || (di[i].class != "sym image" && di[i].alt != si[i].alt) || !sameInk(di[i].img, si[i].img) {
					t.Errorf("%s on %s image %d: %s %q vs %s %q, or different dots", name, prof, i, di[i].class, di[i].alt, si[i].class, si[i].alt)
				}
			}
			marks := []string{"mark beep", "mark drawer", "✂ partial cut"}
			if p.Cutter == CutterNone {
				marks = marks[:2]
			}
			for _, s := range marks {
				if !strings.Contains(fromStream, s) {
					t.Errorf("%s on %s: stream preview lacks %q", name, prof, s)
				}
			}
			if strings.Contains(fromStream, "not understood") {
				t.Errorf("%s on %s: Render's own bytes not understood", name, prof)
			}
			assertOnlyOurTags(t, fromStream)
		}
	}
}

func sameInk(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	for y := 0; y < a.Bounds().Dy(); y++ {
		for x := 0; x < a.Bounds().Dx(); x++ {
			if black(a, x, y) != black(b, x, y) {
				return false
			}
		}
	}
	return true
}

// TestPreviewHTMLBounded ensures a huge ticket previews as its first rows
// and a count of the rest.
func TestPreviewHTMLBounded(t *testing.T) {
	doc := &Document{}
	for i := range 2500 {
		doc.Lines = append(doc.Lines, TextLine{Text: fmt.Sprintf("line %d", i)})
	}
	out := mustPreviewHTML(t, doc, mustProfile(t, "epson-58"), RenderOptions{})
	if n := len(htmlRows(out)); n != paper.MaxRows {
		t.Errorf("%d rows, want %d", n, paper.MaxRows)
	}
	// 2500 text rows and the cut, 2000 shown.
	if !strings.Contains(out, "… 501 more rows") {
		t.Errorf("no count of the rows left out: %q", out[len(out)-120:])
	}
}

// TestPreviewStreamHTMLNotUnderstood ensures what cannot be decoded is
// counted, and what was decoded is still shown.
func TestPreviewStreamHTMLNotUnderstood(t *testing.T) {
	stream := []byte("hello\n\x1b\x7f\x01world\n\x1dv0\x00\x02\x00\x05")
	out := string(PreviewStreamHTML(stream, decode.Options{}))
	rows := htmlRows(out)
	if len(rows) != 2 || rows[0].text != "hello" || rows[1].text != "world" {
		t.Errorf("rows %+v", rows)
	}
	if !strings.Contains(out, "3 bytes not understood; the stream ends in the middle of a command (7 bytes).") {
		t.Errorf("no note: %s", out)
	}
	if out := string(PreviewStreamHTML([]byte("\x1dV"), decode.Options{})); !strings.Contains(out, "2 bytes not understood") {
		t.Errorf("truncated cut: %s", out)
	}
}

// FuzzPreviewStreamHTML ensures any payload previews without panicking, as
// a bounded fragment made of our own markup only.
func FuzzPreviewStreamHTML(f *testing.F) {
	p, _ := LookupProfile("xprinter-58")
	doc := &Document{Lines: []Line{TextLine{Text: "桌 7", Size: TextSize{2, 2}}, QRLine{Data: "q"}, BarcodeLine{Type: EAN13, Data: "400638133393"}}}
	if b, err := Render(doc, p, RenderOptions{Reprint: true}); err == nil {
		f.Add(b, true)
	}
	f.Add([]byte("hi\x1b!\x38big\n\x1dB\x01inv\n\x1da\x01\x1dk\x49\x04{Bab\x1dV\x00"), false)
	f.Add([]byte{0x1D, 0x76, 0x30, 0, 1, 0, 2, 0, 0xF0, 0x0F, 0x1D, 0x6B, 0x02, '1', '2', 0}, false)
	f.Add([]byte("\x1d(k\x05\x001P0ab\x1d(k\x03\x001Q0\x1d(L\x0c\x000p0\x01\x011\x08\x00\x02\x00\xff\x00"), false)
	f.Fuzz(func(t *testing.T, stream []byte, cjk bool) {
		out := string(PreviewStreamHTML(stream, decode.Options{PowerOnCJK: cjk}))
		if !strings.HasPrefix(out, `<div class="paper `) || !strings.HasSuffix(out, "</div>\n") {
			t.Fatalf("not a paper fragment: %.100q", out)
		}
		if n := strings.Count(out, `<div class="row`) + strings.Count(out, `<div class="sym`) + strings.Count(out, `<div class="mark`); n > paper.MaxRows+1 {
			t.Fatalf("%d rows", n)
		}
		assertOnlyOurTags(t, out)
	})
}

// TestPreviewStreamFeedsBounded ensures a payload of huge feeds is drawn
// bounded and says how many blank rows it left out.
func TestPreviewStreamFeedsBounded(t *testing.T) {
	stream := bytes.Repeat([]byte{0x1b, 'd', 255}, 2000) // 510,000 blank rows asked for
	out := string(PreviewStreamHTML(append(stream, "END\n"...), decode.Options{}))
	if !strings.Contains(out, "blank feed rows not drawn") || len(out) > 1<<20 {
		t.Errorf("preview of huge feeds lacks the note or the text (%d bytes):\n%.300s", len(out), out)
	}
}
