package decode

import (
	"strings"
	"testing"
)

// TestDrawCJKWidth ensures the box accounts for double-width characters.
func TestDrawCJKWidth(t *testing.T) {
	var b strings.Builder
	if err := (Sheet{Seq: 1, Lines: []string{"宫保鸡丁 x2", "ab"}, QR: []string{"q"}, Cut: "full"}).Draw(&b, "k"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	w := Columns(lines[0])
	for _, l := range lines {
		if Columns(l) != w {
			t.Fatalf("ragged box:\n%s", b.String())
		}
	}
	if !strings.Contains(b.String(), "[QR q]") || !strings.HasSuffix(lines[len(lines)-1], "[CUT]┘") {
		t.Fatalf("\n%s", b.String())
	}
}
