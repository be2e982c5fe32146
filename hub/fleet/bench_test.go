package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"printgate/hub/store"
	"printgate/sync/wire"
)

// BenchmarkFleetRead measures one read of a tenant's fleet without the
// 3 s cache: one store with 2,000 jobs on record, 100 of them timed out.
// A full read scans every job record of the store (there is no read model
// by state); a watched read reads only the jobs the watch named.
func BenchmarkFleetRead(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: b.TempDir(), Node: "n1", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if _, err := st.AddTenant(ctx, "acme", ""); err != nil {
		b.Fatal(err)
	}
	info, err := st.AddStore(ctx, "acme", "s1", "")
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	for i := range 2000 {
		no := fmt.Sprintf("J-%05d", i)
		if i%20 == 0 {
			ev := []wire.Event{{TaskNo: no, N: 1, State: "TIMED_OUT", Printer: "kitchen", Origin: "local", At: now,
				Job: &wire.JobInfo{Printer: "kitchen", Origin: "local", SHA256: fmt.Sprintf("%064d", i)}}}
			if _, err := st.ApplyEvents(ctx, info, no, ev, now); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if _, err := st.Submit(ctx, info, wire.Job{TaskNo: no, Printer: "kitchen", Document: []byte(`{"lines":[{"text":"x"}]}`)}, "", now); err != nil {
			b.Fatal(err)
		}
	}
	p := New(st, Options{Logger: slog.New(slog.DiscardHandler)})
	defer p.Close()
	read := func(b *testing.B, full bool) {
		for b.Loop() {
			p.views.mu.Lock()
			p.views.m = nil
			p.views.mu.Unlock()
			if full {
				p.index.mu.Lock()
				p.index.stores = nil
				p.index.mu.Unlock()
			}
			d, err := p.fleet(ctx, "acme")
			if err != nil || len(d.Stores) != 1 || len(d.Stores[0].Attention) != maxAttention {
				b.Fatalf("%+v %v", len(d.Stores), err)
			}
		}
	}
	// full: a store's first read (and one every rescanEvery).
	b.Run("full", func(b *testing.B) { read(b, true) })
	// watched: every later read, nothing changed meanwhile.
	b.Run("watched", func(b *testing.B) { read(b, false) })
}
