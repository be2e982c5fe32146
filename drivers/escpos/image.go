package escpos

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
)

// raster is a 1-bit image ready for GS v 0: stride bytes per row, MSB the
// leftmost dot, 1 black.
type raster struct {
	w, h   int // dots, as printed (w excludes the centring margin)
	stride int
	bits   []byte
}

// bandRows is the most dot rows sent in one GS v 0. Smaller commands keep
// cheap printers with small receive buffers from stalling on a logo.
const bandRows = 255

// decodeImage decodes a PNG, refusing sizes that would take too much memory
// before decoding the pixels.
func decodeImage(b []byte) (image.Image, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("image is not a PNG: %w", err)
	}
	if cfg.Width < 1 || cfg.Height < 1 || cfg.Width*cfg.Height > MaxImagePixels {
		return nil, fmt.Errorf("image is %dx%d pixels, more than %d in all", cfg.Width, cfg.Height, MaxImagePixels)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("image is not a PNG: %w", err)
	}
	return img, nil
}

// printedHeight is how many dot rows a w×h image prints on paperDots-wide
// paper: rasterize scales a wider image down to the paper's width.
func printedHeight(w, h, paperDots int) int {
	if w > paperDots {
		return max((h*paperDots+w/2)/w, 1)
	}
	return h
}

// checkImageHeights refuses a document with an image taller than
// MaxImageHeight once scaled to p's paper, as Render would: at intake,
// before the document waits its turn, rather than FAILED RENDER in the
// printer's lane.
func checkImageHeights(doc *Document, p Profile) error {
	for i, l := range doc.Lines {
		im, ok := l.(ImageLine)
		if !ok {
			continue
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(im.PNG))
		if err != nil {
			return fmt.Errorf("line %d: image is not a PNG: %w", i+1, err)
		}
		if h := printedHeight(cfg.Width, cfg.Height, p.Dots); h > MaxImageHeight {
			return fmt.Errorf("line %d: image is %d dots high when printed on %d-dot paper, more than %d", i+1, h, p.Dots, MaxImageHeight)
		}
	}
	return nil
}

// rasterize scales img down to at most paperDots wide (never up: a small logo
// stays crisp), dithers it to black and white with Floyd–Steinberg and
// centres it on the paper.
func rasterize(img image.Image, paperDots int) (*raster, error) {
	gray := luminance(img)
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w > paperDots {
		nh := printedHeight(w, h, paperDots)
		gray = scaleDown(gray, w, h, paperDots, nh)
		w, h = paperDots, nh
	}
	if h > MaxImageHeight {
		return nil, fmt.Errorf("image is %d dots high when printed, more than %d", h, MaxImageHeight)
	}
	dots := dither(gray, w, h)
	left := (paperDots - w) / 2
	r := &raster{w: w, h: h, stride: (left + w + 7) / 8}
	r.bits = make([]byte, r.stride*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if dots[y*w+x] {
				px := left + x
				r.bits[y*r.stride+px/8] |= 0x80 >> (px % 8)
			}
		}
	}
	defuseRealtime(r.bits)
	return r, nil
}

// luminance returns img as grey levels 0 (black) .. 255 (white), with
// transparent pixels composited onto white paper.
func luminance(img image.Image) []float32 {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	out := make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.NRGBA64Model.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA64)
			// Rec. 601 luma, then alpha over white.
			l := (0.299*float32(c.R) + 0.587*float32(c.G) + 0.114*float32(c.B)) / 257
			a := float32(c.A) / 0xFFFF
			out[y*w+x] = l*a + 255*(1-a)
		}
	}
	return out
}

// scaleDown resizes by area averaging: each target pixel is the mean of the
// source pixels under it, weighted by how much of each it covers, so thin
// lines in a logo fade to grey (and dither) instead of vanishing.
func scaleDown(src []float32, sw, sh, dw, dh int) []float32 {
	out := make([]float32, dw*dh)
	fx := float32(sw) / float32(dw)
	fy := float32(sh) / float32(dh)
	for y := 0; y < dh; y++ {
		y0, y1 := float32(y)*fy, float32(y+1)*fy
		for x := 0; x < dw; x++ {
			x0, x1 := float32(x)*fx, float32(x+1)*fx
			var sum, area float32
			for sy := int(y0); sy < sh && float32(sy) < y1; sy++ {
				wy := min(y1, float32(sy+1)) - max(y0, float32(sy))
				for sx := int(x0); sx < sw && float32(sx) < x1; sx++ {
					wx := min(x1, float32(sx+1)) - max(x0, float32(sx))
					sum += src[sy*sw+sx] * wx * wy
					area += wx * wy
				}
			}
			if area > 0 {
				out[y*dw+x] = sum / area
			} else {
				out[y*dw+x] = 255
			}
		}
	}
	return out
}

// dither turns grey levels into black (true) and white dots with
// Floyd–Steinberg error diffusion (7/16 right, 3/16 down-left, 5/16 down,
// 1/16 down-right), which keeps photos and anti-aliased logos legible on a
// printer that has no grey.
func dither(gray []float32, w, h int) []bool {
	g := append([]float32(nil), gray...)
	out := make([]bool, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			old := g[i]
			nv := float32(255)
			if old < 128 {
				nv = 0
				out[i] = true
			}
			e := old - nv
			if x+1 < w {
				g[i+1] += e * 7 / 16
			}
			if y+1 < h {
				if x > 0 {
					g[i+w-1] += e * 3 / 16
				}
				g[i+w] += e * 5 / 16
				if x+1 < w {
					g[i+w+1] += e * 1 / 16
				}
			}
		}
	}
	return out
}

// defuseRealtime clears any DLE byte in raster data that is followed by the
// second byte of a real-time command (EOT 04, ENQ 05, DC4 14). Printers obey
// real-time commands even inside image data: DLE EOT would inject a status
// byte into the session's reads and DLE DC4 1 pulses the cash drawer. The
// cost is one white dot where there should have been a black one.
func defuseRealtime(b []byte) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == cDLE && (b[i+1] == 0x04 || b[i+1] == 0x05 || b[i+1] == 0x14) {
			b[i] = 0
		}
	}
}

// encode appends the raster as GS v 0 commands of at most bandRows rows.
func (r *raster) encode(e *Encoder) {
	for y := 0; y < r.h; y += bandRows {
		n := min(bandRows, r.h-y)
		e.Raster(r.stride, n, r.bits[y*r.stride:(y+n)*r.stride])
	}
}
