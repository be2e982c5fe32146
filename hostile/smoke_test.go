package hostile

import "testing"

// TestHarnessPrints checks the harness itself: an honest POS's ticket is
// accepted and printed, so an attack test that sees a refusal is seeing
// the defence, not a broken rig.
func TestHarnessPrints(t *testing.T) {
	a := start(t, Setup{})
	if code := a.submit(t, "H-1"); code != 202 && code != 200 {
		t.Fatalf("submit: HTTP %d", code)
	}
	ctx, cancel := contextWithTimeout(t, 30)
	defer cancel()
	if _, err := a.Printer.WaitTickets(ctx, 1); err != nil {
		t.Fatalf("ticket not printed: %v", err)
	}
}
