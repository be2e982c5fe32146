package escpos

import (
	"bytes"
	"image"
	"image/png"
	"strings"
	"testing"
)

// whitePNG is a w×h white PNG.
func whitePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 0xFF
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDocumentPixelsBounded ensures a document's images together are
// bounded (MaxDocumentPixels) when it is read, at intake: a hundred white
// 2048×2048 images (under a megabyte) rendered for most of a minute in the
// printer's lane. Four of the largest size are accepted.
func TestDocumentPixelsBounded(t *testing.T) {
	big := whitePNG(t, 2048, 2048)
	doc := func(n int) *Document {
		d := &Document{}
		for range n {
			d.Lines = append(d.Lines, ImageLine{PNG: big})
		}
		return d
	}
	if err := doc(4).Validate(); err != nil {
		t.Fatalf("four 2048×2048 images: %v", err)
	}
	err := doc(5).Validate()
	if err == nil || !strings.Contains(err.Error(), "line 5: images add up to") {
		t.Fatalf("five 2048×2048 images: %v, want refused at line 5", err)
	}
}

// TestImageTooTallRefusedAtIntake ensures an image that prints taller than
// MaxImageHeight on the printer's paper is refused by CheckDocument (the
// intake check), not found out by Render in the printer's lane.
func TestImageTooTallRefusedAtIntake(t *testing.T) {
	p, err := LookupProfile("epson-58")
	if err != nil {
		t.Fatal(err)
	}
	// 400×2048 is 384×1966 on 58 mm paper: fits. 200×2600 stays 2600 high.
	ok := &Document{Lines: []Line{ImageLine{PNG: whitePNG(t, 400, 2048)}}}
	if err := CheckDocument(ok, p); err != nil {
		t.Fatalf("an image that fits: %v", err)
	}
	tall := &Document{Lines: []Line{TextLine{Text: "x"}, ImageLine{PNG: whitePNG(t, 200, 2600)}}}
	err = CheckDocument(tall, p)
	if err == nil || !strings.Contains(err.Error(), "line 2: image is 2600 dots high") {
		t.Fatalf("CheckDocument: %v, want line 2 refused", err)
	}
	if _, rerr := Render(tall, p, RenderOptions{}); rerr == nil {
		t.Fatal("Render printed what CheckDocument refuses")
	}
}

// BenchmarkRenderLargestDocument renders the largest document the bound
// allows (four 2048×2048 images, 576 dot rows each on 80 mm paper), for
// the time it holds a lane compared with the time it takes to print.
func BenchmarkRenderLargestDocument(b *testing.B) {
	big := whitePNG(b, 2048, 2048)
	d := &Document{}
	for range 4 {
		d.Lines = append(d.Lines, ImageLine{PNG: big})
	}
	p, err := LookupProfile("epson-80")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Render(d, p, RenderOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
