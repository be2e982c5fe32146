package printertest

import "testing"

// TestCopies ensures copies are counted per tag, marked only when the banner
// came before them since the previous copy in the same ticket.
func TestCopies(t *testing.T) {
	tickets := []Ticket{
		{Lines: []string{"TICKET A", "POSSIBLE DUPLICATE", "TICKET A"}},
		{Lines: []string{"POSSIBLE DUPLICATE", "x", "TICKET B", "TICKET C"}},
		{Lines: []string{"TICKET C extra words", "TICKET A"}},
	}
	plain, marked := Copies(tickets, "TICKET", "POSSIBLE DUPLICATE")
	if plain["A"] != 2 || marked["A"] != 1 || marked["B"] != 1 || plain["B"] != 0 || plain["C"] != 1 || marked["C"] != 0 {
		t.Errorf("plain %v marked %v", plain, marked)
	}
}
