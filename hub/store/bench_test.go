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
func BenchmarkSubmit(b *testing.B) {
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
	now := time.Now()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if _, err := s.Submit(ctx, st, job(fmt.Sprintf("B%d", i)), "", now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "submits/s")
}

// BenchmarkSubmitWithWebhook is BenchmarkSubmit with one webhook endpoint
// of the tenant: each submit also writes its delivery (a third synced
// write) before it returns. No sender runs.
func BenchmarkSubmitWithWebhook(b *testing.B) {
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
	if err := s.AddWebhook(ctx, Webhook{ID: "ep_1", Tenant: "acme", URL: "https://x/h", Secret: "whsec_AAAA"}); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if _, err := s.Submit(ctx, st, job(fmt.Sprintf("B%d", i)), "", now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "submits/s")
}
