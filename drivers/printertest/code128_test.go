package printertest

import "testing"

// TestCode128Text ensures CODE128 data reads as a scanner would: set
// switches dropped, code set C bytes as digit pairs, "{{" as a brace.
func TestCode128Text(t *testing.T) {
	for in, want := range map[string]string{
		"{BORD":                             "ORD",
		"{BORD{C\x14\x1a\x0b\x1e{B-{C\x00*": "ORD20261130-0042",
		"{B{{x":                             "{x",
	} {
		if got := code128Text(in); got != want {
			t.Errorf("code128Text(%q) = %q, want %q", in, got, want)
		}
	}
}
