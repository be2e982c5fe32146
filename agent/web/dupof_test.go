package web

import (
	"html"
	"strings"
	"testing"
	"time"

	"printgate/spool"
)

// TestRawDuplicateSaysWhy ensures a raw job marked POSSIBLE DUPLICATE at
// the raw port says on its page which earlier job it matched, how much
// earlier, and how a POS that prints copies on purpose stops the mark (a
// POS that printed two copies got the mark on the second with no reason).
// A task marked for another cause names no match.
func TestRawDuplicateSaysWhy(t *testing.T) {
	h := newHarness(t)
	h.setPIN()
	c := h.session()
	at := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	first := h.f.add("RAW_kitchen_20260301-110000_1", spool.StatePrinted, at, "")
	second := h.f.add("RAW_kitchen_20260301-110003_2", spool.StatePrinted, at.Add(3*time.Second), "")
	other := h.f.add("OTHER_v1", spool.StatePrinted, at.Add(4*time.Second), "")
	h.f.mu.Lock()
	for _, tk := range []*spool.Task{first, second} {
		tk.Origin, tk.SHA256 = spool.OriginRaw, strings.Repeat("ab", 32)
	}
	second.PossibleDuplicate, other.PossibleDuplicate = true, true
	h.f.mu.Unlock()

	page := h.get(c, "/tasks/"+second.TaskNo).Body.String()
	for _, want := range []string{`id="dup-why"`, `href="/tasks/` + first.TaskNo + `"`, html.EscapeString(`raw_duplicate_window = "0s"`), "3s earlier"} {
		if !strings.Contains(page, want) {
			t.Errorf("the marked raw job's page lacks %q", want)
		}
	}
	if page := h.get(c, "/tasks/"+other.TaskNo).Body.String(); strings.Contains(page, `id="dup-why"`) {
		t.Error("a task marked for another cause names a matched raw job")
	}
}
