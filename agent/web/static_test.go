package web

import (
	"net/http"
	"testing"

	"printgate/drivers/escpos"
)

// TestPaperCSS ensures the page serves the receipt-paper sheet of the
// package that draws the previews, so the preview's classes are styled.
func TestPaperCSS(t *testing.T) {
	h := newHarness(t)
	w := h.get(anon(), "/static/paper.css")
	wantStatus(t, w, http.StatusOK)
	if got := w.Body.String(); got != escpos.PaperCSS {
		t.Errorf("paper.css is not escpos.PaperCSS (%d bytes, want %d)", len(got), len(escpos.PaperCSS))
	}
	if ct := w.Header().Get("Content-Type"); ct != "text/css; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
}
