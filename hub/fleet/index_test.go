package fleet

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"printgate/hub/store"
	"printgate/internal/clock"
	"printgate/sync/wire"
	"printgate/taskdef"
)

// TestIndexFollowsTheRecord ensures the fleet's jobs that need someone
// follow the record after the first full scan without scanning again: a
// job that times out later appears, a timed-out job reprinted and printed
// leaves, a job of another store changes nothing; past rescanEvery the
// store is scanned in full again; and without the watch (after Close)
// every read scans and is still right.
func TestIndexFollowsTheRecord(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: t.TempDir(), Node: "n1", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.AddTenant(ctx, "acme", "")
	s1, _ := st.AddStore(ctx, "acme", "s1", "")
	s2, _ := st.AddStore(ctx, "acme", "s2", "")
	fc := clock.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	p := New(st, Options{Clock: fc, Logger: slog.New(slog.DiscardHandler)})
	defer p.Close()
	event := func(info store.StoreInfo, no string, n int, state string) {
		t.Helper()
		ev := wire.Event{TaskNo: no, N: n, State: taskdef.State(state), Printer: "kitchen", Origin: "local", At: fc.Now()}
		if n == 1 {
			ev.Job = &wire.JobInfo{Printer: "kitchen", Origin: "local", SHA256: "ab"}
		}
		if _, err := st.ApplyEvents(ctx, info, no, []wire.Event{ev}, fc.Now()); err != nil {
			t.Fatal(err)
		}
	}
	red := func() []string {
		t.Helper()
		fc.Advance(viewTTL)
		d, err := p.fleet(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range d.Stores {
			for _, j := range c.Attention {
				out = append(out, c.ID+"/"+j.TaskNo)
			}
		}
		slices.Sort(out)
		return out
	}
	// waitDirty waits until the watch has told the index of taskNo: it
	// comes on the engine's goroutine, after the write returned.
	waitDirty := func(id, no string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			p.index.mu.Lock()
			_, ok := p.index.stores[id].dirty[no]
			p.index.mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the watch never named %s/%s", id, no)
			}
		}
	}
	event(s1, "A", 1, "TIMED_OUT")
	event(s1, "B", 1, "PRINTED")
	if got := red(); !slices.Equal(got, []string{"s1/A"}) {
		t.Fatalf("first read: %v, want s1/A", got)
	}
	scanned := p.index.stores["s1"].scanned
	event(s1, "C", 1, "UNKNOWN")
	event(s1, "A", 2, "PRINTED")
	event(s2, "D", 1, "HELD")
	waitDirty("s1", "C")
	waitDirty("s1", "A")
	waitDirty("s2", "D")
	if got := red(); !slices.Equal(got, []string{"s1/C", "s2/D"}) {
		t.Fatalf("after the changes: %v, want s1/C s2/D", got)
	}
	if p.index.stores["s1"].scanned != scanned {
		t.Fatal("the store was scanned in full again; want only the changed jobs read")
	}
	fc.Advance(rescanEvery)
	if got := red(); !slices.Equal(got, []string{"s1/C", "s2/D"}) || p.index.stores["s1"].scanned == scanned {
		t.Fatalf("past rescanEvery: %v, scanned %v; want a full scan with the same jobs", got, p.index.stores["s1"].scanned)
	}
	p.Close()
	event(s1, "E", 1, "FAILED")
	if got := red(); !slices.Equal(got, []string{"s1/C", "s1/E", "s2/D"}) {
		t.Fatalf("without the watch: %v", got)
	}
}
