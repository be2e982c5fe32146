package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestJobQuotas holds submits to MaxJobsPerStore and MaxJobsPerTenant: a
// store at its bound refuses a new job (*QuotaError naming the store, the
// count and the bound) but still answers a known task_no as its
// duplicate; a tenant at its bound refuses on any of its stores, another
// tenant is not held up; the counts come from the engine's records, so a
// reopened store (an empty cache) refuses alike, and a count older than a
// minute is made again.
func TestJobQuotas(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	openQ := func() *Store {
		s, err := Open(ctx, Options{Dir: dir, Node: "n1", MaxJobsPerStore: 3, MaxJobsPerTenant: 5})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := openQ()
	s1 := seed(t, s)
	s2, err := s.AddStore(ctx, "acme", "s2", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddTenant(ctx, "rival", ""); err != nil {
		t.Fatal(err)
	}
	r1, err := s.AddStore(ctx, "rival", "r1", "")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0).UTC()
	for _, no := range []string{"A1", "A2", "A3"} {
		if _, err := s.Submit(ctx, s1, job(no), "", now); err != nil {
			t.Fatalf("%s: %v", no, err)
		}
	}
	var qe *QuotaError
	_, err = s.Submit(ctx, s1, job("A4"), "", now)
	if !errors.Is(err, ErrQuota) || !errors.As(err, &qe) || qe.Tenant || qe.ID != "s1" || qe.Jobs != 3 || qe.Max != 3 {
		t.Fatalf("a fourth job of s1: %v (%+v); want the store's quota, 3 of 3", err, qe)
	}
	if _, err := s.Submit(ctx, s1, job("A2"), "", now); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("a known task_no at the bound: %v; want ErrDuplicate", err)
	}
	if _, err := s.Task(ctx, "s1", "A4"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused job was stored: %v", err)
	}
	for _, no := range []string{"B1", "B2"} {
		if _, err := s.Submit(ctx, s2, job(no), "", now); err != nil {
			t.Fatalf("%s: %v", no, err)
		}
	}
	_, err = s.Submit(ctx, s2, job("B3"), "", now)
	if !errors.As(err, &qe) || !qe.Tenant || qe.ID != "acme" || qe.Jobs != 5 || qe.Max != 5 {
		t.Fatalf("a sixth job of acme: %v (%+v); want the tenant's quota, 5 of 5", err, qe)
	}
	if _, err := s.Submit(ctx, r1, job("A1"), "", now); err != nil {
		t.Fatalf("another tenant's job: %v", err)
	}
	s.Close()

	s = openQ()
	defer s.Close()
	later := now.Add(2 * time.Minute)
	if _, err := s.Submit(ctx, s1, job("A5"), "", later); !errors.As(err, &qe) || qe.Tenant || qe.Jobs != 3 {
		t.Fatalf("after a reopen: %v (%+v); want the store's quota counted from the records, 3", err, qe)
	}
	if _, err := s.Submit(ctx, s2, job("B4"), "", later); !errors.As(err, &qe) || !qe.Tenant || qe.Jobs != 5 {
		t.Fatalf("after a reopen: %v (%+v); want the tenant's quota, 5", err, qe)
	}
}

// BenchmarkCountRecords measures one count of a store's records (what a
// submit pays at most once a minute per store and per tenant) with 5,000
// records in the store and 5,000 in another.
func BenchmarkCountRecords(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: b.TempDir(), Node: "n1"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AddTenant(ctx, "acme", ""); err != nil {
		b.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0).UTC()
	for _, id := range []string{"s1", "s2"} {
		st, err := s.AddStore(ctx, "acme", id, "")
		if err != nil {
			b.Fatal(err)
		}
		for i := range 5000 {
			if _, err := s.Submit(ctx, st, job(fmt.Sprintf("C%d", i)), "", now); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		n, err := s.countRecords(ctx, "s1")
		if err != nil || n != 5000 {
			b.Fatalf("count %d, %v; want 5000", n, err)
		}
	}
}
