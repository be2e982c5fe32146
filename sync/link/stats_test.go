package link

import (
	"slices"
	"sync"
	"testing"
)

// TestWelcomeStoreAndStateHook ensures the welcome's store_id is kept in
// Stats for the manager page, and that OnStateChange hears the link going
// online, once per change, so the page's live view needs no polling.
func TestWelcomeStoreAndStateHook(t *testing.T) {
	h := newHarness(t)
	h.start(t, h.options())
	var mu sync.Mutex
	var seen []string
	h.link.OnStateChange(func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	})
	if st := h.link.Stats(); st.Store != "" {
		t.Errorf("store %q before any welcome", st.Store)
	}
	p, _ := h.cloud.welcome(t)
	p.barrier(t)
	if st := h.link.Stats(); st.Store != "store-9" || st.State != StateOnline {
		t.Errorf("stats %+v, want store-9 online", st)
	}
	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	if !slices.Equal(got, []string{StateOnline}) {
		t.Errorf("state changes heard %v, want [online]", got)
	}
}
