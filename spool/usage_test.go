package spool

import (
	"errors"
	"testing"
	"time"
)

// TestUsageGrowsToTheCap ensures Usage measures the spool against the size
// at which Accept refuses new work: it grows with accepted tasks and is at
// least 100% when Accept says full.
func TestUsageGrowsToTheCap(t *testing.T) {
	s, _ := openTest(t, Options{MaxSize: 2 << 20, Reserve: 512 << 10, Retention: time.Hour})
	before, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if before.Cap != 2<<20-512<<10 {
		t.Fatalf("cap %d, want MaxSize-Reserve", before.Cap)
	}
	if _, err := fillUntilFull(t, s, "U", 16<<10); !errors.Is(err, ErrFull) {
		t.Fatalf("fill: %v", err)
	}
	after, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if after.Live <= before.Live || after.Percent() < 100 {
		t.Errorf("usage before %+v (%d%%), after full %+v (%d%%)", before, before.Percent(), after, after.Percent())
	}
	if !after.DiskKnown || after.DiskFree == 0 {
		t.Errorf("disk free not measured: %+v", after)
	}
}

// TestUsageWithoutCap ensures a spool without a size cap reports 0%.
func TestUsageWithoutCap(t *testing.T) {
	s, _ := openTest(t, Options{})
	u, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.Cap != 0 || u.Percent() != 0 || u.Live <= 0 {
		t.Errorf("usage %+v percent %d", u, u.Percent())
	}
}
