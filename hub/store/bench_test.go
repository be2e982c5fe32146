package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkSubmit measures sequential submits with their dedupe (two
// synced writes each: the record's Create and the pending mark) on the
// embedded engine with sync_always; it reports submits/s.
func BenchmarkSubmit(b *testing.B) { benchSubmit(b, false, false) }

// BenchmarkSubmitWithWebhook is BenchmarkSubmit with one webhook endpoint
// of the tenant: each submit's record also carries its message in its
// outbox (no more writes before the answer). No fan-out and no sender run.
func BenchmarkSubmitWithWebhook(b *testing.B) { benchSubmit(b, true, false) }

// BenchmarkSubmitFannedOut is BenchmarkSubmitWithWebhook with the fan-out
// running, and the clock stopped only once every submit's delivery is
// queued: the whole work of a submit and its webhook (the record, the
// pending mark, the delivery, the outbox emptied), for a figure to set
// beside the code that wrote the delivery before the answer.
func BenchmarkSubmitFannedOut(b *testing.B) { benchSubmit(b, true, true) }

func benchSubmit(b *testing.B, hook, fanOut bool) {
	s, err := Open(context.Background(), Options{Dir: b.TempDir(), Node: "n1"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.AddTenant(ctx, "acme", ""); err != nil {
		b.Fatal(err)
	}
	st, err := s.AddStore(ctx, "acme", "s1", "")
	if err != nil {
		b.Fatal(err)
	}
	if hook {
		if err := s.AddWebhook(ctx, Webhook{ID: "ep_1", Tenant: "acme", URL: "https://x/h", Secret: "whsec_AAAA"}); err != nil {
			b.Fatal(err)
		}
	}
	if fanOut {
		fctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.RunOutbox(fctx)
		}()
		defer func() {
			cancel()
			<-done
		}()
	}
	now := time.Now()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if _, err := s.Submit(ctx, st, job(fmt.Sprintf("B%d", i)), "", now); err != nil {
			b.Fatal(err)
		}
	}
	// The fan-out reads the writes in order: the last job's outbox emptied,
	// every delivery is queued.
	for last := fmt.Sprintf("B%d", b.N-1); fanOut; time.Sleep(time.Millisecond) { // the fan-out is another goroutine
		if t, err := s.Task(ctx, "s1", last); err != nil {
			b.Fatal(err)
		} else if len(t.Outbox) == 0 {
			break
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "submits/s")
	if fanOut {
		b.StopTimer()
		if keys, err := s.DeliveryKeys(ctx, 0); err != nil || len(keys) != b.N {
			b.Fatalf("%d deliveries queued (%v), want %d", len(keys), err, b.N)
		}
	}
}
