package decode_test

import (
	"strings"
	"testing"

	"printgate/drivers/escpos"
	"printgate/drivers/escpos/decode"
)

// TestPreviewSymbolMarkers ensures the manager page's preview of a raw
// payload draws a PDF417 symbol (which used to come out as blank rows) and
// the other non-QR 2D symbols as markers with their data, HTML-escaped, and
// a QR code still as an image.
func TestPreviewSymbolMarkers(t *testing.T) {
	gsk := func(body string) string {
		return "\x1d(k" + string([]byte{byte(len(body)), 0}) + body
	}
	s := gsk("0P0<ORDER 42>") + gsk("0Q0") + gsk("6P0dm") + gsk("6Q0") + gsk("5P0az") + gsk("5Q0") +
		gsk("2P0mx") + gsk("2Q0") + gsk("1P0qr") + gsk("1Q0") + "\x1dV\x00"
	out := string(escpos.PreviewStreamHTML([]byte(s), decode.Options{}))
	for _, want := range []string{
		`<div class="mark symbol">[PDF417: &lt;ORDER 42&gt;]</div>`,
		`<div class="mark symbol">[DataMatrix: dm]</div>`,
		`<div class="mark symbol">[Aztec: az]</div>`,
		`<div class="mark symbol">[MaxiCode: mx]</div>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("preview lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "QR: qr") || !strings.Contains(out, "data:image/png") {
		t.Errorf("the QR code is not drawn as an image:\n%s", out)
	}
	if strings.Contains(out, "not understood") {
		t.Errorf("symbols counted as not understood:\n%s", out)
	}
}
