package spool

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestStatesDocMatchesTable holds docs/STATES.md to the state table the
// spool enforces: a POS integrator reads that page, so a move added to or
// removed from transitions without the page fails here.
func TestStatesDocMatchesTable(t *testing.T) {
	raw, err := os.ReadFile("../docs/STATES.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := map[State][]State{}
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "| from | may move to |") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "| ---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) != 2 {
			t.Fatalf("STATES.md row %q: want 2 cells", line)
		}
		from := State(strings.TrimSpace(cells[0]))
		if !from.Valid() {
			t.Fatalf("STATES.md names unknown state %q", from)
		}
		to := strings.TrimSpace(cells[1])
		if to == "(terminal)" {
			doc[from] = nil
			continue
		}
		for _, s := range strings.Split(to, ",") {
			doc[from] = append(doc[from], State(strings.TrimSpace(s)))
		}
	}
	if len(doc) != len(AllStates) {
		t.Fatalf("STATES.md lists %d states, the spool has %d", len(doc), len(AllStates))
	}
	for _, from := range AllStates {
		want := slices.Clone(transitions[from])
		got := slices.Clone(doc[from])
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("STATES.md: %s may move to %v; the spool allows %v", from, got, want)
		}
	}
}
