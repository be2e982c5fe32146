package suggest

import "testing"

// TestClosest ensures a typo finds its word (a swap counts as one edit),
// and a word too far from every candidate finds none.
func TestClosest(t *testing.T) {
	keys := []string{"text", "rule", "align", "backup", "listen"}
	for in, want := range map[string]string{
		"txt": "text", "TEXT": "text", "allign": "align", "bakup": "backup", "lisetn": "listen",
		"colour": "", "qr_size": "",
	} {
		if got := Closest(in, keys); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
}
